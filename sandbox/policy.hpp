// What a sandboxed stdio server may reach (docs/security.md), worked out from its config and the
// user's paths: the mounts, the network and the limits. Pure: no system call but stat, so tests
// step it by hand; sandbox/bwrap.hpp turns it into a command line.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "sandbox/limits.hpp"

namespace mcpmux {

/// The limits a server gets when its config names none: enough for a browser-driving server
/// (Chromium runs ~100 threads), small enough to stop a runaway (an 8 GiB allocation, a fork
/// bomb, a descriptor leak).
inline constexpr resource_limits default_limits{4ull << 30, 0, 1024, 8192};

/// Facts about this user and daemon that a policy depends on.
struct sandbox_context {
  std::string home;  ///< hidden, but for what a server is given
  /// mcpmux's own files and directories (config, state, secrets, OAuth logins, runtime
  /// directory, socket, token files): never visible, whatever the config says.
  std::vector<std::string> private_paths;
  /// Per-server caches live under it (`<cache_root>/<server>/npm`, ...): a server writes its
  /// own launcher cache, never one another server runs code from.
  std::string cache_root;
  std::string program;  ///< the server's command, resolved in PATH (absolute)
  std::string helper;   ///< the mcpmux-sandbox program (absolute)
};

/// One mount, in the order bubblewrap makes them (a later one covers an earlier one).
struct sandbox_mount {
  enum class kind {
    read_only,   ///< `source` visible read-only at `path`
    read_write,  ///< `source` visible and writable at `path`
    empty_dir,   ///< an empty tmpfs over `path` (hides a directory)
    empty_file,  ///< /dev/null over `path` (hides a file or socket)
  };
  kind how = kind::read_only;
  std::string path;
  std::string source;  ///< = path unless a cache is mounted elsewhere
  std::string why;     ///< for `mcpmux sandbox NAME`: "cwd", "args", "allow_read", "npx cache", …
};

/// Where the proxy's socket is inside a sandbox with a network list, and the port its forwarder
/// listens on (loopback of the sandbox's own network namespace).
inline constexpr const char* proxy_socket_inside = "/run/mcpmux/proxy.sock";
inline constexpr int proxy_port_inside = 3128;

/// A server's effective sandbox.
struct sandbox_policy {
  sandbox_mode mode = sandbox_mode::standard;
  network_setting network;
  std::vector<sandbox_mount> mounts;  ///< over the read-only system, /dev, /proc, /tmp and /run
  resource_limits limits;
  std::map<std::string, std::string> env;  ///< added to the server's environment
  std::string chdir;                       ///< the server's working directory ("" = unchanged)
  std::string home;                        ///< the home directory, hidden
  bool active() const { return mode != sandbox_mode::off; }
};

/// The policy of a stdio server (its `sandbox.mode` resolved by the config loader).
sandbox_policy make_policy(const server_settings& server, const sandbox_context& ctx);

/// The paths a server is given in its arguments: absolute (or `~/`) paths that exist, alone or
/// after `=` (`--root=/srv/x`).
std::vector<std::string> paths_in_args(const std::vector<std::string>& args,
                                       const std::string& home);

/// Why `path` (which exists on the host) is not what the server sees, for a denial shown in
/// status: "mcpmux's own: never visible", "hidden: allow_read or allow_write shows it"; "" when
/// the server sees it.
std::string why_hidden(const sandbox_policy& p, const std::string& path);

/// The network for people.
std::string describe_network(const network_setting& n);
/// The policy for people (`mcpmux sandbox NAME`): one line per mount, the network, the limits.
std::string describe(const sandbox_policy& p);
/// One short line for status: "default · network all · memory 4 GiB, tasks 1024, files 8192".
std::string summary(const sandbox_policy& p);

}  // namespace mcpmux
