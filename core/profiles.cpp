#include "core/profiles.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "base/text.hpp"
#include "config/filters.hpp"

namespace mcpmux {
namespace {

// The first sentence of a server's instructions, for the search tool's description.
std::string first_sentence(std::string_view text, std::size_t cap) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      if (!out.empty()) break;
      continue;
    }
    out += c;
    if (c == '.' && out.size() > 20) break;
  }
  return clip(out, cap);
}

// Code mode's tool (docs/code-mode.md): how a program calls the tools, and where it learns
// their types.
json::object run_code_tool(const profile_set::view& v) {
  const bool searching = !v.search_tool.empty() && v.searching;
  std::string desc =
      "Runs a JavaScript program that calls this gateway's tools and returns only what "
      "matters: one call of this tool instead of many round trips. The program is the body of "
      "an async function. Every tool is an async function taking its arguments object: `await "
      "tools.SERVER.TOOL({...})` or `await tools[\"SERVER__TOOL\"]({...})`. A result with "
      "structured content arrives as that object, otherwise as its text; a tool error throws. "
      "Calls may run together (Promise.all). The answer is what console.log printed and the "
      "returned value (a string as it is, anything else as JSON); nothing else. ";
  desc += searching ? fmt::format(
                          "Learn the tools' TypeScript declarations first with {} "
                          "{{\"query\": \"...\", \"format\": \"typescript\"}}. ",
                          v.search_tool)
                    : std::string(
                          "The tools are the ones listed beside this one, with the same "
                          "arguments. ");
  desc += fmt::format(
      "Limits: {:g} s, {} tool calls and 64 KiB of output per program; no files, network or "
      "modules.",
      static_cast<double>(v.settings.code_timeout.count()) / 1000, v.settings.code_max_calls);
  json::object schema{
      {"type", "object"},
      {"properties",
       json::object{{"code", json::object{{"type", "string"},
                                          {"description",
                                           "The program: statements of an async function body, "
                                           "ending with `return` of what the answer needs"}}}}},
      {"required", json::array{"code"}}};
  return json::object{{"name", "run_code"},
                      {"description", std::move(desc)},
                      {"inputSchema", std::move(schema)},
                      {"annotations", json::object{{"openWorldHint", true}}}};
}

// The tools of search mode, for one profile: what is behind them is in the description, so
// that an agent knows when searching is worth it. Search and call, or (exposure = "code")
// search and run_code; `code = true` adds run_code to search and call.
std::vector<json::object> search_tools(const profile_set::view& v,
                                       const std::vector<server_note>& notes) {
  // The servers the profile shows, each with a few of its tools' names.
  std::map<std::string, std::vector<std::string_view>> by_server;
  for (const auto& [name, r] : v.shown.routes(collection::tools)) {
    auto& names = by_server[r.server];
    if (names.size() < 6) names.push_back(r.original);
  }
  const std::size_t total = v.shown.size(collection::tools);
  const bool code_only = v.settings.exposure == exposure_mode::code;
  std::string desc = fmt::format(
      "Finds the tools that fit a task among the {} tools of the servers behind this gateway, "
      "and returns the best matches with their full input schemas{}; then call one with {}. "
      "Search whenever a task may need one of these servers:",
      total,
      v.settings.code ? " (format \"typescript\": as TypeScript declarations for a program)" : "",
      code_only ? v.code_tool + " (in a program)" : v.call_tool);
  json::array servers;
  for (const auto& [server, names] : by_server) {
    servers.push_back(json::string(server));
    desc += "\n- " + server;
    for (const auto& n : notes)
      if (n.name == server && !n.instructions.empty())
        desc += ": " + first_sentence(n.instructions, 160);
    desc += " (tools such as ";
    for (std::size_t i = 0; i < names.size(); ++i) desc += (i ? ", " : "") + std::string(names[i]);
    desc += ")";
    if (desc.size() > 6000) {
      desc += "\n- …";
      break;
    }
  }
  json::object query_schema{
      {"type", "object"},
      {"properties",
       json::object{
           {"query", json::object{{"type", "string"},
                                  {"description", "What the tool should do, in a few words"}}},
           {"server", json::object{{"type", "string"},
                                   {"description", "Only this server's tools"},
                                   {"enum", std::move(servers)}}},
           {"limit", json::object{{"type", "integer"},
                                  {"minimum", 1},
                                  {"maximum", 50},
                                  {"default", 5},
                                  {"description", "How many tools to return"}}}}},
      {"required", json::array{"query"}}};
  if (v.settings.code)
    query_schema["properties"].as_object()["format"] = json::object{
        {"type", "string"},
        {"enum", json::array{"json", "typescript"}},
        {"default", "json"},
        {"description",
         "json: the tools as listed; typescript: declarations of `tools` for a program of " +
             v.code_tool}};
  json::object call_schema{
      {"type", "object"},
      {"properties",
       json::object{
           {"name", json::object{{"type", "string"},
                                 {"description", "The tool's name, as the search gave it"}}},
           {"arguments",
            json::object{{"type", "object"}, {"description", "The tool's arguments"}}}}},
      {"required", json::array{"name"}}};
  std::vector<json::object> out{
      json::object{{"name", "search_tools"},
                   {"description", std::move(desc)},
                   {"inputSchema", std::move(query_schema)},
                   {"annotations", json::object{{"readOnlyHint", true}}}}};
  if (!code_only)
    out.push_back(json::object{
        {"name", "call_tool"},
        {"description", fmt::format("Calls a tool that {} found, by its name, with its "
                                    "arguments; the answer is the tool's own.",
                                    v.search_tool)},
        {"inputSchema", std::move(call_schema)}});
  if (v.settings.code) out.push_back(run_code_tool(v));
  return out;
}

