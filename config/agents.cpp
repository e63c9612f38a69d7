#include "config/agents.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>

#include "base/text.hpp"
#include "config/agents_codex.hpp"
#include "config/import.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux {
namespace {

std::string join_path(const std::string& dir, std::string_view rel) {
  if (dir.empty() || dir.back() == '/') return dir + std::string(rel);
  return dir + "/" + std::string(rel);
}

std::string parent_name(std::string_view p) {
  const auto slash = p.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return {};
  return std::string(base_name(p.substr(0, slash)));
}

std::string list_text(const agent_file& f,
                      const std::vector<std::pair<std::string, std::string>>& items,
                      const std::string& indent);

}  // namespace

bool runs_mcpmux(const boost::json::value& entry) {
  const auto* e = entry.if_object();
  if (!e) return false;
  const auto* args = e->if_contains("args");
  return base_name(string_member(*e, "command")) == "mcpmux" && args && args->is_array() &&
         !args->get_array().empty() && args->get_array()[0] == "connect";
}

std::vector<agent_file> known_agent_files(const std::string& home, const std::string& config_home,
                                          const std::string& cwd) {
  const std::vector<std::string> mcp{"mcpServers"};
  std::vector<agent_file> out{
      {"claude-desktop", "Claude Desktop",
       join_path(config_home, "Claude/claude_desktop_config.json"), mcp},
      {"claude-code", "Claude Code (user)", join_path(home, ".claude.json"), mcp,
       agent_shape::mcp_servers, false, true},
      {"cursor", "Cursor", join_path(home, ".cursor/mcp.json"), mcp},
      {"windsurf", "Windsurf", join_path(home, ".codeium/windsurf/mcp_config.json"), mcp},
      {"vscode",
       "VS Code (user)",
       join_path(config_home, "Code/User/mcp.json"),
       {"servers"},
       agent_shape::vscode},
      {"vscode-settings",
       "VS Code (user settings)",
       join_path(config_home, "Code/User/settings.json"),
       {"mcp", "servers"},
       agent_shape::vscode},
      {"gemini", "Gemini CLI", join_path(home, ".gemini/settings.json"), mcp},
      {"zed",
       "Zed",
       join_path(config_home, "zed/settings.json"),
       {"context_servers"},
       agent_shape::zed},
      {"codex",
       "Codex",
       join_path(home, ".codex/config.toml"),
       {"mcp_servers"},
       agent_shape::codex},
      {"claude-code-project", "Claude Code (project)", join_path(cwd, ".mcp.json"), mcp,
       agent_shape::mcp_servers, true},
      {"cursor-project", "Cursor (project)", join_path(cwd, ".cursor/mcp.json"), mcp,
       agent_shape::mcp_servers, true},
      {"vscode-workspace",
       "VS Code (workspace)",
       join_path(cwd, ".vscode/mcp.json"),
       {"servers"},
       agent_shape::vscode,
       true},
      {"codex-project",
       "Codex (project)",
       join_path(cwd, ".codex/config.toml"),
       {"mcp_servers"},
       agent_shape::codex,
       true},
      {"gemini-project", "Gemini CLI (project)", join_path(cwd, ".gemini/settings.json"), mcp,
       agent_shape::mcp_servers, true},
  };
  return out;
}

agent_file agent_file_for_path(const std::string& path) {
  agent_file f{"file", "a file", path, {"mcpServers"}};
  const auto name = base_name(path);
  const auto dir = parent_name(path);
  if ((dir == ".vscode" && name == "mcp.json") || (dir == "User" && name == "mcp.json")) {
    f = {"vscode", "VS Code", path, {"servers"}, agent_shape::vscode};
  } else if (dir == "User" && name == "settings.json") {
    f = {"vscode-settings", "VS Code settings", path, {"mcp", "servers"}, agent_shape::vscode};
  } else if (dir == "zed" && name == "settings.json") {
    f = {"zed", "Zed", path, {"context_servers"}, agent_shape::zed};
  } else if (name == ".claude.json") {
    f = {"claude-code", "Claude Code", path, {"mcpServers"}, agent_shape::mcp_servers, false, true};
  } else if (name.ends_with(".toml")) {
    f = {"codex", "Codex", path, {"mcp_servers"}, agent_shape::codex};
  }
  return f;
}

