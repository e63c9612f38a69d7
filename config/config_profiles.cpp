// Validation of the `[profiles.NAME]` tables: which servers and names a kind of client sees, how
// (every tool, or search), and how a socket client is matched to it.
#include "config/config_detail.hpp"
#include "config/filters.hpp"
#include "config/names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace mcpmux::config_validation {
namespace {

std::string unknown_annotation(const std::string& word) {
  std::string known;
  for (auto w : annotation_words) known += (known.empty() ? "" : ", ") + std::string(w);
  const auto near = closest(word, annotation_words);
  return fmt::format("unknown tool annotation \"{}\" (known: {}){}", word, known,
                     near ? fmt::format("; did you mean \"{}\"?", *near) : "");
}

}  // namespace

std::vector<std::string> validator::patterns(const toml::node& n, const std::string& key,
                                             filter_of what) {
  std::vector<std::string> out;
  each_string(n, key, [&](std::string&& s, const toml::node& e, const std::string& sub) {
    const std::string_view rule =
        !s.empty() && s.front() == '!' ? std::string_view(s).substr(1) : std::string_view(s);
    if (rule.empty())
      fail(e, sub, "a pattern must not be empty (\"*\" shows all, \"!x*\" hides x…)");
    else if (rule.front() != '@')
      out.push_back(std::move(s));
    else if (what != filter_of::tools)
      fail(e, sub,
           fmt::format("\"{}\": an @annotation selects tools, so it belongs in a tools list only",
                       rule));
    else if (!annotation_filter(rule.substr(1)))
      fail(e, sub, unknown_annotation(std::string(rule)));
    else
      out.push_back(std::move(s));
  });
  return out;
}

std::vector<std::string> validator::confirm_list(const toml::node& n, const std::string& key) {
  std::vector<std::string> out;
  each_string(n, key, [&](std::string s, const toml::node& e, const std::string& sub) {
    if (auto problem = confirm_entry_problem(s))
      fail(e, sub, std::move(*problem));
    else
      out.push_back(std::move(s));
  });
  return out;
}

std::optional<std::uint32_t> validator::call_limit(const toml::node& n, const std::string& key) {
  // A million a minute is far beyond any server; the cap only keeps the window's memory bounded.
  if (auto i = get_integer(n, key, 0, 1000000)) return static_cast<std::uint32_t>(*i);
  return std::nullopt;
}

void validator::parse_profiles(const toml::node& node, std::vector<profile_config>& out) {
  const auto* t = node.as_table();
  if (!t) return type_error(node, "profiles", "a table of profile tables");
  for (auto&& [k, v] : *t) {
    const std::string name(k.str());
    const std::string key = join_key("profiles", name);
    if (name.empty() || name.size() > 64 || !names::is_name(name))
      fail(v, key, "profile name must be 1 to 64 characters of [A-Za-z0-9_-]");
    if (const auto* pt = v.as_table())
      out.push_back(parse_profile(name, key, *pt));
    else
      type_error(v, key, "a table");
  }
  std::sort(out.begin(), out.end(),
            [](const profile_config& a, const profile_config& b) { return a.name < b.name; });
}

profile_config validator::parse_profile(const std::string& name, const std::string& base,
                                        const toml::table& t) {
  profile_config p;
  p.name = name;
  p.line = line_of(t);
  for (auto&& [k, v] : t) {
    const std::string_view kn = k.str();
    const std::string key = join_key(base, kn);
    if (kn == "servers") {
      p.servers = patterns(v, key);
    } else if (kn == "tools") {
      p.tools = patterns(v, key, filter_of::tools);
    } else if (kn == "prompts") {
      p.prompts = patterns(v, key);
    } else if (kn == "resources") {
      p.resources = patterns(v, key);
    } else if (kn == "match") {
      p.match = patterns(v, key);
    } else if (kn == "exposure") {
      if (auto i = get_choice(v, key, {"all", "search", "auto", "code"}))
        p.exposure = std::array{exposure_mode::all, exposure_mode::search,
                                exposure_mode::auto_select, exposure_mode::code}[*i];
    } else if (kn == "tool_budget_tokens") {
      if (auto i = get_integer(v, key, 1, 100000000))
        p.tool_budget_tokens = static_cast<std::size_t>(*i);
    } else if (kn == "redact_results") {
      p.redact_results = get_redaction_mode(v, key);
    } else if (kn == "confirm") {
      p.confirm = confirm_list(v, key);
    } else if (kn == "max_calls_per_minute") {
      if (auto i = call_limit(v, key)) p.max_calls_per_minute = *i;
    } else if (kn == "max_concurrent_calls") {
      if (auto i = call_limit(v, key)) p.max_concurrent_calls = *i;
    } else if (kn == "max_result_bytes") {
      if (auto i = get_integer(v, key, 0, max_result_bytes_limit))
        p.max_result_bytes = static_cast<std::size_t>(*i);
    } else if (kn == "code") {
      if (auto b = get_bool(v, key)) p.code = *b;
    } else if (kn == "code_timeout_ms") {
      if (auto i = get_integer(v, key, 100, 600000)) p.code_timeout = std::chrono::milliseconds(*i);
    } else if (kn == "code_max_calls") {
      if (auto i = get_integer(v, key, 1, 10000)) p.code_max_calls = static_cast<std::uint32_t>(*i);
    } else if (kn == "list_found_tools") {
      if (auto b = get_bool(v, key)) p.list_found_tools = *b;
    } else if (kn == "descriptions") {
      const auto* dt = v.as_table();
      if (!dt) {
        type_error(v, key, "a table of tool name = \"description\"");
        continue;
      }
      for (auto&& [tk, tv] : *dt) {
        const std::string sub = join_key(key, tk.str());
        if (auto d = expanded_string(tv, sub)) p.descriptions.emplace(std::string(tk.str()), *d);
      }
    } else {
      fail(v, key, unknown_message("key", kn, config_keys("profile")));
    }
  }
  // Code exposure is code mode's own listing: its programs are how the tools are called.
  if (p.exposure == exposure_mode::code) p.code = true;
  return p;
}

}  // namespace mcpmux::config_validation

namespace mcpmux {

std::string_view to_string(exposure_mode m) {
  switch (m) {
    case exposure_mode::all:
      return "all";
    case exposure_mode::search:
      return "search";
    case exposure_mode::auto_select:
      return "auto";
    case exposure_mode::code:
      return "code";
  }
  return "all";
}

std::vector<config_error> check_profiles(const config& cfg) {
  std::vector<config_error> errors;
  for (const profile_config& p : cfg.profiles) {
    for (std::size_t i = 0; i < p.servers.size(); ++i) {
      std::string_view pattern = p.servers[i];
      if (pattern.front() == '!') pattern.remove_prefix(1);
      const bool any =
          std::any_of(cfg.servers.begin(), cfg.servers.end(),
                      [&](const server_config& s) { return glob_match(pattern, s.name); });
      if (any) continue;
      const bool glob = pattern.find_first_of("*?") != std::string_view::npos;
      errors.push_back(
          config_error{cfg.source, p.line, fmt::format("profiles.{}.servers[{}]", p.name, i),
                       glob ? fmt::format("\"{}\" matches no configured server", p.servers[i])
                            : fmt::format("no server is named \"{}\"", pattern)});
    }
  }
  return errors;
}

}  // namespace mcpmux