// What of a profile's settings matches nothing in the whole catalogue: each pattern that shows
// (a `!` pattern hides, and hiding nothing is fine) and each description override.
std::vector<std::string> unmatched_settings(const profile_config& s, const catalogue& whole) {
  std::vector<std::string> out;
  const auto any = [&](collection c, std::string_view pattern) {
    for (const auto& [name, r] : whole.routes(c))
      if (glob_match(pattern, name)) return true;
    return false;
  };
  const auto check = [&](std::string_view key, const std::vector<std::string>& patterns,
                         std::initializer_list<collection> in) {
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      // An annotation word selects by what tools say, not by name: nothing to look up here.
      if (patterns[i].front() == '!' || patterns[i].front() == '@') continue;
      if (std::none_of(in.begin(), in.end(), [&](collection c) { return any(c, patterns[i]); }))
        out.push_back(fmt::format("{}[{}] \"{}\"", key, i, patterns[i]));
    }
  };
  check("tools", s.tools, {collection::tools});
  check("prompts", s.prompts, {collection::prompts});
  check("resources", s.resources, {collection::resources, collection::resource_templates});
  for (const auto& [tool, text] : s.descriptions)
    if (!whole.find(collection::tools, tool)) out.push_back(fmt::format("descriptions.{}", tool));
  return out;
}

}  // namespace

bool identity_matches(const client_identity& who, std::string_view pattern) {
  if (who.agent_program.empty() && who.agent_args.empty()) return false;
  std::string line;
  for (const auto& a : who.agent_args) {
    if (!line.empty()) line += ' ';
    line += a;
  }
  return glob_match(pattern, base_name(who.agent_program)) ||
         glob_match(pattern, who.agent_program) ||
         (!who.agent_args.empty() && glob_match(pattern, base_name(who.agent_args.front()))) ||
         glob_match(pattern, line);
}

std::vector<std::string> profile_set::configure(const std::vector<profile_config>& profiles) {
  std::vector<std::string> touched;
  std::map<std::string, std::unique_ptr<view>, std::less<>> next;
  for (const auto& p : profiles) {
    auto it = views_.find(p.name);
    if (it != views_.end() && it->second->settings == p) {
      next.emplace(p.name, std::move(it->second));
      continue;
    }
    auto v = std::make_unique<view>();
    v->settings = p;
    next.emplace(p.name, std::move(v));
    touched.push_back(p.name);
  }
  for (const auto& [name, v] : views_)
    if (v && !next.count(name)) touched.push_back(name);
  views_ = std::move(next);
  const bool may_search = std::any_of(views_.begin(), views_.end(), [](const auto& kv) {
    return kv.second->settings.exposure != exposure_mode::all;
  });
  if (may_search && !index_) index_ = std::make_unique<search_index>();
  if (!may_search) index_.reset();
  return touched;
}

