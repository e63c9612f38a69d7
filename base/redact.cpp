#include "base/redact.hpp"

#include <algorithm>
#include <vector>

namespace mcpmux {
namespace {

constexpr std::string_view replacement = "[redacted]";

// Longest first: a secret that contains another is replaced whole.
std::vector<std::string>& secrets() {
  static std::vector<std::string> s;
  return s;
}

std::uint64_t generation = 0;

}  // namespace

void add_secret(std::string_view value) {
  if (value.size() < min_secret_bytes) return;
  auto& s = secrets();
  if (std::find(s.begin(), s.end(), value) != s.end()) return;
  s.emplace_back(value);
  ++generation;
  std::stable_sort(s.begin(), s.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
}

bool redact_in_place(std::string& text) {
  bool changed = false;
  for (const auto& secret : secrets()) {
    for (std::size_t at = text.find(secret); at != std::string::npos;
         at = text.find(secret, at + replacement.size())) {
      text.replace(at, secret.size(), replacement);
      changed = true;
    }
  }
  return changed;
}

std::string redact(std::string_view text) {
  std::string out(text);
  redact_in_place(out);
  return out;
}

std::size_t secret_count() {
  return secrets().size();
}

const std::vector<std::string>& secret_values() {
  return secrets();
}

std::uint64_t secret_generation() {
  return generation;
}

}  // namespace mcpmux
