// The config validator's shared pieces: typed readers of TOML values that record what is wrong,
// ${VAR} and ~ expansion of values, key paths as the user writes them, did-you-mean suggestions.
#include "config/config_detail.hpp"
#include "config/expand.hpp"
#include "config/names.hpp"
#include "config/secret_service.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

namespace mcpmux::config_validation {
namespace {

using names::is_name;

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

// Dotted key path as the user would write it; keys that are not bare TOML keys are quoted so the
// path stays unambiguous (`servers.x.headers."X Y"`).
std::string join_key(std::string_view parent, std::string_view child) {
  std::string k =
      !child.empty() && is_name(child) ? std::string(child) : fmt::format("\"{}\"", child);
  return parent.empty() ? k : fmt::format("{}.{}", parent, k);
}

int line_of(const toml::node& n) {
  return static_cast<int>(n.source().begin.line);
}

std::string_view describe(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// The candidate a typo most likely meant: a small edit distance, or a truncation such as
// `timeout` for `timeout_ms`.
std::optional<std::string_view> closest(std::string_view word,
                                        std::span<const std::string_view> candidates) {
  std::optional<std::string_view> best;
  std::size_t best_score = 3;
  for (std::string_view c : candidates) {
    std::size_t score = edit_distance(word, c);
    const bool truncated = word.size() >= 4 && c.starts_with(word);
    const bool extended = c.size() >= 4 && word.starts_with(c);  // `warning` for `warn`
    if (truncated || extended) score = std::min<std::size_t>(score, 2);
    if (score < best_score) best_score = score, best = c;
  }
  return best;
}

std::string unknown_message(std::string_view what, std::string_view word,
                            std::span<const std::string_view> candidates) {
  if (auto c = closest(word, candidates))
    return fmt::format("unknown {}; did you mean \"{}\"?", what, *c);
  return fmt::format("unknown {}", what);
}

void validator::fail(int line, std::string key, std::string message) {
  errors_.push_back(config_error{file_, line, std::move(key), std::move(message)});
}

void validator::fail(const toml::node& n, std::string key, std::string message) {
  fail(line_of(n), std::move(key), std::move(message));
}

void validator::type_error(const toml::node& n, std::string key, std::string_view expected) {
  fail(n, std::move(key), fmt::format("expected {}, got {}", expected, describe(n)));
}

std::optional<std::string> validator::get_string(const toml::node& n, const std::string& key) {
  if (const auto* s = n.as_string()) return s->get();
  type_error(n, key, "a string");
  return std::nullopt;
}

std::optional<mcp::redaction_mode> validator::get_redaction_mode(const toml::node& n,
                                                                 const std::string& key) {
  constexpr mcp::redaction_mode modes[] = {mcp::redaction_mode::patterns,
                                           mcp::redaction_mode::known, mcp::redaction_mode::off};
  if (auto i = get_choice(n, key, {"patterns", "known", "off"})) return modes[*i];
  return std::nullopt;
}

std::optional<std::size_t> validator::get_choice(const toml::node& n, const std::string& key,
                                                 std::initializer_list<std::string_view> choices) {
  auto s = get_string(n, key);
  if (!s) return std::nullopt;
  std::size_t i = 0;
  for (auto c : choices) {
    if (*s == c) return i;
    ++i;
  }
  std::string list;
  i = 0;
  for (auto c : choices) {
    list += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
    list += fmt::format("\"{}\"", c);
    ++i;
  }
  auto near = closest(*s, choices);
  fail(n, key,
       fmt::format("must be {} (got \"{}\"){}", list, *s,
                   near ? fmt::format("; did you mean \"{}\"?", *near) : ""));
  return std::nullopt;
}

std::optional<std::int64_t> validator::get_integer(const toml::node& n, const std::string& key,
                                                   std::int64_t lo, std::int64_t hi) {
  const auto* i = n.as_integer();
  if (!i) {
    type_error(n, key, "an integer");
    return std::nullopt;
  }
  const std::int64_t v = i->get();
  if (v < lo || v > hi) {
    // Keys whose upper bound is only an overflow guard read better as a plain minimum.
    const bool open_ended = hi >= max_timeout_ms;
    fail(n, key,
         v < lo && open_ended ? fmt::format("must be >= {} (got {})", lo, v)
                              : fmt::format("must be between {} and {} (got {})", lo, hi, v));
    return std::nullopt;
  }
  return v;
}

std::optional<bool> validator::get_bool(const toml::node& n, const std::string& key) {
  if (const auto* b = n.as_boolean()) return b->get();
  type_error(n, key, "a boolean");
  return std::nullopt;
}

// The Secret Service first (when a session bus is there), then the secrets file.
std::optional<std::string> validator::resolve_secret(std::string_view name, std::string& error) {
  if (!service_unavailable_ && secret_service_wanted()) {
    secret_service_result status;
    if (auto value = secret_service_lookup(name, status)) return value;
    if (!status.available) {
      // Asked once per load: a missing service is not asked again for each secret.
      service_unavailable_ = true;
      warnings_.push_back(status.error + "; ${secret:NAME} is read from " + secrets_path());
    }
  }
  if (!secrets_file_) secrets_file_ = read_secrets(secrets_path());
  if (!secrets_file_->error.empty()) {
    error = secrets_file_->error;
    return std::nullopt;
  }
  auto it = secrets_file_->values.find(std::string(name));
  if (it == secrets_file_->values.end()) {
    error = fmt::format(
        "no secret named \"{}\" in {}{} (set it with: mcpmux secret set {})", name,
        secret_service_wanted() && !service_unavailable_ ? "the Secret Service or " : "",
        secrets_path(), name);
    return std::nullopt;
  }
  return it->second;
}

// ${VAR} expansion of one value, turning syntax problems into errors and unset variables into
// warnings that name the key.
std::optional<std::string> validator::expand(std::string_view raw, const toml::node& n,
                                             const std::string& key) {
  std::string out, error;
  std::vector<std::string> undefined;
  expand_into(raw, lookup_, out, undefined, &error, 8, &secrets_);
  if (!error.empty()) {
    fail(n, key, std::move(error));
    return std::nullopt;
  }
  for (const auto& var : undefined)
    warnings_.push_back(fmt::format("{}: ${{{}}} is not set; using \"\"", key, var));
  return out;
}

std::optional<std::string> validator::expanded_string(const toml::node& n, const std::string& key) {
  auto s = get_string(n, key);
  if (!s) return std::nullopt;
  return expand(*s, n, key);
}

// `~` / `~/...` → $HOME (through the lookup so tests control it).
std::optional<std::string> validator::expand_home(std::string s, const toml::node& n,
                                                  const std::string& key) {
  if (s != "~" && !s.starts_with("~/")) return s;
  auto home = lookup_("HOME");
  if (!home || home->empty()) {
    fail(n, key, "starts with ~ but HOME is not set");
    return std::nullopt;
  }
  return *home + s.substr(1);
}

std::optional<std::string> validator::absolute_path(const toml::node& n, const std::string& key,
                                                    bool expand_vars) {
  auto s = expand_vars ? expanded_string(n, key) : get_string(n, key);
  if (!s) return std::nullopt;
  s = expand_home(std::move(*s), n, key);
  if (!s) return std::nullopt;
  if (s->empty() || s->front() != '/') {
    fail(n, key, fmt::format("must be an absolute path or start with ~/ (got \"{}\")", *s));
    return std::nullopt;
  }
  return s;
}

}  // namespace mcpmux::config_validation
