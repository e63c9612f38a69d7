// `mcpmux agents`, `mcpmux adopt AGENT|FILE`, `mcpmux unadopt AGENT|FILE`: moving an MCP
// client onto the gateway and back. Adopting imports the client's servers into mcpmux's config
// (the importer's rules; a server mcpmux already runs is not added twice), replaces the client's
// server list with one entry that runs `mcpmux connect`, keeps every other byte of its file, and
// keeps a timestamped backup beside it; the daemon reloads and the servers are up before the
// command returns. Unadopting puts the client's own list back, from the backup, else from what
// mcpmux's config holds of those servers. A file that does not parse, or that changed while we
// worked, is never written.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <ctime>
#include <thread>

#include "config/agents.hpp"
#include "config/config.hpp"
#include "config/files.hpp"
#include "config/import.hpp"
#include "core/protocol/json_rpc.hpp"
#include "daemon/cli/commands.hpp"
#include "daemon/cli/table.hpp"

namespace mcpmux::cli {
namespace {

constexpr std::size_t max_client_file = 16u << 20;
constexpr auto settle_wait = std::chrono::seconds(30);

std::string home_dir() {
  return env("HOME").value_or("/");
}
std::string config_home() {
  return env("XDG_CONFIG_HOME").value_or(home_dir() + "/.config");
}
std::string current_dir() {
  char buf[4096];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}
bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// This program's absolute path, so that a desktop agent without the user's PATH finds it.
std::string self_path() {
  char buf[4096];
  const auto n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("mcpmux");
}

std::string absolute(const std::string& p) {
  return !p.empty() && p[0] == '/' ? p : current_dir() + "/" + p;
}

// AGENT (an id of `mcpmux agents`; the first of its files that exists) or FILE.
outcome<agent_file> resolve(const std::string& target) {
  if (target.find('/') != std::string::npos || exists(target))
    return agent_file_for_path(absolute(target));
  const auto files = known_agent_files(home_dir(), config_home(), current_dir());
  bool known = false;
  for (const auto& f : files) {
    if (f.agent != target) continue;
    known = true;
    if (exists(f.path)) return f;
  }
  if (known) return fail("no config file of " + target + " here");
  std::string ids;
  for (const auto& f : files) ids += (ids.empty() ? "" : ", ") + f.agent;
  return failure{exit_status::usage,
                 "unknown agent '" + target + "' (known: " + ids + "; or give a file's path)"};
}

outcome<std::string> read_file(const std::string& path) {
  std::string err;
  auto text = read_text_file(path, max_client_file, err);
  if (!text) return fail(path + ": " + err);
  return std::move(*text);
}

// The servers of the list at `span`, each imported on its own: names that import to nothing
// cannot be carried over and stay in the client's file.
struct list_import {
  std::vector<server_config> servers;
  std::vector<std::string> left;  ///< original names that stay with the client
  std::vector<std::string> notes;
};
list_import import_list(std::string_view text, jsonc::span span, const agent_file& f) {
  list_import out;
  const std::string key = f.shape == agent_shape::vscode ? "servers" : "mcpServers";
  boost::json::parse_options opt;
  opt.allow_comments = true;
  opt.allow_trailing_commas = true;
  boost::system::error_code ec;
  const auto list = boost::json::parse(text.substr(span.begin, span.end - span.begin), ec, {}, opt);
  const auto* o = ec ? nullptr : list.if_object();
  if (!o) return out;
  for (const auto& [name, value] : *o) {
    if (runs_mcpmux(value)) continue;  // mcpmux itself
    boost::json::object one{{key, boost::json::object{{name, value}}}};
    auto r = import_mcp_json(boost::json::serialize(one));
    if (r.value) {
      for (auto& n : r.value->notes) out.notes.push_back(std::move(n));
      if (r.value->servers.empty()) out.left.emplace_back(name);
      for (auto& s : r.value->servers) out.servers.push_back(std::move(s));
    } else {
      out.left.emplace_back(name);
      out.notes.push_back("server \"" + std::string(name) + "\": " + r.error);
    }
  }
  return out;
}

// The same server, whatever its name: same command and arguments, or same URL.
bool same_server(const server_config& a, const server_config& b) {
  if (a.type != b.type) return false;
  if (a.type == server_type::stdio) return a.command == b.command && a.args == b.args;
  return a.url == b.url;
}

std::string record_dir() {
  return state_dir() + "/adopted";
}
std::string record_path(const std::string& file) {
  std::string name;
  for (char c : file) name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' ? c : '_';
  if (name.size() > 200) name = name.substr(name.size() - 200);
  return record_dir() + "/" + name + ".json";
}

std::string timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

// Writes `text` over `path` if the file still holds `expected` (refusing a concurrent edit).
outcome<void> replace_file(const std::string& path, std::string_view expected,
                           const std::string& text) {
  auto now = read_file(path);
  if (!now) return now.error();
  if (*now != expected)
    return fail(path + " changed while mcpmux was working on it; nothing was written to it",
                "Run the command again.");
  if (auto err = write_file_atomically(path, text); !err.empty()) return fail(err);
  return {};
}

// Asks before writing, unless --yes: a "y" line on standard input applies; anything else, or
// its end, does not.
bool confirmed(const command_args& args) {
  if (args.yes) return true;
  fmt::print("Apply? [y/N] ");
  std::fflush(stdout);
  char answer[16] = {};
  if (!std::fgets(answer, sizeof answer, stdin)) return false;
  return answer[0] == 'y' || answer[0] == 'Y';
}

// Reloads the daemon and waits until the named servers have settled (not connecting).
void reload_and_wait(const context& ctx, const std::vector<std::string>& servers) {
  auto client = open_client(ctx);
  if (!client) {
    fmt::print("no daemon answers on {}: the servers start with it\n", ctx.socket_path);
    return;
  }
  auto reloaded = client->request("mcpmux/reload", {});
  if (!reloaded) {
    fmt::print(stderr, "mcpmux: reload failed: {}\n", reloaded.error().message);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + settle_wait;
  for (;;) {
    auto st = client->request("mcpmux/status", {});
    if (!st) return;
    std::vector<std::string> waiting, lines;
    if (const auto* list = member(*st, "servers"); list && list->is_array()) {
      for (const auto& s : list->get_array()) {
        const auto name = std::string(member_string(s, "name").value_or(""));
        if (std::find(servers.begin(), servers.end(), name) == servers.end()) continue;
        const auto state = std::string(member_string(s, "state").value_or("?"));
        if (state == "connecting") waiting.push_back(name);
        lines.push_back(fmt::format("  {}: {}", name, state));
      }
    }
    if (waiting.empty() || std::chrono::steady_clock::now() > deadline) {
      for (const auto& l : lines) fmt::print("{}\n", l);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

outcome<exit_status> run_agents(const context&, const command_args& args) {
  boost::json::array found;
  std::vector<std::vector<cell>> rows;
  for (const auto& f : known_agent_files(home_dir(), config_home(), current_dir())) {
    if (!exists(f.path)) continue;
    auto text = read_file(f.path);
    std::string servers = "?", state = "unreadable";
    bool adopted = false;
    if (text) {
      auto list = locate_servers(*text, f);
      if (!list.error.empty()) {
        state = "not JSON: " + list.error;
      } else if (!list.span) {
        servers = "0";
        state = "-";
      } else {
        adopted = list.adopted;
        servers = std::to_string(import_list(*text, *list.span, f).servers.size());
        state = adopted ? "uses mcpmux" : "-";
        if (adopted) servers = "-";
      }
    }
    found.push_back(boost::json::object{{"agent", f.agent},
                                        {"label", f.label},
                                        {"path", f.path},
                                        {"project", f.project},
                                        {"servers", servers},
                                        {"adopted", adopted}});
    rows.push_back({{f.agent, {}}, {f.label, {}}, {servers, {}}, {state, {}}, {f.path, {}}});
  }
  if (args.json) {
    print_pretty(boost::json::value(boost::json::object{{"agents", std::move(found)}}));
    return exit_status::ok;
  }
  if (rows.empty()) {
    fmt::print("no MCP client config found\n");
    return exit_status::ok;
  }
  static const column columns[] = {
      {"AGENT", 20}, {"CLIENT", 24}, {"SERVERS", 8, align::right}, {"MCPMUX", 12}, {"FILE", 0}};
  print_table(columns, rows, 160);
  return exit_status::ok;
}

// The client's file named on the command line: where it is, its text, its server list.
struct client_file {
  agent_file file;
  std::string text;
  server_list list;
};
outcome<client_file> open_client_file(const std::string& target) {
  auto file = resolve(target);
  if (!file) return file.error();
  auto text = read_file(file->path);
  if (!text) return text.error();
  auto list = locate_servers(*text, *file);
  if (!list.error.empty())
    return fail(file->path + " is not JSON (" + list.error + "); it was not touched");
  return client_file{std::move(*file), std::move(*text), std::move(list)};
}

outcome<exit_status> run_adopt(const context& ctx, const command_args& args) {
  auto opened = open_client_file(args.target);
  if (!opened) return opened.error();
  auto* file = &opened->file;
  auto* text = &opened->text;
  auto& list = opened->list;
  if (!list.span) {
    fmt::print("{} has no server list: nothing to adopt\n", file->path);
    return exit_status::ok;
  }
  if (list.adopted) {
    fmt::print("{} already uses mcpmux\n", file->path);
    return exit_status::ok;
  }

  // Into mcpmux's config: new servers appended; one mcpmux runs already is not added again.
  auto imported = import_list(*text, *list.span, *file);
  const std::string config_path = resolve_config_path(args.config.value_or(""));
  std::string existing;
  bool missing = false;
  if (std::string err; auto t = read_text_file(config_path, 4u << 20, err, &missing))
    existing = std::move(*t);
  else if (!missing)
    return fail(config_path + ": " + err);
  auto current = parse_config(existing, config_path);
  if (!current.value && !existing.empty())
    return fail(config_path + " does not load; fix it first",
                current.errors.empty() ? "" : current.errors.front().to_string());
  std::vector<server_config> known =
      current.value ? current.value->servers : std::vector<server_config>{};
  std::vector<server_config> to_add;
  std::vector<std::string> adopted_names, notes = imported.notes;
  for (auto& s : imported.servers) {
    auto same = std::find_if(known.begin(), known.end(),
                             [&](const server_config& k) { return same_server(k, s); });
    if (same != known.end()) {
      notes.push_back("server \"" + s.name + "\": mcpmux runs it already as [servers." +
                      same->name + "]; not added again");
      adopted_names.push_back(same->name);
      continue;
    }
    const auto before = known.size();
    add_unique_server(known, s, notes);  // renames one whose name mcpmux uses for another
    if (known.size() > before) {
      to_add.push_back(known.back());
      adopted_names.push_back(known.back().name);
    }
  }
  merge_outcome merged{existing, {}, {}, {}};
  if (!to_add.empty()) {
    merged = merge_into_config(existing, config_path, to_add,
                               "adopted from " + file->label + " (" + file->path + ")");
    if (!merged.errors.empty())
      return fail("the servers do not fit into " + config_path, merged.errors.front().to_string());
  }

  // The client's new list: mcpmux, and what could not be carried over, as it was.
  const auto indent = jsonc::indentation_at(*text, list.span->begin);
  std::string entry = mcpmux_entry(*file, self_path(), args.profile, indent);
  if (!imported.left.empty()) {
    entry.erase(entry.rfind('}'));
    while (!entry.empty() && (entry.back() == ' ' || entry.back() == '\n')) entry.pop_back();
    for (const auto& name : imported.left) {
      auto keys = file->keys;
      keys.push_back(name);
      if (auto f = jsonc::find(*text, keys); f.value)
        entry += ",\n" + indent + "  " + boost::json::serialize(boost::json::value(name)) + ": " +
                 std::string(text->substr(f.value->begin, f.value->end - f.value->begin));
    }
    entry += "\n" + indent + "}";
  }
  const auto rewritten = replace_span(*text, *list.span, entry);

  fmt::print("{} ({}):\n{}\n", file->label, file->path, line_diff(*text, rewritten));
  if (!to_add.empty()) fmt::print("{}: adds {}\n", config_path, fmt::join(merged.added, ", "));
  for (const auto& name : imported.left)
    fmt::print("left in {}: \"{}\" (cannot be carried over)\n", file->path, name);
  for (const auto& n : notes) fmt::print(stderr, "mcpmux: note: {}\n", n);
  if (args.dry_run) {
    fmt::print("(dry run: nothing written)\n");
    return exit_status::ok;
  }
  if (!confirmed(args)) return fail("nothing written");

  if (!to_add.empty())
    if (auto err = write_file_atomically(config_path, merged.text); !err.empty()) return fail(err);
  const std::string backup = file->path + ".mcpmux-backup-" + timestamp();
  if (auto err = write_file_atomically(backup, *text); !err.empty()) return fail(err);
  ::chmod(backup.c_str(), 0600);
  if (auto w = replace_file(file->path, *text, rewritten); !w) return w.error();
  boost::json::array names;
  for (const auto& n : adopted_names) names.emplace_back(n);
  const boost::json::object record{{"file", file->path},
                                   {"backup", backup},
                                   {"servers", std::move(names)},
                                   {"config", config_path}};
  if (auto err = write_file_atomically(record_path(file->path), boost::json::serialize(record));
      !err.empty())
    fmt::print(stderr, "mcpmux: warning: {}\n", err);
  fmt::print("adopted: {} now runs mcpmux (backup: {})\n", file->path, backup);
  reload_and_wait(ctx, adopted_names);
  return exit_status::ok;
}

// A server of mcpmux's config as the client's JSON entry (when the backup is gone).
boost::json::object client_entry(const server_config& s, const agent_file& f) {
  boost::json::object e;
  if (s.type == server_type::stdio) {
    if (f.shape == agent_shape::vscode) e["type"] = "stdio";
    e["command"] = s.command;
    boost::json::array a;
    for (const auto& x : s.args) a.emplace_back(x);
    e["args"] = std::move(a);
    if (!s.env.empty()) {
      boost::json::object env;
      for (const auto& [k, v] : s.env) env[k] = v;
      e["env"] = std::move(env);
    }
  } else {
    e["type"] = s.type == server_type::sse ? "sse" : "http";
    e["url"] = s.url;
    if (!s.headers.empty()) {
      boost::json::object h;
      for (const auto& [k, v] : s.headers) h[k] = v;
      e["headers"] = std::move(h);
    }
  }
  return e;
}

outcome<exit_status> run_unadopt(const context&, const command_args& args) {
  auto opened = open_client_file(args.target);
  if (!opened) return opened.error();
  auto* file = &opened->file;
  auto* text = &opened->text;
  auto& list = opened->list;
  if (!list.span || !list.adopted) {
    fmt::print("{} does not use mcpmux: nothing to undo\n", file->path);
    return exit_status::ok;
  }
  // The list as it was: from the backup; else rebuilt from what mcpmux's config holds.
  std::string original;
  std::string err;
  auto rec_text = read_text_file(record_path(file->path), 1u << 20, err);
  boost::system::error_code ec;
  const auto rec = rec_text ? boost::json::parse(*rec_text, ec) : boost::json::value();
  const auto* ro = ec ? nullptr : rec.if_object();
  const auto backup = ro ? string_member(*ro, "backup") : std::string();
  if (!backup.empty() && exists(backup)) {
    if (auto b = read_file(backup)) {
      auto old = locate_servers(*b, *file);
      if (old.span) original = b->substr(old.span->begin, old.span->end - old.span->begin);
    }
  }
  std::string from = "the backup " + backup;
  if (original.empty()) {
    if (!ro)
      return fail("no record of adopting " + file->path +
                  " and no backup: nothing to restore from");
    auto cfg = load_config(string_member(*ro, "config"));
    if (!cfg.value) return fail("mcpmux's config does not load; cannot rebuild the server list");
    boost::json::object servers;
    if (const auto* names = ro->if_contains("servers"); names && names->is_array())
      for (const auto& n : names->get_array())
        for (const auto& s : cfg.value->servers)
          if (n.is_string() && s.name == n.get_string()) servers[s.name] = client_entry(s, *file);
    original = boost::json::serialize(servers);
    from = "mcpmux's config (the backup is gone)";
  }
  const auto restored = replace_span(*text, *list.span, original);
  fmt::print("{} ({}), from {}:\n{}\n", file->label, file->path, from, line_diff(*text, restored));
  if (args.dry_run) {
    fmt::print("(dry run: nothing written)\n");
    return exit_status::ok;
  }
  if (!confirmed(args)) return fail("nothing written");
  if (auto w = replace_file(file->path, *text, restored); !w) return w.error();
  ::unlink(record_path(file->path).c_str());
  fmt::print("unadopted: {} has its own servers again (mcpmux's config is unchanged)\n",
             file->path);
  return exit_status::ok;
}

}  // namespace mcpmux::cli