server_list locate_servers(std::string_view text, const agent_file& file) {
  server_list out;
  if (file.shape == agent_shape::codex) {
    auto found = codex::find_servers(text);
    out.error = std::move(found.error);
    out.span = found.span;
  } else {
    auto found = jsonc::find(text, file.keys);
    out.error = std::move(found.error);
    out.span = found.value;
  }
  if (!out.error.empty() || !out.span) return out;
  // Already adopted: an entry runs `mcpmux connect` (beside it, at most what could not be
  // carried over).
  std::vector<std::string> ignored;
  for (const auto& [name, entry] : list_entries(text, *out.span, file, ignored))
    if (runs_mcpmux(entry)) out.adopted = true;
  return out;
}

namespace {
boost::json::parse_options jsonc_options() {
  boost::json::parse_options opt;
  opt.allow_comments = true;
  opt.allow_trailing_commas = true;
  return opt;
}
}  // namespace

server_lists find_server_lists(std::string_view text, const agent_file& file) {
  server_lists out;
  auto own = locate_servers(text, file);
  if (!own.error.empty()) {
    out.error = std::move(own.error);
    return out;
  }
  if (own.span) out.lists.push_back(file);
  if (!file.local_scopes) return out;
  const auto projects = jsonc::find(text, {"projects"}).value;
  if (!projects) return out;
  boost::system::error_code ec;
  const auto v = boost::json::parse(text.substr(projects->begin, projects->end - projects->begin),
                                    ec, {}, jsonc_options());
  if (ec || !v.is_object()) return out;
  for (const auto& [path, project] : v.get_object()) {
    // Claude Code keeps an empty list in every project it has opened: nothing to adopt there.
    const auto* p = project.if_object();
    const auto* list = p ? p->if_contains("mcpServers") : nullptr;
    if (!list || !list->is_object() || list->get_object().empty()) continue;
    auto one = file;
    one.keys = {"projects", std::string(path), "mcpServers"};
    one.local_scopes = false;
    one.local_project = path;
    one.label = "Claude Code (local: " + one.local_project + ")";
    out.lists.push_back(std::move(one));
  }
  return out;
}

std::string project_profile_name(std::string_view project_path) {
  while (project_path.size() > 1 && project_path.back() == '/') project_path.remove_suffix(1);
  std::uint32_t hash = 2166136261u;  // FNV-1a: the same name at every adopt, on every machine
  for (unsigned char c : project_path) hash = (hash ^ c) * 16777619u;
  const auto dir = base_name(project_path);
  auto name = dir.empty() || dir == "/" ? std::string("root") : sanitize_server_name(dir);
  if (name.size() > 40) name.resize(40);
  return fmt::format("claude-{}-{:08x}", name, hash);
}

boost::json::object list_entries(std::string_view text, jsonc::span span, const agent_file& file,
                                 std::vector<std::string>& notes) {
  const auto list = text.substr(span.begin, span.end - span.begin);
  if (file.shape == agent_shape::codex) return codex::entries(list, notes);
  boost::system::error_code ec;
  auto v = boost::json::parse(list, ec, {}, jsonc_options());
  if (ec || !v.is_object()) return {};
  return std::move(v.as_object());
}

namespace {
// The arguments of the entry that runs mcpmux.
boost::json::array mcpmux_args(const std::string& profile, const std::string& socket) {
  boost::json::array args{"connect", "--spawn"};
  if (!profile.empty()) {
    args.emplace_back("--profile");
    args.emplace_back(profile);
  }
  if (!socket.empty()) {
    args.emplace_back("--socket");
    args.emplace_back(socket);
  }
  return args;
}

// The value after `flag` in an entry's args ("" without it).
std::string arg_after(const boost::json::value& entry, std::string_view flag) {
  const auto* args = entry.as_object().if_contains("args");
  if (!args || !args->is_array()) return {};
  const auto& a = args->get_array();
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i].is_string() && a[i].get_string() == flag && a[i + 1].is_string())
      return std::string(a[i + 1].get_string());
  return {};
}

