// Private to the config loader: the validator that walks a parsed TOML tree, whose jobs are
// spread over
//   config.cpp          the entry points, loading and `daemon.include`, the top level and [daemon]
//   config_servers.cpp  the [servers.NAME] tables
//   config_profiles.cpp the [profiles.NAME] tables
//   config_values.cpp   typed readers of values, ${VAR} and ~ expansion, key paths, did-you-mean
// Only config/ includes it.
#pragma once

#include <toml++/toml.h>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/expand.hpp"
#include "config/secrets.hpp"

namespace mcpmux::config_validation {

// Timeouts are added to steady_clock::now() by the transports; capping them keeps that sum far
// from overflow while still allowing ~24.8 days, which is "forever" for a request.
inline constexpr std::int64_t max_timeout_ms = 2147483647;
// `max_result_bytes` above a gigabyte is no cap a context window could use.
inline constexpr std::int64_t max_result_bytes_limit = std::int64_t{1} << 30;

/// The keys config_sandbox.cpp reads (stdio servers only).
inline bool is_sandbox_key(std::string_view k) {
  return k == "sandbox" || k == "network" || k == "allow_read" || k == "allow_write" ||
         k == "memory_max" || k == "cpu_max" || k == "tasks_max" || k == "files_max";
}

// For messages: a key path as the user writes it, the line of a node, what a node is.
std::string join_key(std::string_view parent, std::string_view child);
int line_of(const toml::node& n);
std::string_view describe(const toml::node& n);
// Typo hints: the candidate `word` most likely meant, and "unknown WHAT; did you mean ...".
std::optional<std::string_view> closest(std::string_view word,
                                        std::span<const std::string_view> candidates);
std::string unknown_message(std::string_view what, std::string_view word,
                            std::span<const std::string_view> candidates);
inline std::optional<std::string_view> closest(std::string_view word,
                                               std::initializer_list<std::string_view> candidates) {
  return closest(word, std::span(candidates.begin(), candidates.size()));
}
inline std::string unknown_message(std::string_view what, std::string_view word,
                                   std::initializer_list<std::string_view> candidates) {
  return unknown_message(what, word, std::span(candidates.begin(), candidates.size()));
}

// Walks the parsed TOML tree once, filling a config and collecting every problem on the way.
class validator {
 public:
  validator(std::string_view file, env_lookup lookup) : file_(file), lookup_(lookup) {}

  config_result run(const toml::table& root);

 private:
  // config_values.cpp: errors, typed values, expansion
  void fail(int line, std::string key, std::string message);
  void fail(const toml::node& n, std::string key, std::string message);
  void type_error(const toml::node& n, std::string key, std::string_view expected);
  std::optional<std::string> get_string(const toml::node& n, const std::string& key);
  std::optional<std::int64_t> get_integer(const toml::node& n, const std::string& key,
                                          std::int64_t lo, std::int64_t hi);
  std::optional<bool> get_bool(const toml::node& n, const std::string& key);
  /// A string that must be one of `choices`: its index, or an error naming them (with a
  /// "did you mean" hint).
  std::optional<std::size_t> get_choice(const toml::node& n, const std::string& key,
                                        std::initializer_list<std::string_view> choices);
  /// `redact_results`: "patterns", "known" or "off".
  std::optional<mcp::redaction_mode> get_redaction_mode(const toml::node& n,
                                                        const std::string& key);
  std::optional<std::string> expand(std::string_view raw, const toml::node& n,
                                    const std::string& key);
  std::optional<std::string> expanded_string(const toml::node& n, const std::string& key);
  std::optional<std::string> expand_home(std::string s, const toml::node& n,
                                         const std::string& key);
  std::optional<std::string> absolute_path(const toml::node& n, const std::string& key,
                                           bool expand_vars);
  /// Calls `f(value, element, "key[i]")` for each string of an array, ${VAR} expanded; a
  /// non-array or a non-string element is an error.
  template <class F>
  void each_string(const toml::node& n, const std::string& key, F&& f) {
    const auto* a = n.as_array();
    if (!a) return type_error(n, key, "an array of strings");
    for (std::size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      const std::string sub = key + "[" + std::to_string(i) + "]";
      if (auto s = expanded_string(e, sub)) f(std::move(*s), e, sub);
    }
  }

  // config.cpp: [daemon]
  void parse_daemon(const toml::node& node, daemon_config& d);
  std::vector<std::string> include_paths(const toml::node& n, const std::string& key);

  // config_servers.cpp: [servers.NAME]
  oauth_settings oauth(const toml::node& n, const std::string& key);
  void parse_servers(const toml::node& node, std::vector<server_config>& out);
  std::vector<std::string> string_array(const toml::node& n, const std::string& key);
  enum class table_kind { env, headers, tokens };
  std::map<std::string, std::string> string_table(const toml::node& n, const std::string& key,
                                                  table_kind kind);
  std::vector<std::string> roots(const toml::node& n, const std::string& key);
  server_config parse_server(const std::string& name, const std::string& base,
                             const toml::table& t);

  // config_sandbox.cpp: the sandbox keys of a stdio server
  std::optional<sandbox_mode> sandbox(const toml::node& n, const std::string& key);
  std::optional<std::uint64_t> count_limit(const toml::node& n, const std::string& key,
                                           std::int64_t least, std::int64_t most);
  /// Reads `kn` into `s` when it is one of the sandbox keys; false when it is not one.
  bool sandbox_key(std::string_view kn, const toml::node& v, const std::string& key,
                   sandbox_settings& s);

  // config_profiles.cpp: [profiles.NAME]
  void parse_profiles(const toml::node& node, std::vector<profile_config>& out);
  profile_config parse_profile(const std::string& name, const std::string& base,
                               const toml::table& t);
  /// What a list of filter patterns selects: tools may also be selected by their annotations.
  enum class filter_of { names, tools };
  /// A list of filter patterns (config/filters.hpp); an unknown `@word` is an error.
  std::vector<std::string> patterns(const toml::node& n, const std::string& key,
                                    filter_of what = filter_of::names);
  /// `max_calls_per_minute`, `max_concurrent_calls`: a whole number, 0 (no limit) or more.
  std::optional<std::uint32_t> call_limit(const toml::node& n, const std::string& key);
  /// A `confirm` list ([daemon] or a profile): `destructive` and globs over exposed tool names.
  std::vector<std::string> confirm_list(const toml::node& n, const std::string& key);

  std::string file_;
  env_lookup lookup_;
  /// ${secret:NAME}: the secrets file, read once per load when a value names a secret.
  std::optional<secrets_file> secrets_file_;
  bool service_unavailable_ = false;  ///< the Secret Service did not answer during this load
  secret_resolver secrets_ = [this](std::string_view name, std::string& error) {
    return resolve_secret(name, error);
  };
  std::optional<std::string> resolve_secret(std::string_view name, std::string& error);
  std::vector<config_error> errors_;
  std::vector<std::string> warnings_;
};

}  // namespace mcpmux::config_validation
