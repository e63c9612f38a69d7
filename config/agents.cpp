#include "config/agents.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "config/agents_codex.hpp"
#include "config/import.hpp"
#include "core/protocol/json_rpc.hpp"
#include "core/protocol/text.hpp"

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
      {"claude-code", "Claude Code (user)", join_path(home, ".claude.json"), mcp},
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

boost::json::object list_entries(std::string_view text, jsonc::span span, const agent_file& file,
                                 std::vector<std::string>& notes) {
  const auto list = text.substr(span.begin, span.end - span.begin);
  if (file.shape == agent_shape::codex) return codex::entries(list, notes);
  boost::json::parse_options opt;
  opt.allow_comments = true;
  opt.allow_trailing_commas = true;
  boost::system::error_code ec;
  auto v = boost::json::parse(list, ec, {}, opt);
  if (ec || !v.is_object()) return {};
  return std::move(v.as_object());
}

namespace {
// The mcpmux entry's own text (its value, or Codex's table).
std::string mcpmux_item(const agent_file& file, const std::string& mcpmux_path,
                        const std::string& profile, const std::string& indent) {
  boost::json::array args{"connect", "--spawn"};
  if (!profile.empty()) {
    args.emplace_back("--profile");
    args.emplace_back(profile);
  }
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
void import_list(std::string_view text, jsonc::span span, const agent_file& f, adoption& out,
                 std::vector<server_config>& servers) {
  const std::string key = f.shape == agent_shape::vscode ? "servers" : "mcpServers";
  for (const auto& [name, value] : list_entries(text, span, f, out.notes)) {
    if (runs_mcpmux(value)) continue;  // mcpmux itself
    auto entry = value;
    if (f.shape == agent_shape::zed && entry.is_object()) entry.as_object().erase("source");
    boost::json::object one{{key, boost::json::object{{name, entry}}}};
    auto r = import_mcp_json(boost::json::serialize(one));
    if (r.value && !r.value->servers.empty()) {
      for (auto& n : r.value->notes) out.notes.push_back(std::move(n));
      for (auto& s : r.value->servers) servers.push_back(std::move(s));
    } else {
      out.left.emplace_back(name);
      if (r.value)
        for (auto& n : r.value->notes) out.notes.push_back(std::move(n));
      else
        out.notes.push_back("server \"" + std::string(name) + "\": " + r.error);
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

// The same server, whatever its name: same command and arguments, or same URL.
bool same_server(const server_config& a, const server_config& b) {
  if (a.type != b.type) return false;
  if (a.type == server_type::stdio) return a.command == b.command && a.args == b.args;
  return a.url == b.url;
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

adoption plan_adoption(std::string_view client_text, const agent_file& file,
                       std::string_view config_text, const std::string& config_path,
                       const std::string& mcpmux_path, env_lookup lookup) {
  adoption out;
  out.config_text = config_text;
  const auto list = locate_servers(client_text, file);
  if (!list.error.empty()) {
    out.error = file.path +
                (file.shape == agent_shape::codex ? " is not TOML (" : " is not JSON (") +
                list.error + "); it was not touched";
    return out;
  }
  if (!list.span) {
    out.nothing = "it has no server list: nothing to adopt";
    return out;
  }
  if (list.adopted) {
    out.nothing = "it already uses mcpmux";
    return out;
  }
  std::vector<server_config> imported;
  import_list(client_text, *list.span, file, out, imported);

  // Into mcpmux's config: a server it runs already is not added again.
  auto current = parse_config(config_text, config_path, lookup);
  if (!current.value && !config_text.empty()) {
    out.error = config_path + " does not load; fix it first" +
                (current.errors.empty() ? "" : ": " + current.errors.front().to_string());
    return out;
  }
  auto known = current.value ? current.value->servers : std::vector<server_config>{};
  std::vector<server_config> to_add;
  for (auto& s : imported) {
    auto same = std::find_if(known.begin(), known.end(),
                             [&](const server_config& k) { return same_server(k, s); });
    if (same != known.end()) {
      out.notes.push_back("server \"" + s.name + "\": mcpmux runs it already as [servers." +
                          same->name + "]; not added again");
      out.servers.push_back(same->name);
      continue;
    }
    const auto before = known.size();
    add_unique_server(known, s, out.notes);  // a name mcpmux uses for another gets a suffix
    if (known.size() > before) {
      to_add.push_back(known.back());
      out.servers.push_back(known.back().name);
    }
  }
  if (!to_add.empty()) {
    auto merged = merge_into_config(config_text, config_path, to_add,
                                    "adopted from " + file.label + " (" + file.path + ")", lookup);
    if (!merged.errors.empty()) {
      out.error =
          "the servers do not fit into " + config_path + ": " + merged.errors.front().to_string();
      return out;
    }
    out.config_text = std::move(merged.text);
    out.added = std::move(merged.added);
  }

  // The client's new list: mcpmux, and what could not be carried over, as it was.
  const auto indent = jsonc::indentation_at(client_text, list.span->begin);
  std::vector<std::pair<std::string, std::string>> items{
      {"mcpmux", mcpmux_item(file, mcpmux_path, "", indent)}};
  for (const auto& name : out.left)
    if (auto t = entry_text(client_text, *list.span, file, name)) items.emplace_back(name, *t);
  const auto entry = list_text(file, items, indent);
  out.client_text = replace_span(client_text, *list.span, entry);
  return out;
}

env_lookup keep_variables() {
  return [](std::string_view name) -> std::optional<std::string> {
    return "${" + std::string(name) + "}";
  };
}

std::string plan_restoration(std::string_view client_text, const agent_file& file,
                             const std::optional<std::string>& backup_text,
                             const std::vector<server_config>& servers,
                             const std::vector<std::string>& names, std::string* error) {
  const auto list = locate_servers(client_text, file);
  if (!list.span || !list.adopted) {
    *error = "it does not use mcpmux: nothing to undo";
    return {};
  }
  std::string original;
  if (backup_text) {
    if (auto old = locate_servers(*backup_text, file); old.span)
      original = text_of(*backup_text, *old.span);
  }
  if (original.empty()) {
    if (names.empty()) {
      *error = "no backup and no record of which servers were adopted: nothing to restore from";
      return {};
    }
    std::vector<std::pair<std::string, std::string>> items;
    for (const auto& n : names)
      for (const auto& s : servers)
        if (s.name == n)
          items.emplace_back(s.name, file.shape == agent_shape::codex
                                         ? codex::table(s.name, client_entry(s, file))
                                         : boost::json::serialize(client_entry(s, file)));
    // What stayed with the client beside mcpmux stays, as it was written.
    std::vector<std::string> ignored;
    for (const auto& [name, value] : list_entries(client_text, *list.span, file, ignored))
      if (!runs_mcpmux(value))
        if (auto t = entry_text(client_text, *list.span, file, std::string(name)))
          items.emplace_back(name, *t);
    original = list_text(file, items, jsonc::indentation_at(client_text, list.span->begin));
  }
  return replace_span(client_text, *list.span, original);
}

std::string remove_server_tables(std::string_view text, const std::vector<std::string>& names) {
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
    for (const auto& n : names) {
      const auto h = "servers." + n;
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