// The mcpmux entry's own text (its value, or Codex's table).
std::string mcpmux_item(const agent_file& file, const std::string& mcpmux_path,
                        const std::string& profile, const std::string& indent,
                        const std::string& socket = {}) {
  auto args = mcpmux_args(profile, socket);
  std::string item;
  if (file.shape == agent_shape::codex) {
    item = codex::table("mcpmux", {{"command", mcpmux_path}, {"args", std::move(args)}});
  } else {
    const std::string in1 = indent + "  ", in2 = indent + "    ";
    item = "{\n";
    if (file.shape == agent_shape::vscode) item += in2 + "\"type\": \"stdio\",\n";
    if (file.shape == agent_shape::zed) item += in2 + "\"source\": \"custom\",\n";
    item += in2 + "\"command\": " + boost::json::serialize(boost::json::value(mcpmux_path)) + ",\n";
    item += in2 + "\"args\": " + boost::json::serialize(args) + "\n" + in1 + "}";
  }
  return item;
}
}  // namespace

std::string mcpmux_entry(const agent_file& file, const std::string& mcpmux_path,
                         const std::string& profile, const std::string& indent) {
  return list_text(file, {{"mcpmux", mcpmux_item(file, mcpmux_path, profile, indent)}}, indent);
}

namespace {

std::string_view text_of(std::string_view text, jsonc::span s) {
  return text.substr(s.begin, s.end - s.begin);
}

// The client's servers, each imported on its own (as an `mcpServers` entry, or VS Code's):
// an entry that imports to nothing cannot be carried over and stays in the client's file.
void import_list(std::string_view text, jsonc::span span, const agent_file& f,
                 std::vector<std::string>& notes, std::vector<std::string>& left,
                 std::vector<server_config>& servers) {
  const std::string key = f.shape == agent_shape::vscode ? "servers" : "mcpServers";
  for (const auto& [name, value] : list_entries(text, span, f, notes)) {
    if (runs_mcpmux(value)) continue;  // mcpmux itself
    auto entry = value;
    if (f.shape == agent_shape::zed && entry.is_object()) entry.as_object().erase("source");
    boost::json::object one{{key, boost::json::object{{name, entry}}}};
    auto r = import_mcp_json(boost::json::serialize(one));
    if (r.value && !r.value->servers.empty()) {
      for (auto& n : r.value->notes) notes.push_back(std::move(n));
      for (auto& s : r.value->servers) servers.push_back(std::move(s));
    } else {
      left.emplace_back(name);
      if (r.value)
        for (auto& n : r.value->notes) notes.push_back(std::move(n));
      else
        notes.push_back("server \"" + std::string(name) + "\": " + r.error);
    }
  }
}

// The text of one entry of the list, as the client wrote it.
std::optional<std::string> entry_text(std::string_view text, jsonc::span span, const agent_file& f,
                                      const std::string& name) {
  std::optional<jsonc::span> at;
  if (f.shape == agent_shape::codex) {
    at = codex::find_server(text, span, name);
  } else {
    auto keys = f.keys;
    keys.push_back(name);
    at = jsonc::find(text, keys).value;
  }
  if (!at) return std::nullopt;
  return std::string(text_of(text, *at));
}

// A list in the client's syntax from entries (name, text): a JSON object indented to sit at
// `indent`, or Codex's tables one after the other.
std::string list_text(const agent_file& f,
                      const std::vector<std::pair<std::string, std::string>>& items,
                      const std::string& indent) {
  std::string out;
  if (f.shape == agent_shape::codex) {
    for (const auto& [name, item] : items) out += (out.empty() ? "" : "\n\n") + item;
    return out;
  }
  out = "{";
  for (const auto& [name, item] : items)
    out += std::string(out.size() > 1 ? "," : "") + "\n" + indent + "  " +
           boost::json::serialize(boost::json::value(name)) + ": " + item;
  return out + "\n" + indent + "}";
}

// The same server, whatever its name: the same definition of what runs, where, and with which
// credentials. Two accounts of one server differ only in their tokens: both are kept.
bool same_server(const server_config& a, const server_config& b) {
  return a.type == b.type && a.command == b.command && a.args == b.args && a.env == b.env &&
         a.cwd == b.cwd && a.url == b.url && a.headers == b.headers &&
         a.token_command == b.token_command;
}

// An imported server (templates) as mcpmux's loader reads it with keep_variables() (`$$` and
// `~/` resolved, `${VAR}` kept), to compare it with the servers of its config read that way.
server_config as_loaded(const server_config& s) {
  auto cfg = parse_config(to_toml(s), "import", keep_variables());
  return cfg.value && cfg.value->servers.size() == 1 ? cfg.value->servers.front() : s;
}

// Where an imported server goes: the server of `known` (mcpmux's, read as loaded) with the same
// definition, else a new one in `to_add` (renamed when its name is taken). mcpmux's name of it.
std::string place(const server_config& s, std::vector<server_config>& known,
                  std::vector<server_config>& to_add, std::vector<std::string>& notes) {
  const auto loaded = as_loaded(s);
  auto same = std::find_if(known.begin(), known.end(),
                           [&](const server_config& k) { return same_server(k, loaded); });
  if (same != known.end()) {
    notes.push_back("server \"" + s.name + "\": mcpmux runs it already as [servers." + same->name +
                    "]; not added again");
    return same->name;
  }
  const auto before = known.size();
  add_unique_server(known, s, notes);  // a name mcpmux uses for another gets a suffix
  if (known.size() == before) return s.name;
  to_add.push_back(known.back());
  known.back() = as_loaded(known.back());
  return to_add.back().name;
}

// `text` with each span replaced by its text; the spans do not overlap.
std::string replace_spans(std::string_view text,
                          std::vector<std::pair<jsonc::span, std::string>> edits) {
  std::sort(edits.begin(), edits.end(),
            [](const auto& a, const auto& b) { return a.first.begin > b.first.begin; });
  std::string out(text);
  for (const auto& [at, replacement] : edits) out = replace_span(out, at, replacement);
  return out;
}

// `s` on one line: a comment adopt writes must not end early at a newline in a path.
std::string one_line(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return s;
}

// One of the client's lists being adopted.
struct list_plan {
  agent_file file;
  jsonc::span span;
  std::vector<std::string> imported;  // the importer's names of its servers, in order
  std::vector<std::string> left;      // its entries that stay in it
  adopted_list adopted;
};

// A project's profile: its servers, then the user's that none of its own shadows (Claude Code
// runs a local server in place of a user server of the same name), as a [profiles.NAME] table.
std::string profile_table(list_plan& p, const list_plan* user, const std::string& source) {
  p.adopted.profile = project_profile_name(p.file.local_project);
  auto shown = p.adopted.servers;
  for (std::size_t i = 0; user && i < user->imported.size(); ++i)
    if (std::find(p.imported.begin(), p.imported.end(), user->imported[i]) == p.imported.end() &&
        std::find(shown.begin(), shown.end(), user->adopted.servers[i]) == shown.end())
      shown.push_back(user->adopted.servers[i]);
  std::string list;
  for (const auto& n : shown) list += (list.empty() ? "" : ", ") + toml_quote(n);
  return fmt::format("\n# adopted from {} ({})\n[profiles.{}]\nservers = [{}]\n",
                     one_line(p.file.label), one_line(source), p.adopted.profile, list);
}

// A server of mcpmux's config as the client's JSON entry.
boost::json::object client_entry(const server_config& s, const agent_file& f) {
  boost::json::object e;
  const auto table = [](const std::map<std::string, std::string>& m) {
    boost::json::object o;
    for (const auto& [k, v] : m) o[k] = v;
    return o;
  };
  if (s.type == server_type::stdio) {
    if (f.shape == agent_shape::vscode) e["type"] = "stdio";
    if (f.shape == agent_shape::zed) e["source"] = "custom";
    e["command"] = s.command;
    boost::json::array a;
    for (const auto& x : s.args) a.emplace_back(x);
    e["args"] = std::move(a);
    if (!s.env.empty()) e["env"] = table(s.env);
  } else {
    if (f.shape != agent_shape::zed) e["type"] = s.type == server_type::sse ? "sse" : "http";
    e["url"] = s.url;
    if (!s.headers.empty()) e["headers"] = table(s.headers);
  }
  return e;
}

}  // namespace

