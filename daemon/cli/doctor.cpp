// `mcpmux doctor`: checks what a working setup needs (config, socket directory, the one daemon,
// the servers' programs and states, secrets, the HTTP token, the systemd units) and prints each
// problem with the command that fixes it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <climits>
#include <cstdlib>
#include <map>
#include <set>
#include <variant>

#include "base/files.hpp"
#include "config/paths.hpp"
#include "config/secret_service.hpp"
#include "config/secrets.hpp"
#include "daemon/cli/commands.hpp"
#include "daemon/cli/spawn.hpp"
#include "daemon/cli/table.hpp"

extern char** environ;

namespace mcpmux::cli {
namespace {

enum class verdict { ok, warn, problem };

std::string_view to_string(verdict v) {
  return v == verdict::ok ? "ok" : v == verdict::warn ? "warn" : "problem";
}

/// One line of the report: what was checked, how it stands, and the command that fixes it.
struct finding {
  std::string check;
  verdict status;
  std::string detail;
  std::string fix;  ///< "" when there is nothing to run
};

using findings = std::vector<finding>;

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

/// A variable of another process of this user (/proc/PID/environ); nullopt when unset or
/// unreadable.
std::optional<std::string> environ_of(pid_t pid, std::string_view name) {
  auto text = read_text_file(fmt::format("/proc/{}/environ", pid), 1u << 20);
  if (!text) return std::nullopt;
  const std::string prefix = std::string(name) + "=";
  std::size_t at = 0;
  while (at < text->size()) {
    const auto end = std::min(text->find('\0', at), text->size());
    std::string_view var(text->data() + at, end - at);
    if (var.starts_with(prefix)) return std::string(var.substr(prefix.size()));
    at = end + 1;
  }
  return std::nullopt;
}

/// `command` as exec would find it on `path_var` ("" = not found). A name with a slash is taken
/// as it is.
std::string find_on_path(const std::string& command, const std::string& path_var) {
  if (command.find('/') != std::string::npos) return is_executable_file(command) ? command : "";
  std::size_t at = 0;
  while (at <= path_var.size()) {
    const auto end = std::min(path_var.find(':', at), path_var.size());
    std::string dir = path_var.substr(at, end - at);
    if (dir.empty()) dir = ".";  // an empty entry is the working directory, as for execvp
    if (const auto candidate = dir + "/" + command; is_executable_file(candidate)) return candidate;
    at = end + 1;
  }
  return "";
}

/// The first line `argv` prints on stdout (argv[0] found on PATH), waited for at most `limit`;
/// nullopt when it does not run or prints nothing in time.
std::optional<std::string> first_line_of(std::vector<std::string> argv, milliseconds limit) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  unique_fd read_end{out[0]};
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  ::posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, cargv[0], &fa, nullptr, cargv.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]);
  if (rc != 0) return std::nullopt;
  std::string text;
  const auto deadline = clock_type::now() + limit;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now());
    pollfd p{read_end.get(), POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[256];
    const auto n = ::read(read_end.get(), buf, sizeof buf);
    if (n <= 0 || text.size() > 4096) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.find('\n') != std::string::npos) break;
  }
  ::kill(pid, SIGKILL);  // the line is in, or the time is up: nothing more is wanted of it
  ::waitpid(pid, nullptr, 0);
  if (text.empty()) return std::nullopt;
  return text.substr(0, text.find('\n'));
}

/// `word` as one shell word: quoted when it holds anything but the characters a path mostly has,
/// so that a fix can be pasted as it is.
std::string sh_word(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                              "0123456789_./+-@%:,=") == std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// ---- the checks, in the order they are printed --------------------------------------------

std::string servers_text(std::size_t n) {
  return fmt::format("{} server{}", n, n == 1 ? "" : "s");
}

