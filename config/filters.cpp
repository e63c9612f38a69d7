#include "config/filters.hpp"

namespace mcpmux {

bool glob_match(std::string_view p, std::string_view t) {
  // Iterative, with one backtrack point: linear for the patterns people write.
  std::size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool shown_by(const std::vector<std::string>& rules, std::string_view name) {
  if (rules.empty()) return true;
  bool shown = false;
  for (const auto& r : rules) {
    const bool hide = !r.empty() && r.front() == '!';
    if (glob_match(hide ? std::string_view(r).substr(1) : std::string_view(r), name)) shown = !hide;
  }
  return shown;
}

}  // namespace mcpmux