namespace {
// A file adopted before: each entry that runs mcpmux gets `--socket SOCKET` (or loses it) where
// its own differs, its profile kept; nothing else of the file changes.
adoption update_entries(std::string_view text, std::string_view config_text,
                        const server_lists& found, const std::string& socket) {
  adoption out;
  out.config_text = config_text;
  std::vector<std::pair<jsonc::span, std::string>> edits;
  for (const auto& l : found.lists) {
    const auto list = locate_servers(text, l);
    if (!list.span || !list.adopted) continue;
    std::vector<std::string> ignored;
    for (const auto& [name, entry] : list_entries(text, *list.span, l, ignored)) {
      if (!runs_mcpmux(entry) || arg_after(entry, "--socket") == socket) continue;
      auto args = mcpmux_args(arg_after(entry, "--profile"), socket);
      if (l.shape == agent_shape::codex) {
        if (auto table = codex::find_server(text, *list.span, name)) {
          const boost::json::object e{{"command", entry.at("command")}, {"args", std::move(args)}};
          edits.emplace_back(*table, codex::table(name, e));
        }
      } else {
        auto keys = l.keys;
        keys.insert(keys.end(), {std::string(name), "args"});
        if (auto at = jsonc::find(text, keys).value)
          edits.emplace_back(*at, boost::json::serialize(args));
      }
    }
  }
  if (edits.empty()) {
    out.nothing = "it already uses mcpmux";
    return out;
  }
  out.client_text = replace_spans(text, std::move(edits));
  out.entries_updated = true;
  return out;
}
}  // namespace