/// The config as the daemon loads it; its problems and warnings.
config_result check_config(findings& out) {
  const std::string path = resolve_config_path("");
  config_result r = load_config("");
  if (!r.value) {
    std::string detail = r.errors.empty() ? path + ": cannot be loaded" : r.errors[0].to_string();
    if (r.errors.size() > 1) detail += fmt::format(" (and {} more)", r.errors.size() - 1);
    out.push_back({"config", verdict::problem, detail,
                   fmt::format("edit {}, then: mcpmuxd --check-config", path)});
    return r;
  }
  if (r.value->source == "<default>")
    out.push_back({"config", verdict::ok,
                   fmt::format("no file at {}: the built-in default, {}", path,
                               servers_text(r.value->servers.size())),
                   ""});
  else
    out.push_back({"config", verdict::ok,
                   fmt::format("{}: {}", r.value->source, servers_text(r.value->servers.size())),
                   ""});
  for (const auto& w : r.warnings) out.push_back({"config", verdict::warn, w, ""});
  return r;
}

/// The directory of each socket a client would dial: it must be the user's own, private.
void check_socket_dirs(const context& ctx, findings& out) {
  std::vector<std::string> sockets{ctx.socket_path};
  if (ctx.default_socket)
    if (auto recorded = read_daemon_record(); recorded && *recorded != ctx.socket_path)
      sockets.push_back(*recorded);
  for (const auto& socket : sockets) {
    const std::string dir = parent_dir(socket);
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) {
      out.push_back({"socket directory", verdict::ok,
                     fmt::format("{} is not there yet (mcpmuxd makes it, mode 0700)", dir), ""});
      continue;
    }
    const auto checked = check_private_dir(dir);
    if (checked) {
      out.push_back({"socket directory", verdict::ok, dir + " is yours and private", ""});
      continue;
    }
    // Only the mode of a directory of one's own can be mended in place; anything else may be
    // another user's trap and is left alone.
    const bool own_dir = S_ISDIR(st.st_mode) && st.st_uid == ::getuid();
    out.push_back({"socket directory", verdict::problem, checked.error().message,
                   own_dir ? "chmod 700 " + sh_word(dir)
                           : "set daemon.socket (or $MCPMUX_SOCKET) to a path in a directory of "
                             "your own"});
  }
}

/// The daemon's status, when one answers.
std::optional<json::value> check_daemon(const context& ctx, findings& out) {
  auto client = open_client(ctx);
  std::optional<json::value> status;
  if (client) {
    auto answer = client->request("mcpmux/status", {});
    if (answer && answer->is_object()) {
      status = std::move(*answer);
    } else {
      out.push_back({"daemon", verdict::problem,
                     answer ? "unexpected answer to mcpmux/status" : answer.error().message, ""});
      return std::nullopt;
    }
  } else {
    // Nothing listening can be started; a refusal (another user's socket, a directory open to
    // others) is the socket directory's line to mend.
    const bool nothing_there = client.error().sys_errno != 0;
    out.push_back(
        {"daemon", verdict::problem, client.error().message,
         nothing_there ? "systemctl --user enable --now mcpmuxd.socket (or run: mcpmuxd)" : ""});
    return std::nullopt;
  }
  const auto pid = member_int(*status, "pid").value_or(0);
  const std::string version(member_string(*status, "version").value_or("?"));
  out.push_back({"daemon", verdict::ok,
                 fmt::format("mcpmuxd {} (pid {}) answers on {}", version, pid,
                             member_string(*status, "socket").value_or(ctx.socket_path)),
                 ""});
  if (version != MCPMUX_VERSION) {
    // Under systemd (it sets INVOCATION_ID) the manager restarts it; else a client's
    // `connect --spawn` starts the new one once the old is gone.
    const bool by_systemd = environ_of(static_cast<pid_t>(pid), "INVOCATION_ID").has_value();
    out.push_back({"version", verdict::problem,
                   fmt::format("mcpmuxd is {}, this mcpmux is {}", version, MCPMUX_VERSION),
                   by_systemd ? "systemctl --user restart mcpmuxd.service"
                              : fmt::format("kill {}; mcpmuxd &", pid)});
  } else {
    out.push_back({"version", verdict::ok, "mcpmuxd and mcpmux are both " MCPMUX_VERSION, ""});
  }
  return status;
}

