// Reads other MCP clients' `mcpServers` / `servers` JSON into server_config (toml_writer.cpp
// prints it as TOML): the layouts of the files, name clashes, the merge into a config.toml. One
// server entry is converted in import_server.cpp.
#include "config/import.hpp"
#include "base/files.hpp"
#include "base/text.hpp"
#include "config/import_detail.hpp"
#include "config/names.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <utility>

namespace json = boost::json;

namespace mcpmux {
namespace {

using json_import::kind_name;
using json_import::server_importer;
using json_import::sv;
using names::is_name_char;

// ~/.claude.json keeps per-project history next to the server lists and grows well beyond a
// hand-written config; this cap only guards against a wrong path (a log, /dev/zero).
constexpr std::size_t max_import_file_bytes = 64u << 20;
constexpr std::size_t max_server_name = 64;

std::string server_label(std::string_view name, std::string_view project) {
  if (project.empty()) return fmt::format("server \"{}\"", name);
  return fmt::format("server \"{}\" (project {})", name, project);
}

bool add_unique(std::vector<server_config>& list, server_config s, std::vector<std::string>& notes,
                const std::string& label) {
  auto taken = [&](std::string_view n) {
    return std::any_of(list.begin(), list.end(),
                       [&](const server_config& x) { return x.name == n; });
  };
  auto same = std::find_if(list.begin(), list.end(),
                           [&](const server_config& x) { return x.name == s.name; });
  if (same == list.end()) {
    list.push_back(std::move(s));
    return true;
  }
  if (*same == s) {
    notes.push_back(
        fmt::format("{}: same as server \"{}\" imported before; not repeated", label, s.name));
    return false;
  }
  for (int k = 2;; ++k) {
    const std::string suffix = fmt::format("-{}", k);
    std::string candidate = s.name.substr(0, max_server_name - suffix.size()) + suffix;
    if (!taken(candidate)) {
      notes.push_back(fmt::format("{}: name \"{}\" already taken; imported as \"{}\"", label,
                                  s.name, candidate));
      s.name = std::move(candidate);
      list.push_back(std::move(s));
      return true;
    }
  }
}

void import_servers(const json::object& servers, bool vscode, std::string_view project,
                    import_result& r) {
  server_importer im(vscode, r.notes);
  for (const auto& [k, v] : servers) {
    const std::string name = sv(k);
    const std::string label = server_label(name, project);
    if (auto s = im.run(name, v, label)) add_unique(r.servers, std::move(*s), r.notes, label);
  }
}

void note_inputs(const json::value* inputs, import_result& r) {
  if (!inputs) return;
  const json::array* a = inputs->if_array();
  if (!a || a->empty()) return;
  std::string ids;
  for (const json::value& e : *a) {
    const json::object* o = e.if_object();
    const json::value* id = o ? o->if_contains("id") : nullptr;
    if (id && id->is_string())
      ids += fmt::format("{}\"{}\"", ids.empty() ? "" : ", ", sv(id->get_string()));
  }
  r.notes.push_back(fmt::format(
      "inputs: {} prompted value{} ({}) cannot be carried over; use ${{VAR}} from mcpmuxd's "
      "environment instead",
      a->size(), a->size() == 1 ? "" : "s", ids));
}

}  // namespace

std::string sanitize_server_name(std::string_view raw) {
  std::string out;
  for (char c : raw) {
    if (out.size() == max_server_name) break;
    out += is_name_char(c) ? c : '_';
  }
  if (out.empty()) out = "server";
  return out;
}

bool add_unique_server(std::vector<server_config>& list, server_config s,
                       std::vector<std::string>& notes) {
  const std::string label = server_label(s.name, "");
  return add_unique(list, std::move(s), notes, label);
}

import_outcome import_mcp_json(std::string_view text) {
  import_outcome out;
  json::parse_options opt;
  opt.allow_comments = true;  // VS Code's files are JSON with comments and trailing commas
  opt.allow_trailing_commas = true;
  opt.max_depth = 256;
  json::stream_parser p(json::storage_ptr(), opt);
  json::error_code ec;
  std::size_t n = p.write_some(text.data(), text.size(), ec);
  if (!ec && n < text.size()) {
    // write_some stops after one complete value; only whitespace may follow.
    const std::size_t rest = text.find_first_not_of(" \t\r\n", n);
    if (rest != std::string_view::npos) {
      auto [line, col] = line_column(text, rest);
      out.error =
          fmt::format("line {}, column {}: unexpected text after the JSON value", line, col);
      return out;
    }
  }
  if (!ec) p.finish(ec);
  if (ec) {
    auto [line, col] = line_column(text, n);
    out.error = fmt::format("line {}, column {}: invalid JSON: {}", line, col, ec.message());
    return out;
  }
  const json::value root = p.release();
  const json::object* top = root.if_object();
  if (!top) {
    out.error = fmt::format("expected a JSON object at the top level, got {}", kind_name(root));
    return out;
  }

  import_result r;
  bool found = false;
  auto take = [&](const json::value* v, std::string_view where, bool vscode,
                  std::string_view project) -> bool {
    if (!v) return true;
    const json::object* o = v->if_object();
    if (!o) {
      out.error = fmt::format("\"{}\" is {}, expected an object", where, kind_name(*v));
      return false;
    }
    found = true;
    import_servers(*o, vscode, project, r);
    return true;
  };

  if (!take(top->if_contains("mcpServers"), "mcpServers", false, "")) return out;
  if (found) r.format = "mcpServers";
  // ~/.claude.json: servers local to a project, under projects.<path>.mcpServers.
  if (const json::value* projects = top->if_contains("projects")) {
    if (const json::object* po = projects->if_object()) {
      for (const auto& [path, pv] : *po) {
        const json::object* proj = pv.if_object();
        if (!proj) continue;
        const std::string where = fmt::format("projects.{}.mcpServers", sv(path));
        if (!take(proj->if_contains("mcpServers"), where, false, sv(path))) return out;
        if (found && r.format.empty()) r.format = "mcpServers";
      }
    }
  }
  // VS Code: .vscode/mcp.json has `servers` and `inputs`; settings.json nests both under `mcp`.
  if (!found) {
    const json::object* vs = top;
    std::string_view where = "servers";
    if (!top->contains("servers")) {
      if (const json::value* mcp = top->if_contains("mcp"); mcp && mcp->is_object()) {
        vs = &mcp->get_object();
        where = "mcp.servers";
      }
    }
    if (!take(vs->if_contains("servers"), where, true, "")) return out;
    if (found) {
      r.format = "servers";
      note_inputs(vs->if_contains("inputs"), r);
    }
  }
  if (!found) {
    out.error =
        "no \"mcpServers\" or \"servers\" object found; not a Claude, Cursor, Windsurf or VS "
        "Code MCP configuration";
    return out;
  }
  out.value = std::move(r);
  return out;
}

import_outcome import_mcp_file(const std::string& path, bool* missing) {
  import_outcome out;
  auto text = read_text_file_if_exists(path, max_import_file_bytes);
  if (text && *text) return import_mcp_json(**text);
  if (missing) *missing = text.ok();
  out.error = text ? fmt::format("cannot open: {}", std::strerror(ENOENT))  // as a read says
                   : std::move(text.error().message);
  return out;
}

merge_outcome merge_into_config(std::string_view existing, const std::string& path,
                                const std::vector<server_config>& servers, std::string_view comment,
                                env_lookup lookup, credentials mode) {
  merge_outcome out;
  config_result current = parse_config(existing, path, lookup);
  if (!current.value) {
    out.errors = std::move(current.errors);
    return out;
  }
  std::vector<server_config> fresh;
  for (const server_config& s : servers) {
    const bool present = std::any_of(current.value->servers.begin(), current.value->servers.end(),
                                     [&](const server_config& x) { return x.name == s.name; });
    (present ? out.skipped : out.added).push_back(s.name);
    if (!present) fresh.push_back(s);
  }
  std::string text(existing);
  if (fresh.empty()) {
    out.text = std::move(text);
    return out;
  }
  if (!text.empty() && !text.ends_with('\n')) text += '\n';
  if (!text.empty()) text += '\n';
  if (!comment.empty()) text += fmt::format("# {}\n", comment);
  const auto head = text.size();
  text += to_toml(fresh);
  config_result merged = parse_config(text, path, lookup);
  if (!merged.value) {
    out.errors = std::move(merged.errors);
    return out;
  }
  if (mode == credentials::to_secret_store) {
    // Written with `${secret:NAME}` where the credentials were: valid once they are kept.
    for (server_config& s : fresh)
      for (auto& m : move_credentials(s)) out.secrets.push_back(std::move(m));
    if (!out.secrets.empty()) text = text.substr(0, head) + to_toml(fresh);
  }
  out.text = std::move(text);
  return out;
}

}  // namespace mcpmux