adoption plan_adoption(std::string_view client_text, const agent_file& file,
                       std::string_view config_text, const std::string& config_path,
                       const std::string& mcpmux_path, env_lookup lookup, credentials mode,
                       const std::string& socket) {
  adoption out;
  out.config_text = config_text;
  const auto found = find_server_lists(client_text, file);
  if (!found.error.empty()) {
    out.error = file.path +
                (file.shape == agent_shape::codex ? " is not TOML (" : " is not JSON (") +
                found.error + "); it was not touched";
    return out;
  }
  if (found.lists.empty()) {
    out.nothing = "it has no server list: nothing to adopt";
    return out;
  }
  for (const auto& l : found.lists) {
    if (locate_servers(client_text, l).adopted)
      return update_entries(client_text, config_text, found, socket);
  }

  // Into mcpmux's config: a server it runs already is not added again. Both sides are read
  // with their variables kept, so that `${TOKEN}` and `${OTHER}` are two definitions.
  auto current = parse_config(config_text, config_path, keep_variables());
  if (!current.value && !config_text.empty()) {
    out.error = config_path + " does not load; fix it first" +
                (current.errors.empty() ? "" : ": " + current.errors.front().to_string());
    return out;
  }
  auto known = current.value ? current.value->servers : std::vector<server_config>{};
  std::vector<server_config> to_add;
  std::vector<list_plan> plans;
  for (const auto& l : found.lists) {
    list_plan p{l, *locate_servers(client_text, l).span, {}, {}, {l.local_project, {}, {}}};
    std::vector<server_config> imported;
    import_list(client_text, p.span, l, out.notes, p.left, imported);
    for (const auto& s : imported) {
      p.imported.push_back(s.name);
      p.adopted.servers.push_back(place(s, known, to_add, out.notes));
      if (std::find(out.servers.begin(), out.servers.end(), p.adopted.servers.back()) ==
          out.servers.end())
        out.servers.push_back(p.adopted.servers.back());
    }
    out.left.insert(out.left.end(), p.left.begin(), p.left.end());
    // A project's list of which nothing can be carried over stays as it is.
    if (!l.local_project.empty() && p.adopted.servers.empty()) continue;
    plans.push_back(std::move(p));
  }
  // An empty user list beside projects' lists stays empty: an mcpmux entry there would show
  // every project the servers of all.
  if (plans.size() > 1 && plans.front().file.local_project.empty() &&
      plans.front().imported.empty() && plans.front().left.empty())
    plans.erase(plans.begin());
  if (plans.empty()) {
    out.nothing = "none of its servers can be carried over: nothing to adopt";
    return out;
  }

  const auto source = one_line("adopted from " + file.label + " (" + file.path + ")");
  if (!to_add.empty()) {
    auto merged = merge_into_config(config_text, config_path, to_add, source, lookup, mode);
    if (!merged.errors.empty()) {
      out.error =
          "the servers do not fit into " + config_path + ": " + merged.errors.front().to_string();
      return out;
    }
    out.config_text = std::move(merged.text);
    out.added = std::move(merged.added);
    out.secrets = std::move(merged.secrets);
  }
  // Each project sees its own servers (and the user's) through a profile of its own.
  const list_plan* user = plans.front().file.local_project.empty() ? &plans.front() : nullptr;
  std::string profiles;
  for (auto& p : plans) {
    if (p.file.local_project.empty()) continue;
    profiles += profile_table(p, user, file.path);
    out.profiles.push_back(p.adopted.profile);
  }
  if (!profiles.empty()) {
    std::vector<std::string> tables;  // an earlier adopt's tables are replaced
    for (const auto& n : out.profiles) tables.push_back("profiles." + n);
    out.config_text = remove_tables(out.config_text, tables);
    if (!out.config_text.empty() && !out.config_text.ends_with('\n')) out.config_text += '\n';
    out.config_text += out.config_text.empty() ? profiles.substr(1) : profiles;
  }

  // The client's new lists: mcpmux, and what could not be carried over, as it was.
  std::vector<std::pair<jsonc::span, std::string>> edits;
  for (auto& p : plans) {
    const auto indent = jsonc::indentation_at(client_text, p.span.begin);
    std::vector<std::pair<std::string, std::string>> items{
        {"mcpmux", mcpmux_item(p.file, mcpmux_path, p.adopted.profile, indent, socket)}};
    for (const auto& name : p.left)
      if (auto t = entry_text(client_text, p.span, p.file, name)) items.emplace_back(name, *t);
    edits.emplace_back(p.span, list_text(p.file, items, indent));
    out.lists.push_back(std::move(p.adopted));
  }
  out.client_text = replace_spans(client_text, std::move(edits));
  return out;
}