/// Live mcpmuxd processes of this user with this home directory (a daemon with another HOME
/// serves another setup: a test's, a sandbox's).
std::vector<pid_t> daemons_of_this_user() {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  const std::string home = home_dir();
  while (const dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    const std::string proc = fmt::format("/proc/{}", pid);
    struct stat st {};
    if (::stat(proc.c_str(), &st) != 0 || st.st_uid != ::getuid()) continue;
    if (auto comm = read_text_file(proc + "/comm", 64); !comm || *comm != "mcpmuxd\n") continue;
    // A zombie has exited: only its parent has not collected it yet.
    auto stat_line = read_text_file(proc + "/stat", 4096);
    if (!stat_line) continue;
    if (auto paren = stat_line->rfind(')'); paren != std::string::npos &&
                                            paren + 2 < stat_line->size() &&
                                            (*stat_line)[paren + 2] == 'Z')
      continue;
    auto their_home = environ_of(static_cast<pid_t>(pid), "HOME");
    if (their_home && *their_home != home) continue;
    out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

/// The Unix socket paths a process listens on: its descriptors' socket inodes looked up among
/// the listening sockets of /proc/net/unix ("" when none is found).
std::string listening_paths(pid_t pid) {
  const auto table = read_text_file("/proc/net/unix", 64u << 20);
  if (!table) return "";
  // Num RefCount Protocol Flags Type St Inode Path; Flags 00010000 = listening.
  std::map<std::string, std::string> by_inode;
  for (std::string_view line : split_lines(*table)) {
    std::vector<std::string_view> fields;
    for (std::size_t at = 0; at < line.size() && fields.size() < 8;) {
      const auto start = line.find_first_not_of(' ', at);
      if (start == std::string_view::npos) break;
      const auto end =
          fields.size() == 7 ? line.size() : std::min(line.find(' ', start), line.size());
      fields.push_back(line.substr(start, end - start));
      at = end;
    }
    if (fields.size() == 8 && fields[3] == "00010000")
      by_inode[std::string(fields[6])] = std::string(fields[7]);
  }
  std::string out;
  const std::string fd_dir = fmt::format("/proc/{}/fd", pid);
  DIR* d = ::opendir(fd_dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    char target[64];
    const auto n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof target - 1);
    if (n <= 0) continue;
    const std::string_view link(target, static_cast<std::size_t>(n));
    if (!link.starts_with("socket:[") || !link.ends_with("]")) continue;
    const auto it = by_inode.find(std::string(link.substr(8, link.size() - 9)));
    if (it != by_inode.end()) out += (out.empty() ? "" : ", ") + it->second;
  }
  ::closedir(d);
  return out;
}

void check_one_daemon(const std::optional<json::value>& status, findings& out) {
  const auto pids = daemons_of_this_user();
  if (pids.size() <= 1) {
    std::string detail = pids.empty() ? "no mcpmuxd runs" : fmt::format("mcpmuxd pid {}", pids[0]);
    if (!pids.empty() && !status) detail += " (not answering on this socket)";
    out.push_back({"one daemon", verdict::ok, detail, ""});
    return;
  }
  // The one clients reach stays; without one answering, the oldest (lowest pid, mostly) stays.
  const pid_t keep =
      status ? static_cast<pid_t>(member_int(*status, "pid").value_or(pids[0])) : pids[0];
  std::string all, others;
  for (pid_t pid : pids) {
    const std::string on = listening_paths(pid);
    all += fmt::format("{}{}{}", all.empty() ? "" : ", ", pid, on.empty() ? "" : " on " + on);
    if (pid != keep) others += fmt::format(" {}", pid);
  }
  out.push_back({"one daemon", verdict::problem,
                 fmt::format("{} mcpmuxd run for this user (pids {}): agents reaching different "
                             "ones start each server twice",
                             pids.size(), all),
                 others.empty() ? "" : "kill" + others});
}

/// What installs the program a server's command names.
std::string install_hint(const std::string& name, const std::string& command) {
  const std::string_view base = base_name(command);
  if (base == "npx" || base == "node" || base == "npm") return "sudo apt install nodejs npm";
  if (base == "uvx" || base == "uv") return "pipx install uv";
  if (base == "docker") return "sudo apt install docker.io";
  return fmt::format("install {}, or set servers.{}.command to its full path", base, name);
}

/// node's major version from `node --version` ("v18.19.0"); nullopt when unreadable.
std::optional<int> node_major(const std::string& version) {
  if (version.size() < 2 || version[0] != 'v') return std::nullopt;
  const auto dot = version.find('.');
  auto major = parse_count(
      std::string_view(version).substr(1, dot == std::string::npos ? std::string::npos : dot - 1));
  if (!major || *major > INT_MAX) return std::nullopt;
  return static_cast<int>(*major);
}

/// Servers run by npx or node need Node.js 18 or later (the MCP SDKs' floor); the engines a
/// package states would need the registry, which a doctor does not ask. The version found, or a
/// finding about node.
std::variant<std::string, finding> check_node(const std::string& name,
                                              const std::string& path_var) {
  constexpr int min_node = 18;
  const std::string check = fmt::format("server {}", name);
  const std::string node = find_on_path("node", path_var);
  if (node.empty())
    return finding{check, verdict::problem, "node is not on its PATH", install_hint(name, "node")};
  const auto version = first_line_of({node, "--version"}, milliseconds(5'000));
  const auto major = version ? node_major(*version) : std::nullopt;
  if (!major)
    return finding{check, verdict::warn, node + " --version did not answer with a version", ""};
  if (*major < min_node)
    return finding{
        check, verdict::problem,
        fmt::format("{} is node {}; MCP servers need {} or later", node, *version, min_node),
        "install Node.js 18 or later (https://nodejs.org, or Debian's backports)"};
  return *version;
}

/// Each enabled stdio server's command on the PATH it runs with: its own env.PATH, else the
/// daemon's, else this shell's.
void check_commands(const config& cfg, const std::optional<json::value>& status, findings& out) {
  std::optional<std::string> daemon_path;
  if (status)
    if (auto pid = member_int(*status, "pid"))
      daemon_path = environ_of(static_cast<pid_t>(*pid), "PATH");
  const std::string own_path = env("PATH").value_or("/usr/bin:/bin");
  for (const auto& s : cfg.servers) {
    if (s.type != server_type::stdio || !s.enabled) continue;
    const auto own = s.env.find("PATH");
    const std::string path_var = own != s.env.end() ? own->second
                                 : daemon_path      ? *daemon_path
                                                    : own_path;
    const std::string whose = own != s.env.end() ? "its env.PATH"
                              : daemon_path      ? "the daemon's PATH"
                                                 : "this PATH";
    const std::string check = fmt::format("server {}", s.name);
    const std::string found = find_on_path(s.command, path_var);
    if (found.empty()) {
      // Found here but not where it runs: the full path is the fix.
      const std::string here = find_on_path(s.command, own_path);
      out.push_back({check, verdict::problem,
                     fmt::format("command {} is not found on {}", s.command, whose),
                     !here.empty() && path_var != own_path
                         ? fmt::format("set servers.{}.command = \"{}\"", s.name, here)
                         : install_hint(s.name, s.command)});
      continue;
    }
    std::string detail = fmt::format("command {} is {}", s.command, found);
    if (const auto base = base_name(s.command); base == "npx" || base == "node") {
      auto node = check_node(s.name, path_var);
      if (auto* f = std::get_if<finding>(&node)) {
        out.push_back(std::move(*f));
        continue;
      }
      detail += ", node " + std::get<std::string>(node);
    }
    out.push_back({check, verdict::ok, std::move(detail), ""});
  }
}

/// What the daemon says of each server: held back by trust, waiting for a login, failing.
void check_servers(const json::value& status, findings& out) {
  const json::value* servers = member(status, "servers");
  if (servers == nullptr || !servers->is_array()) return;
  std::size_t fine = 0;
  for (const json::value& s : servers->get_array()) {
    const std::string name(member_string(s, "name").value_or("?"));
    const std::string check = "server " + name;
    const std::string state(member_string(s, "state").value_or(""));
    const std::string error(member_string(s, "last_error").value_or(""));
    const auto* enabled = member(s, "enabled");
    if (enabled && enabled->is_bool() && !enabled->get_bool()) continue;
    const auto held = member_int(s, "quarantined").value_or(0);
    const auto* loop = member(s, "crash_looping");
    bool ok = true;
    if (held > 0) {
      const bool ask = member_string(s, "trust") == std::string_view("ask");
      out.push_back(
          {check, verdict::problem,
           fmt::format("{} item{} held back by trust{}", held, held == 1 ? "" : "s",
                       ask ? " (trust = \"ask\": not approved yet)" : ""),
           fmt::format("mcpmux trust {} --diff, then: mcpmux trust {} --all", name, name)});
      ok = false;
    }
    if (state == "needs_login") {
      out.push_back(
          {check, verdict::problem, "waiting for an OAuth login", "mcpmux auth login " + name});
      ok = false;
    } else if (loop && loop->is_bool() && loop->get_bool()) {
      out.push_back(
          {check, verdict::problem, "crash-looping: " + error,
           fmt::format("mcpmux logs {}; fix its command, then: mcpmux restart {}", name, name)});
      ok = false;
    } else if (state == "failed") {
      out.push_back({check, verdict::problem, "failed: " + error,
                     fmt::format("mcpmux logs {}; then: mcpmux restart {}", name, name)});
      ok = false;
    } else if (state == "backoff") {
      out.push_back({check, verdict::warn, "restarting after: " + error, "mcpmux logs " + name});
      ok = false;
    }
    if (ok) ++fine;
  }
  out.push_back(
      {"servers", verdict::ok,
       fmt::format("{} of {} running without a problem", fine, servers->get_array().size()), ""});
}

/// The names `${secret:NAME}` refers to in `text`.
void secret_names_in(std::string_view text, std::set<std::string>& names) {
  constexpr std::string_view opener = "${secret:";
  for (auto at = text.find(opener); at != std::string_view::npos; at = text.find(opener, at)) {
    at += opener.size();
    const auto close = text.find('}', at);
    if (close == std::string_view::npos) break;
    if (std::string name(text.substr(at, close - at)); is_secret_name(name))
      names.insert(std::move(name));
  }
}

/// When the config uses secrets: whether the Secret Service answers, and else whether the
/// secrets file holds them all.
void check_secrets(const config_result& loaded, findings& out) {
  const std::string config_path = resolve_config_path("");
  std::vector<std::string> files{config_path};
  if (loaded.value) {
    auto more = include_files(loaded.value->daemon, config_path);
    files.insert(files.end(), more.begin(), more.end());
  }
  std::set<std::string> names;
  for (const auto& file : files) {
    if (auto text = read_text_file(file, 16u << 20)) secret_names_in(*text, names);
  }
  if (names.empty()) return;
  const std::string path = secrets_path();
  std::string unreachable;
  if (env("MCPMUX_SECRETS_FILE")) {
    out.push_back({"secrets", verdict::ok, "kept in $MCPMUX_SECRETS_FILE " + path, ""});
    return;
  }
  if (!secret_service_wanted()) {
    unreachable = "no session bus: $DBUS_SESSION_BUS_ADDRESS is unset";
  } else {
    secret_service_result r;
    (void)secret_service_names(r);
    if (r.available) {
      out.push_back({"secrets", verdict::ok, "the Secret Service answers", ""});
      return;
    }
    unreachable = r.error;
  }
  const secrets_file file = read_secrets(path);
  std::string missing;
  for (const auto& n : names)
    if (!file.values.contains(n)) missing += (missing.empty() ? "" : ", ") + n;
  if (missing.empty()) {
    out.push_back({"secrets", verdict::warn,
                   fmt::format("the Secret Service does not answer ({}); every secret is in {}",
                               unreachable, path),
                   ""});
    return;
  }
  out.push_back(
      {"secrets", verdict::problem,
       fmt::format("the Secret Service does not answer ({}), and {} holds no {}{}", unreachable,
                   path, missing, file.error.empty() ? "" : " (" + file.error + ")"),
       fmt::format("run mcpmux in your desktop session (where the keyring answers), or: "
                   "mcpmux secret set {}",
                   *names.begin())});
}

/// The HTTP endpoint's token file: the user's own regular file that nobody else may read.
void check_http_token(const config& cfg, const std::optional<json::value>& status,
                      const std::string& socket_path, findings& out) {
  const auto& d = cfg.daemon;
  if (d.http.empty()) return;
  if (d.http_auth_none) {
    out.push_back({"http token", verdict::warn,
                   "http_auth = \"none\": every local user may use " + d.http,
                   "remove http_auth = \"none\" from [daemon]"});
    return;
  }
  std::string file = d.http_token_file;
  if (status)
    if (const auto* http = member(*status, "http"))
      if (auto f = member_string(*http, "token_file")) file = std::string(*f);
  if (file.empty()) file = parent_dir(socket_path) + "/http-token";
  struct stat st {};
  if (::lstat(file.c_str(), &st) != 0) {
    out.push_back(
        {"http token", verdict::ok, file + " is not there yet (mcpmuxd makes it, mode 0600)", ""});
    return;
  }
  std::string problem, fix;
  if (!S_ISREG(st.st_mode)) {
    problem = file + " is not a regular file";
    fix = "rm " + sh_word(file) + " (mcpmuxd makes a new one at start)";
  } else if (st.st_uid != ::getuid()) {
    problem = fmt::format("{} belongs to uid {}, not to you", file, st.st_uid);
    fix = "set [daemon] http_token_file to a file of your own";
  } else if ((st.st_mode & 077) != 0) {
    problem =
        fmt::format("{} has mode {:04o}: others may read the token", file, st.st_mode & 07777);
    fix = "chmod 600 " + sh_word(file);
  }
  if (problem.empty())
    out.push_back({"http token", verdict::ok, file + " is yours, mode 0600 or stricter", ""});
  else
    out.push_back({"http token", verdict::problem, problem, fix});
}

/// systemd's user unit search path: $SYSTEMD_UNIT_PATH (an empty entry or a trailing ':' adds
/// the defaults, as systemd does), else the defaults, first match wins.
std::vector<std::string> unit_dirs() {
  const std::vector<std::string> defaults{
      xdg_dir("XDG_CONFIG_HOME", ".config") + "/systemd/user", "/etc/systemd/user",
      xdg_dir("XDG_DATA_HOME", ".local/share") + "/systemd/user", "/usr/local/lib/systemd/user",
      "/usr/lib/systemd/user"};
  const auto given = env("SYSTEMD_UNIT_PATH");
  if (!given) return defaults;
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= given->size()) {
    const auto end = std::min(given->find(':', at), given->size());
    if (end == at)
      out.insert(out.end(), defaults.begin(), defaults.end());
    else
      out.push_back(given->substr(at, end - at));
    at = end + 1;
  }
  return out;
}

/// The program of the first ExecStart= of a unit file ("" when none): systemd's prefixes
/// (-, @, :, +, !) are not part of it.
std::string exec_start_program(const std::string& unit_file) {
  auto text = read_text_file(unit_file, 1u << 20);
  if (!text) return "";
  std::size_t at = 0;
  while (at < text->size()) {
    const auto end = std::min(text->find('\n', at), text->size());
    std::string_view line(text->data() + at, end - at);
    at = end + 1;
    if (!line.starts_with("ExecStart=")) continue;
    line.remove_prefix(10);
    while (!line.empty() && std::string_view("-@:+! \t").find(line.front()) != std::string::npos)
      line.remove_prefix(1);
    return std::string(line.substr(0, line.find_first_of(" \t")));
  }
  return "";
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

/// What the user's systemd manager says of mcpmuxd.socket ("enabled", "disabled", …), when
/// one runs (its private socket is in the runtime directory). Not asked when $SYSTEMD_UNIT_PATH
/// names the directories: the manager reads its own.
std::optional<std::string> manager_says_enabled() {
  const auto run = runtime_dir();
  if (env("SYSTEMD_UNIT_PATH") || !run) return std::nullopt;
  if (struct stat st{}; ::stat((*run + "/systemd/private").c_str(), &st) != 0) return std::nullopt;
  return first_line_of({"systemctl", "--user", "is-enabled", "mcpmuxd.socket"},
                       milliseconds(5'000));
}

/// The links `systemctl --user enable` leaves, which need no running manager to be read.
bool enabled_by_links(const std::vector<std::string>& dirs) {
  for (const auto& dir : dirs)
    for (const char* link :
         {"/sockets.target.wants/mcpmuxd.socket", "/default.target.wants/mcpmuxd.service"})
      if (struct stat st{}; ::lstat((dir + link).c_str(), &st) == 0) return true;
  return false;
}

/// mcpmuxd.service and mcpmuxd.socket installed, enabled (as the manager says, else as the
/// *.wants/ links say) and running the mcpmuxd next to this mcpmux.
void check_units(findings& out) {
  const auto dirs = unit_dirs();
  auto find_unit = [&](const std::string& unit) -> std::string {
    for (const auto& dir : dirs)
      if (struct stat st{}; ::stat((dir + "/" + unit).c_str(), &st) == 0) return dir + "/" + unit;
    return "";
  };
  const std::string service = find_unit("mcpmuxd.service");
  const std::string socket = find_unit("mcpmuxd.socket");
  if (service.empty() || socket.empty()) {
    out.push_back({"systemd units", verdict::problem,
                   fmt::format("{} not installed in any user unit directory",
                               service.empty() && socket.empty() ? "mcpmuxd.service and .socket"
                               : service.empty()                 ? "mcpmuxd.service"
                                                                 : "mcpmuxd.socket"),
                   "meson install -C build (see README), then: systemctl --user daemon-reload"});
    return;
  }
  if (const auto manager = manager_says_enabled()) {
    if (*manager == "enabled")
      out.push_back({"systemd units", verdict::ok,
                     service + " and mcpmuxd.socket, enabled (systemctl --user)", ""});
    else
      out.push_back({"systemd units", verdict::problem,
                     fmt::format("mcpmuxd.socket is installed but {} (systemctl --user)", *manager),
                     "systemctl --user enable --now mcpmuxd.socket"});
  } else if (enabled_by_links(dirs)) {
    out.push_back({"systemd units", verdict::ok, service + " and mcpmuxd.socket, enabled", ""});
  } else {
    out.push_back({"systemd units", verdict::problem,
                   "mcpmuxd.socket is installed but not enabled (no link in sockets.target.wants)",
                   "systemctl --user enable --now mcpmuxd.socket"});
  }

  const std::string runs = exec_start_program(service);
  const std::string ours = daemon_program();
  if (runs.empty() || real_path(runs) != real_path(ours)) {
    out.push_back({"systemd units", verdict::problem,
                   fmt::format("{} runs {}, not {} (next to this mcpmux)", service,
                               runs.empty() ? "nothing (no ExecStart=)" : runs, ours),
                   fmt::format("systemctl --user edit --full mcpmuxd.service: ExecStart={} "
                               "(or install this build)",
                               ours)});
  }
}

void print_text(const findings& all) {
  std::size_t problems = 0, warnings = 0;
  for (const auto& f : all) {
    print_visible(stdout, "{:<8} {}: {}\n", to_string(f.status), f.check, f.detail);
    if (!f.fix.empty()) print_visible(stdout, "{:<8}   fix: {}\n", "", f.fix);
    problems += f.status == verdict::problem;
    warnings += f.status == verdict::warn;
  }
  fmt::print("{} problem{}, {} warning{}\n", problems, problems == 1 ? "" : "s", warnings,
             warnings == 1 ? "" : "s");
}

void print_json(const findings& all) {
  json::array out;
  for (const auto& f : all)
    out.push_back(json::object{{"check", f.check},
                               {"status", to_string(f.status)},
                               {"detail", f.detail},
                               {"fix", f.fix.empty() ? json::value(nullptr) : json::value(f.fix)}});
  print_pretty(out);
}

}  // namespace

outcome<exit_status> run_doctor(const context& ctx, const command_args& args) {
  findings all;
  const config_result loaded = check_config(all);
  check_socket_dirs(ctx, all);
  const auto status = check_daemon(ctx, all);
  check_one_daemon(status, all);
  if (loaded.value) check_commands(*loaded.value, status, all);
  if (status) check_servers(*status, all);
  check_secrets(loaded, all);
  if (loaded.value) check_http_token(*loaded.value, status, ctx.socket_path, all);
  check_units(all);

  if (args.json)
    print_json(all);
  else
    print_text(all);
  const bool wrong = std::any_of(all.begin(), all.end(),
                                 [](const finding& f) { return f.status == verdict::problem; });
  return wrong ? exit_status::failure : exit_status::ok;
}

}  // namespace mcpmux::cli
