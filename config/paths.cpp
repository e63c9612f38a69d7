#include "config/paths.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/url/encode.hpp>
#include <boost/url/rfc/pchars.hpp>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "base/files.hpp"
#include "config/config.hpp"

namespace mcpmux {

std::optional<std::string> getenv_nonempty(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::string home_dir() {
  if (auto h = getenv_nonempty("HOME")) return *h;
  // `env -i mcpmuxd` or a bare service manager may not set HOME; the passwd entry still knows.
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (::getpwuid_r(::getuid(), &pw, buf, sizeof buf, &found) == 0 && found && found->pw_dir)
    return found->pw_dir;
  return "/";
}

std::string expand_tilde(std::string p) {
  if (p == "~" || p.starts_with("~/")) return home_dir() + p.substr(1);
  return p;
}

std::string parent_dir(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string current_dir() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

std::string absolute_path(const std::string& path) {
  return path.empty() || path[0] == '/' ? path : current_dir() + "/" + path;
}

std::string xdg_dir(const char* env_name, std::string_view fallback) {
  if (auto v = getenv_nonempty(env_name); v && v->front() == '/') return *v;
  return fmt::format("{}/{}", home_dir(), fallback);
}

std::string resolve_config_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return expand_tilde(explicit_path);
  if (auto env = getenv_nonempty("MCPMUX_CONFIG")) return expand_tilde(*env);
  return xdg_dir("XDG_CONFIG_HOME", ".config") + "/mcpmux/config.toml";
}

std::optional<std::string> runtime_dir(env_lookup lookup) {
  if (auto run = lookup("XDG_RUNTIME_DIR"); run && !run->empty() && run->front() == '/')
    return *run;
  // What pam_systemd makes for every login (and what $XDG_RUNTIME_DIR names when it is set);
  // only the user's own private directory, so that another user cannot have made it first.
  std::string conventional = fmt::format("/run/user/{}", ::getuid());
  if (check_private_dir(conventional)) return conventional;
  return std::nullopt;
}

socket_location locate_socket(const std::string& explicit_path, const daemon_config* daemon,
                              env_lookup lookup) {
  if (!explicit_path.empty()) return {expand_tilde(explicit_path), socket_origin::flag};
  if (auto env = lookup("MCPMUX_SOCKET"); env && !env->empty())
    return {expand_tilde(*env), socket_origin::environment};
  if (daemon && !daemon->socket.empty()) return {daemon->socket, socket_origin::config};
  if (auto run = runtime_dir(lookup))
    return {*run + "/mcpmux/mcpmux.sock", socket_origin::runtime_dir};
  // No runtime directory (a login without systemd-logind): a per-user directory in /tmp. Another
  // user may have made it first: the listener and every client check it is ours and private.
  return {fmt::format("/tmp/mcpmux-{}/mcpmux.sock", ::getuid()), socket_origin::tmp};
}

std::string resolve_socket_path(const std::string& explicit_path, const daemon_config* daemon,
                                env_lookup lookup) {
  return locate_socket(explicit_path, daemon, lookup).path;
}

std::optional<std::string> agent_default_env(std::string_view name) {
  for (std::string_view kept : {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"})
    if (name == kept) return process_env(name);
  return std::nullopt;
}

std::string daemon_record_path() {
  return home_dir() + "/.local/state/mcpmux/daemon-socket";
}

result<> write_daemon_record(const std::string& socket_path) {
  return write_file_atomically(daemon_record_path(), socket_path + "\n", durability::cache);
}

std::optional<std::string> read_daemon_record() {
  const std::string path = daemon_record_path();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  char buf[512];
  ssize_t n = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::getuid())
    n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 1 || static_cast<std::size_t>(n) == sizeof buf || buf[n - 1] != '\n' || buf[0] != '/')
    return std::nullopt;
  return std::string(buf, static_cast<std::size_t>(n - 1));
}

void remove_daemon_record(const std::string& socket_path) {
  if (read_daemon_record() == socket_path) ::unlink(daemon_record_path().c_str());
}

std::string cache_dir() {
  return xdg_dir("XDG_CACHE_HOME", ".cache") + "/mcpmux";
}

std::string state_dir() {
  return xdg_dir("XDG_STATE_HOME", ".local/state") + "/mcpmux";
}

// RFC 3986 pchars and '/' stay literal; everything else (space, %, #, ?, control and non-ASCII
// bytes) is percent-encoded, by Boost.URL.
std::string file_uri(std::string_view path) {
  static constexpr auto path_chars = boost::urls::pchars + boost::urls::grammar::lut_chars('/');
  return "file://" + boost::urls::encode(path, path_chars);
}

}  // namespace mcpmux