env_lookup keep_variables() {
  return [](std::string_view name) -> std::optional<std::string> {
    return "${" + std::string(name) + "}";
  };
}

namespace {
// A list rebuilt from mcpmux's config: the servers `names` gives, then what stayed with the
// client beside mcpmux, as it was written.
std::string rebuilt_list(std::string_view client_text, const agent_file& file, jsonc::span span,
                         const std::vector<server_config>& servers,
                         const std::vector<std::string>& names) {
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& n : names)
    for (const auto& s : servers)
      if (s.name == n)
        items.emplace_back(s.name, file.shape == agent_shape::codex
                                       ? codex::table(s.name, client_entry(s, file))
                                       : boost::json::serialize(client_entry(s, file)));
  std::vector<std::string> ignored;
  for (const auto& [name, value] : list_entries(client_text, span, file, ignored))
    if (!runs_mcpmux(value))
      if (auto t = entry_text(client_text, span, file, std::string(name)))
        items.emplace_back(name, *t);
  return list_text(file, items, jsonc::indentation_at(client_text, span.begin));
}
}  // namespace

std::string plan_restoration(std::string_view client_text, const agent_file& file,
                             const std::optional<std::string>& backup_text,
                             const std::vector<server_config>& servers,
                             const std::vector<std::string>& names, std::string* error,
                             const project_servers& local_names) {
  std::vector<std::pair<jsonc::span, std::string>> edits;
  for (const auto& l : find_server_lists(client_text, file).lists) {
    const auto list = locate_servers(client_text, l);
    if (!list.span || !list.adopted) continue;
    std::string original;
    if (backup_text)
      if (auto old = locate_servers(*backup_text, l); old.span)
        original = text_of(*backup_text, *old.span);
    if (original.empty()) {
      const auto local = local_names.find(l.local_project);
      const auto& own = l.local_project.empty()      ? names
                        : local != local_names.end() ? local->second
                                                     : std::vector<std::string>{};
      if (own.empty()) {
        *error = "no backup and no record of which servers were adopted: nothing to restore from";
        return {};
      }
      original = rebuilt_list(client_text, l, *list.span, servers, own);
    }
    edits.emplace_back(*list.span, std::move(original));
  }
  if (edits.empty()) {
    *error = "it does not use mcpmux: nothing to undo";
    return {};
  }
  return replace_spans(client_text, std::move(edits));
}

