// `mcpmux agents`, `mcpmux adopt AGENT|FILE`, `mcpmux unadopt AGENT|FILE`: moving an MCP
// client onto the gateway and back. Adopting imports the client's servers into mcpmux's config
// (the importer's rules; a server mcpmux already runs is not added twice), replaces the client's
// server list with one entry that runs `mcpmux connect`, keeps every other byte of its file, and
// keeps a timestamped backup beside it; the daemon reloads and the servers are up before the
// command returns. Credentials move to the secret store first. Claude Code's per-project lists
// each get an entry with a profile of their own. Unadopting puts the client's own lists back,
// from the backup (then removed: it holds the old plain text), else from what mcpmux's config
// holds of those servers. A file that does not parse, or that changed while we worked, is never
// written.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <ctime>
#include <thread>

#include "base/files.hpp"
#include "base/redact.hpp"
#include "config/agents.hpp"
#include "config/config.hpp"
#include "config/import.hpp"
#include "config/paths.hpp"
#include "config/secrets.hpp"
#include "daemon/cli/commands.hpp"
#include "daemon/cli/spawn.hpp"
#include "daemon/cli/table.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux::cli {
namespace {

constexpr std::size_t max_client_file = 16u << 20;
constexpr auto settle_wait = std::chrono::seconds(30);

// The clients' files for this user and the current directory.
std::vector<agent_file> agent_files_here() {
  return known_agent_files(home_dir(), xdg_dir("XDG_CONFIG_HOME", ".config"), current_dir());
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// This program's absolute path, so that a desktop agent without the user's PATH finds it.
std::string self_path() {
  auto self = self_executable();
  return self.empty() ? std::string("mcpmux") : self;
}

// AGENT (an id of `mcpmux agents`; the first of its files that exists) or FILE.
outcome<agent_file> resolve(const std::string& target) {
  if (target.find('/') != std::string::npos || exists(target))
    return agent_file_for_path(absolute_path(target));
  const auto files = agent_files_here();
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
  auto text = read_text_file(path, max_client_file);
  if (!text) return fail(path + ": " + text.error().message);
  return std::move(*text);
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

// The client's file named on the command line, and its text.
outcome<std::pair<agent_file, std::string>> open_target(const std::string& target) {
  auto file = resolve(target);
  if (!file) return file.error();
  auto text = read_file(file->path);
  if (!text) return text.error();
  return std::pair{std::move(*file), std::move(*text)};
}

// Writes `text` over `path` if the file still holds `expected` (refusing a concurrent edit).
outcome<void> replace_file(const std::string& path, std::string_view expected,
                           const std::string& text) {
  auto now = read_file(path);
  if (!now) return now.error();
  if (*now != expected)
    return fail(path + " changed while mcpmux was working on it; nothing was written to it",
                "Run the command again.");
  if (auto written = write_file_atomically(path, text); !written)
    return fail(written.error().message);
  return {};
}

// What `--socket` an agent's entry names: the daemon's socket (the one that answers, else where
// it would start), when the socket rule would not find it from an agent's bare environment
// (docs/finding-the-daemon.md); "" when it would.
std::string socket_for_agents(const context& ctx, const std::string& config_path) {
  std::string daemon_socket = ctx.socket_path;
  if (auto client = open_client(ctx)) {
    if (auto st = client->request("mcpmux/status", {}))
      if (auto s = member_string(*st, "socket"); s && !s->empty()) daemon_socket = std::string(*s);
  }
  const auto cfg = load_config(config_path);
  const auto bare = locate_socket("", cfg.value ? &cfg.value->daemon : nullptr, agent_default_env);
  return bare.path == daemon_socket ? std::string() : daemon_socket;
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
    print_visible(stdout, "no daemon answers on {}: the servers start with it\n", ctx.socket_path);
    return;
  }
  auto reloaded = client->request("mcpmux/reload", {});
  if (!reloaded) {
    print_visible(stderr, "mcpmux: reload failed: {}\n", reloaded.error().message);
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
      for (const auto& l : lines) print_visible(stdout, "{}\n", l);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

outcome<exit_status> run_agents(const context&, const command_args& args) {
  boost::json::array found;
  std::vector<std::vector<cell>> rows;
  const auto add = [&](const agent_file& f, const std::string& servers, const std::string& state,
                       bool adopted) {
    boost::json::object o{{"agent", f.agent},     {"label", f.label},   {"path", f.path},
                          {"project", f.project}, {"servers", servers}, {"adopted", adopted}};
    if (!f.local_project.empty()) o["local_project"] = f.local_project;
    found.push_back(std::move(o));
    rows.push_back({{f.agent, {}}, {f.label, {}}, {servers, {}}, {state, {}}, {f.path, {}}});
  };
  for (const auto& f : agent_files_here()) {
    if (!exists(f.path)) continue;
    auto text = read_file(f.path);
    if (!text) {
      add(f, "?", "unreadable", false);
      continue;
    }
    const auto lists = find_server_lists(*text, f);
    if (!lists.error.empty()) {
      add(f, "?", "cannot read it: " + lists.error, false);
      continue;
    }
    if (lists.lists.empty() || !lists.lists.front().local_project.empty()) add(f, "0", "-", false);
    // One row a list: the file's own, then each project's (Claude Code's local scope).
    for (auto l : lists.lists) {
      l.local_scopes = false;
      const bool adopted = locate_servers(*text, l).adopted;
      const auto plan = plan_adoption(*text, l, "", "config.toml", "mcpmux");
      auto servers = adopted ? "-" : std::to_string(plan.servers.size());
      if (!adopted && !plan.left.empty()) servers += " (+" + std::to_string(plan.left.size()) + ")";
      add(l, servers, adopted ? "uses mcpmux" : "-", adopted);
    }
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

outcome<exit_status> run_adopt(const context& ctx, const command_args& args) {
  auto opened = open_target(args.target);
  if (!opened) return opened.error();
  const auto* file = &opened->first;
  const auto* text = &opened->second;
  const std::string config_path = resolve_config_path(args.config.value_or(""));
  auto read = read_text_file_if_exists(config_path, 4u << 20);
  if (!read) return fail(config_path + ": " + read.error().message);
  const std::string existing = read->value_or("");

  auto plan = plan_adoption(
      *text, *file, existing, config_path, self_path(), process_env,
      args.keep_plaintext ? credentials::keep_plaintext : credentials::to_secret_store,
      socket_for_agents(ctx, config_path));
  if (!plan.error.empty()) return fail(plan.error);
  if (!plan.nothing.empty()) {
    print_visible(stdout, "{}: {}\n", file->path, plan.nothing);
    return exit_status::ok;
  }
  // The diff shows the lines that leave the client's file: no token of theirs is printed.
  for (const auto& m : plan.secrets) add_secret(m.value);
  print_visible(stdout, "{} ({}):\n{}\n", file->label, file->path,
                redact(line_diff(*text, plan.client_text)));
  if (!plan.added.empty())
    print_visible(stdout, "{}: adds {}\n", config_path, fmt::join(plan.added, ", "));
  for (const auto& l : plan.lists)
    if (!l.profile.empty())
      print_visible(stdout, "{}: project {} sees its servers through [profiles.{}]\n", config_path,
                    l.project, l.profile);
  for (const auto& name : plan.left)
    print_visible(stdout, "left in {}: \"{}\" (cannot be carried over)\n", file->path, name);
  std::vector<std::string> moved;
  for (const auto& m : plan.secrets) moved.push_back(m.name);
  if (!moved.empty())
    print_visible(stdout, "credentials to the secret store, named as ${{secret:NAME}} in {}: {}\n",
                  config_path, fmt::join(moved, ", "));
  for (const auto& n : plan.notes) print_visible(stderr, "mcpmux: note: {}\n", n);
  if (args.dry_run) {
    fmt::print("(dry run: nothing written)\n");
    return exit_status::ok;
  }
  if (!confirmed(args)) return fail("nothing written");
  // An edit made while the question waited: nothing is written anywhere (checked again right
  // before the file itself is replaced).
  if (auto now = read_file(file->path); !now || *now != *text)
    return fail(file->path + " changed while mcpmux was working on it; nothing was written",
                "Run the command again.");
  if (plan.entries_updated) {  // the first adoption's backup and record stay what unadopt uses
    if (auto w = replace_file(file->path, *text, plan.client_text); !w) return w.error();
    print_visible(stdout, "updated: {} finds the daemon at its socket again\n", file->path);
    return exit_status::ok;
  }

  // The secrets first: the config that names them does not load without them.
  if (!plan.secrets.empty()) {
    const auto kept = keep_moved_secrets(plan.secrets);
    if (!kept.unavailable.empty()) print_visible(stderr, "mcpmux: {}\n", kept.unavailable);
    if (!kept.error.empty())
      return fail(kept.error + "; nothing written",
                  "Fix it, or adopt with --keep-plaintext to copy the tokens into the config.");
    print_visible(stdout, "moved to {}: {}\n", kept.where, fmt::join(moved, ", "));
  }
  if (plan.config_text != existing)
    if (auto written = write_file_atomically(config_path, plan.config_text); !written)
      return fail(written.error().message);
  const std::string backup = file->path + ".mcpmux-backup-" + timestamp();
  if (auto written = write_file_atomically(backup, *text); !written)
    return fail(written.error().message);
  ::chmod(backup.c_str(), 0600);  // it may hold the client's secrets
  if (auto w = replace_file(file->path, *text, plan.client_text); !w) return w.error();
  const auto strings = [](const std::vector<std::string>& v) {
    boost::json::array a;
    for (const auto& x : v) a.emplace_back(x);
    return a;
  };
  boost::json::array lists;
  for (const auto& l : plan.lists)
    lists.push_back(boost::json::object{
        {"project", l.project}, {"servers", strings(l.servers)}, {"profile", l.profile}});
  const boost::json::object record{
      {"file", file->path},    {"backup", backup},          {"servers", strings(plan.servers)},
      {"config", config_path}, {"lists", std::move(lists)}, {"profiles", strings(plan.profiles)}};
  if (auto written = write_file_atomically(record_path(file->path), boost::json::serialize(record));
      !written)
    print_visible(stderr, "mcpmux: warning: {}\n", written.error().message);
  print_visible(stdout, "adopted: {} now runs mcpmux (backup: {})\n", file->path, backup);
  if (!moved.empty())
    print_visible(
        stdout,
        "the backup still holds those credentials in plain text: `mcpmux unadopt` restores from "
        "it, then removes it\n");
  reload_and_wait(ctx, plan.servers);
  return exit_status::ok;
}

outcome<exit_status> run_unadopt(const context& ctx, const command_args& args) {
  auto opened = open_target(args.target);
  if (!opened) return opened.error();
  const auto* file = &opened->first;
  const auto* text = &opened->second;
  // What adopt kept: the backup, and which of mcpmux's servers the client's became.
  auto rec_text = read_text_file(record_path(file->path), 1u << 20);
  boost::system::error_code ec;
  const auto rec = rec_text ? boost::json::parse(*rec_text, ec) : boost::json::value();
  const auto* ro = ec ? nullptr : rec.if_object();
  const auto backup = ro ? string_member(*ro, "backup") : std::string();
  std::optional<std::string> backup_text;
  if (!backup.empty())
    if (auto b = read_text_file(backup, max_client_file)) backup_text = std::move(*b);
  const auto strings = [&](const boost::json::object* o, std::string_view key) {
    std::vector<std::string> out;
    if (const auto* n = o ? o->if_contains(key) : nullptr; n && n->is_array())
      for (const auto& x : n->get_array())
        if (x.is_string()) out.emplace_back(x.get_string());
    return out;
  };
  const auto names = strings(ro, "servers");  // every server adopted
  const auto profiles = strings(ro, "profiles");
  // Which servers each list became (a record of an older adopt has "servers" alone).
  auto own = names;
  project_servers local;
  if (const auto* l = ro ? ro->if_contains("lists") : nullptr; l && l->is_array()) {
    for (const auto& x : l->get_array()) {
      const auto* o = x.if_object();
      if (!o) continue;
      const auto project = string_member(*o, "project");
      (project.empty() ? own : local[project]) = strings(o, "servers");
    }
  }
  const auto config_path =
      ro ? string_member(*ro, "config") : resolve_config_path(args.config.value_or(""));
  auto cfg = load_config_file(config_path, keep_variables());
  const auto servers = cfg.value ? cfg.value->servers : std::vector<server_config>{};

  std::string why;
  const auto restored = plan_restoration(*text, *file, backup_text, servers, own, &why, local);
  if (restored.empty()) {
    if (why.find("nothing to undo") != std::string::npos) {
      print_visible(stdout, "{}: {}\n", file->path, why);
      return exit_status::ok;
    }
    return fail(file->path + ": " + why);
  }
  print_visible(stdout, "{} ({}), from {}:\n{}\n", file->label, file->path,
                backup_text ? "the backup " + backup : std::string("mcpmux's config (no backup)"),
                redact(line_diff(*text, restored)));  // the secrets the config resolved
  std::string config_after;
  if (args.remove && !names.empty()) {
    auto ctext = read_text_file(config_path, 4u << 20);
    if (!ctext) return fail(config_path + ": " + ctext.error().message);
    std::vector<std::string> tables;
    for (const auto& n : names) tables.push_back("servers." + n);
    for (const auto& p : profiles) tables.push_back("profiles." + p);
    config_after = remove_tables(*ctext, tables);
    print_visible(stdout, "{}: removes {}\n", config_path, fmt::join(tables, ", "));
  }
  if (args.dry_run) {
    fmt::print("(dry run: nothing written)\n");
    return exit_status::ok;
  }
  if (!confirmed(args)) return fail("nothing written");
  if (auto w = replace_file(file->path, *text, restored); !w) return w.error();
  ::unlink(record_path(file->path).c_str());
  // Restored from it, the backup has done its job; it held the tokens in plain text.
  if (backup_text && ::unlink(backup.c_str()) == 0) fmt::print("removed the backup {}\n", backup);
  if (!config_after.empty()) {
    if (auto written = write_file_atomically(config_path, config_after); !written)
      return fail(written.error().message);
    reload_and_wait(ctx, {});
  }
  print_visible(stdout, "unadopted: {} has its own servers again{}\n", file->path,
                config_after.empty() ? " (mcpmux keeps its copies; --remove drops them)" : "");
  return exit_status::ok;
}

}  // namespace mcpmux::cli
