#include "config/paths.hpp"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <boost/url/encode.hpp>
#include <boost/url/rfc/pchars.hpp>
#include <cstdlib>

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

std::string xdg_dir(const char* env_name, std::string_view fallback) {
  if (auto v = getenv_nonempty(env_name); v && v->front() == '/') return *v;
  return fmt::format("{}/{}", home_dir(), fallback);
}

std::string resolve_config_path(const std::string& explicit_path) {
  if (!explicit_path.empty()) return expand_tilde(explicit_path);
  if (auto env = getenv_nonempty("MCPMUX_CONFIG")) return expand_tilde(*env);
  return xdg_dir("XDG_CONFIG_HOME", ".config") + "/mcpmux/config.toml";
}

std::string resolve_socket_path(const std::string& explicit_path, const daemon_config* daemon) {
  if (!explicit_path.empty()) return expand_tilde(explicit_path);
  if (auto env = getenv_nonempty("MCPMUX_SOCKET")) return expand_tilde(*env);
  if (daemon && !daemon->socket.empty()) return daemon->socket;
  if (auto run = getenv_nonempty("XDG_RUNTIME_DIR"); run && run->front() == '/')
    return *run + "/mcpmux/mcpmux.sock";
  // No runtime dir (e.g. a login without systemd-logind): a per-user directory in /tmp, which the
  // listener creates with mode 0700 and checks ownership of.
  return fmt::format("/tmp/mcpmux-{}/mcpmux.sock", ::getuid());
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