std::string remove_server_tables(std::string_view text, const std::vector<std::string>& names) {
  std::vector<std::string> tables;
  for (const auto& n : names) tables.push_back("servers." + n);
  return remove_tables(text, tables);
}

std::string remove_tables(std::string_view text, const std::vector<std::string>& tables) {
  const auto lines = split_lines(text);
  const auto header_of = [](std::string_view line) -> std::string_view {
    auto t = line.substr(0, line.find('#'));
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() && (t.back() == ' ' || t.back() == '\t' || t.back() == '\r'))
      t.remove_suffix(1);
    if (t.size() < 2 || t.front() != '[' || t.back() != ']') return {};
    return t.substr(1, t.size() - 2);
  };
  const auto removed = [&](std::string_view header) {
    for (const auto& h : tables) {
      if (header == h || (header.size() > h.size() && header.substr(0, h.size() + 1) == h + "."))
        return true;
    }
    return false;
  };
  std::vector<bool> drop(lines.size(), false);
  bool dropping = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (auto h = header_of(lines[i]); !h.empty()) {
      dropping = removed(h);
      // The comment adopt wrote right above the table goes with it.
      if (dropping && i > 0 && lines[i - 1].rfind("# adopted from ", 0) == 0) drop[i - 1] = true;
    }
    drop[i] = drop[i] || dropping;
  }
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (!drop[i]) out += std::string(lines[i]) + "\n";
  if (!text.empty() && text.back() != '\n' && !out.empty()) out.pop_back();
  return out;
}

std::string replace_span(std::string_view text, jsonc::span span, std::string_view replacement) {
  std::string out(text.substr(0, span.begin));
  out += replacement;
  out += text.substr(span.end);
  return out;
}

std::string line_diff(std::string_view before, std::string_view after) {
  if (before == after) return {};
  const auto a = split_lines(before), b = split_lines(after);
  // The changed middle: a common head and a common tail around it (one change per adopt).
  const auto [head, tail] = common_ends(a, b);
  constexpr std::size_t context = 2;
  std::string out;
  const auto from = head > context ? head - context : 0;
  out += "@@ line " + std::to_string(from + 1) + " @@\n";
  for (std::size_t i = from; i < head; ++i) out += " " + std::string(a[i]) + "\n";
  for (std::size_t i = head; i < a.size() - tail; ++i) out += "-" + std::string(a[i]) + "\n";
  for (std::size_t i = head; i < b.size() - tail; ++i) out += "+" + std::string(b[i]) + "\n";
  for (std::size_t i = a.size() - tail; i < a.size() && i < a.size() - tail + context; ++i)
    out += " " + std::string(a[i]) + "\n";
  return out;
}

}  // namespace mcpmux