std::map<std::string, profile_set::changes> profile_set::rebuild(
    const std::vector<catalogue_source>& sources, const naming_rules& rules,
    const std::vector<server_note>& notes, const catalogue& whole) {
  std::map<std::string, changes> out;
  if (index_) {
    // A searching profile's own descriptions are what its searches match.
    std::vector<search_index::variant> variants;
    for (const auto& [name, v] : views_)
      if (v->settings.exposure != exposure_mode::all)
        for (const auto& [tool, description] : v->settings.descriptions)
          variants.push_back({name + "/" + tool, tool, description});
    index_->sync(whole, variants);
  }
  std::vector<std::string> ignored;  // collisions are reported by the whole catalogue's build
  for (auto& [name, v] : views_) {
    const auto& s = v->settings;
    catalogue_view rules_of{
        &s.servers, {&s.tools, &s.prompts, &s.resources, &s.resources}, &s.descriptions};
    auto changed = v->shown.rebuild(sources, rules, ignored, &rules_of);
    v->estimated_tokens = v->shown.joined(collection::tools).size() / 4;
    v->unmatched = unmatched_settings(s, whole);
    const bool was_searching = v->searching;
    v->searching =
        s.exposure == exposure_mode::search || s.exposure == exposure_mode::code ||
        (s.exposure == exposure_mode::auto_select && v->estimated_tokens > s.tool_budget_tokens);
    v->search_tool = "mcpmux" + rules.separator + "search_tools";
    v->call_tool = "mcpmux" + rules.separator + "call_tool";
    v->code_tool = s.code ? "mcpmux" + rules.separator + "run_code" : std::string();
    // A listing of every tool gets run_code at its end (session::serve_list), named as here.
    v->code_item.clear();
    if (s.code && !v->searching) {
      auto def = run_code_tool(*v);
      def["name"] = v->code_tool;
      v->code_item = json::serialize(def);
    }
    auto& tools_changed = changed[static_cast<std::size_t>(collection::tools)];
    if (v->searching) {
      // The listing changes with the servers it describes, not with every tool.
      auto defs = search_tools(*v, notes);
      const std::vector<json::object> none;
      catalogue_source self{"mcpmux", "mcpmux", {&defs, &none, &none, &none}, {}};
      tools_changed = v->search_listing.rebuild(
                          {self}, rules, ignored)[static_cast<std::size_t>(collection::tools)] ||
                      !was_searching;
    } else if (was_searching) {
      tools_changed = true;
    }
    out.emplace(name, changed);
  }
  return out;
}

const profile_set::view* profile_set::find(std::string_view name) const {
  auto it = views_.find(name);
  return it == views_.end() ? nullptr : it->second.get();
}

std::string profile_set::profile_for(const client_identity& who) const {
  if (!who.requested_profile.empty()) return who.requested_profile;
  for (const auto& [name, v] : views_)
    for (const auto& pattern : v->settings.match)
      if (identity_matches(who, pattern)) return name;
  return views_.count("default") ? "default" : "";
}

json::array profile_set::search(const view& profile, std::string_view query,
                                std::string_view server, std::size_t limit) const {
  json::array out;
  if (!index_) return out;
  // A tool the profile describes itself is found by its variant "<profile>/<name>" only.
  const auto& overrides = profile.settings.descriptions;
  const auto exposed = [&](std::string_view key) -> std::string_view {
    const auto slash = key.find('/');
    if (slash == std::string_view::npos)
      return overrides.count(std::string(key)) ? std::string_view() : key;
    return key.substr(0, slash) == profile.settings.name ? key.substr(slash + 1)
                                                         : std::string_view();
  };
  const auto hits = index_->search(query, limit, [&](std::string_view key) {
    const auto name = exposed(key);
    const auto* r = name.empty() ? nullptr : profile.shown.find(collection::tools, name);
    return r && (server.empty() || r->server == server);
  });
  for (const auto& h : hits) {
    const auto name = exposed(h.name);
    boost::system::error_code ec;
    auto item = json::parse(profile.shown.item(collection::tools, name), ec);
    if (ec || !item.is_object()) continue;
    auto& o = item.get_object();
    o["server"] = profile.shown.find(collection::tools, name)->server;
    o["score"] = std::round(h.score * 1000) / 1000;
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace mcpmux
