// Tool naming: sanitising, deterministic shortening and collision resolution of exposed tool names.
#include "core/naming.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

namespace mcpmux {

namespace {

constexpr std::size_t hash_digits = 8;

bool allowed_char(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// `_` + the high 32 bits of fnv1a64(key) as 8 lowercase hex digits. The high half is used because
// FNV's low bits only ever see the low bits of the state and mix worse on short keys.
std::string hash_suffix(std::string_view key) {
  static constexpr char digits[] = "0123456789abcdef";
  const std::uint64_t h = fnv1a64(key);
  std::string out(hash_digits + 1, '_');
  for (std::size_t i = 0; i < hash_digits; ++i) {
    out[1 + i] = digits[(h >> (60 - 4 * i)) & 0xf];
  }
  return out;
}

std::size_t effective_max_len(std::size_t max_len) {
  return std::max(max_len, min_tool_name_len);
}

// `name` cut so that `suffix` fits within max_len, followed by `suffix`.
std::string with_suffix(std::string_view name, const std::string& suffix, std::size_t max_len) {
  const std::size_t head = std::min(name.size(), max_len - suffix.size());
  std::string out;
  out.reserve(head + suffix.size());
  out.append(name.substr(0, head));
  out.append(suffix);
  return out;
}

std::string identity_of(const naming_input& in) {
  std::string id;
  id.reserve(in.server.size() + 1 + in.original.size());
  id.append(in.server).append("/").append(in.original);
  return id;
}

// The name an input would get with no competitors: composed, sanitised, shortened. Built in one
// buffer because this runs for every tool on every catalogue rebuild.
std::string desired_name(const naming_input& in, const naming_rules& rules, std::size_t limit) {
  std::string name;
  name.reserve(in.prefix.size() + rules.separator.size() + in.original.size());
  if (!in.prefix.empty()) name.append(in.prefix).append(rules.separator);
  name.append(in.original);
  for (char& c : name) {
    if (!allowed_char(static_cast<unsigned char>(c))) c = '_';
  }
  if (name.empty()) name = "_";  // an empty tool name is not a usable MCP name
  if (name.size() > limit) return with_suffix(name, hash_suffix(identity_of(in)), limit);
  return name;
}

}  // namespace

std::uint64_t fnv1a64(std::string_view data) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string sanitize_tool_name(std::string_view in) {
  std::string out(in);
  for (char& c : out) {
    if (!allowed_char(static_cast<unsigned char>(c))) c = '_';
  }
  return out;
}

std::string shorten_tool_name(std::string_view name, std::string_view key, std::size_t max_len) {
  const std::size_t limit = effective_max_len(max_len);
  if (name.size() <= limit) return std::string(name);
  return with_suffix(name, hash_suffix(key), limit);
}

std::vector<naming_output> assign_tool_names(const std::vector<naming_input>& inputs,
                                             const naming_rules& rules,
                                             std::vector<naming_collision>* collisions) {
  const std::size_t n = inputs.size();
  const std::size_t limit = effective_max_len(rules.max_len);

  // The contract's processing order: (server, original); prefix and index only break ties between
  // inputs that are otherwise identical, so the outcome depends on the inputs as a set.
  const auto before = [&](std::size_t a, std::size_t b) {
    const naming_input& x = inputs[a];
    const naming_input& y = inputs[b];
    if (int c = x.server.compare(y.server); c != 0) return c < 0;
    if (int c = x.original.compare(y.original); c != 0) return c < 0;
    if (int c = x.prefix.compare(y.prefix); c != 0) return c < 0;
    return a < b;
  };

  std::vector<std::string> exposed(n);
  for (std::size_t i = 0; i < n; ++i) exposed[i] = desired_name(inputs[i], rules, limit);

  // Pass 1: every input by natural name, claimants of one name in processing order; the first of
  // each run keeps the name. One sort and no hash table: at 10,000 tools this runs on every
  // catalogue rebuild, the first of them between the daemon's start and its first tools/list.
  // Keys view `exposed`, whose entries stay unmodified until the end.
  std::vector<std::pair<std::string_view, std::size_t>> natural;
  natural.reserve(n);
  for (std::size_t i = 0; i < n; ++i) natural.emplace_back(exposed[i], i);
  std::sort(natural.begin(), natural.end(), [&](const auto& a, const auto& b) {
    if (int c = a.first.compare(b.first); c != 0) return c < 0;
    return before(a.second, b.second);
  });
  std::vector<std::size_t> losers;
  for (std::size_t k = 1; k < n; ++k)
    if (natural[k].first == natural[k - 1].first) losers.push_back(natural[k].second);
  const auto holder_of =
      [&](std::string_view name) -> const std::pair<std::string_view, std::size_t>* {
    auto it = std::lower_bound(natural.begin(), natural.end(), name,
                               [](const auto& e, std::string_view v) { return e.first < v; });
    return it != natural.end() && it->first == name ? &*it : nullptr;
  };

  std::vector<naming_output> out;
  out.reserve(n);
  if (losers.empty()) {  // the usual case: every natural name is unique and already in order
    for (const auto& [name, i] : natural) out.push_back(naming_output{i, std::move(exposed[i])});
    return out;
  }

  // Pass 2, in processing order: each loser gets a suffix hashed from its identity; re-hash with a
  // counter while taken. All natural names are settled first, so a rename never takes another
  // tool's natural name (a collision elsewhere renames nobody else).
  std::sort(losers.begin(), losers.end(), before);
  std::vector<std::string> renames;
  renames.reserve(losers.size());
  std::unordered_set<std::string_view> renamed;  // views `renames`, reserved so they never move
  for (std::size_t i : losers) {
    const std::string identity = identity_of(inputs[i]);
    std::string candidate;
    for (std::size_t counter = 0;; ++counter) {
      const std::string key = counter == 0 ? identity : identity + "#" + std::to_string(counter);
      candidate = with_suffix(exposed[i], hash_suffix(key), limit);
      if (!holder_of(candidate) && !renamed.contains(candidate)) break;
    }
    renames.push_back(std::move(candidate));
    renamed.insert(renames.back());
    if (collisions != nullptr) {
      const std::size_t winner = holder_of(exposed[i])->second;
      collisions->push_back(
          naming_collision{exposed[i], identity_of(inputs[winner]), identity, renames.back()});
    }
  }
  // Only now may the losers' entries change; `natural` is not used past this point.
  for (std::size_t k = 0; k < losers.size(); ++k) exposed[losers[k]] = std::move(renames[k]);

  std::vector<std::pair<std::string_view, std::size_t>> by_name;
  by_name.reserve(n);
  for (std::size_t i = 0; i < n; ++i) by_name.emplace_back(exposed[i], i);
  std::sort(by_name.begin(), by_name.end());
  for (const auto& [name, i] : by_name) out.push_back(naming_output{i, std::move(exposed[i])});
  return out;
}

}  // namespace mcpmux
