// A stdio server's sandbox from its config: the system read-only, the home directory hidden but
// for what the server is given, mcpmux's own files hidden whatever the config says.
#include "sandbox/policy.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>

namespace mcpmux {
namespace {

using kind = sandbox_mount::kind;

bool exists(const std::string& p, bool* dir = nullptr) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return false;
  if (dir) *dir = S_ISDIR(st.st_mode);
  return true;
}

// Whether `path` is `dir` or inside it.
bool within(const std::string& path, const std::string& dir) {
  if (dir.empty()) return false;
  if (dir == "/") return true;
  return path == dir ||
         (path.size() > dir.size() && path.starts_with(dir) && path[dir.size()] == '/');
}

std::string parent(const std::string& p) {
  const auto slash = p.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
}

// The directories a server cannot see unless something is mounted there: the home directory, and
// /tmp and /run (with $XDG_RUNTIME_DIR), which are empty and private in every sandbox.
bool hidden_by_default(const std::string& p, const sandbox_context& ctx) {
  return within(p, ctx.home) || within(p, "/tmp") || within(p, "/run");
}

// The directory of a program file a server is given (`node ~/mcp/server/dist/index.js`) that it
// needs whole: the nearest one up that looks like a project, else the file's own directory.
std::string project_of(const std::string& file, const sandbox_context& ctx) {
  static constexpr std::array markers = {"package.json", "node_modules", "pyproject.toml",
                                         "setup.py", ".git"};
  const std::string start = parent(file);
  for (std::string dir = start; dir != "/" && dir != ctx.home; dir = parent(dir))
    for (const char* m : markers)
      if (exists(dir + "/" + m)) return dir;
  return start;
}

// The installation a program under the home directory belongs to (~/.nvm/versions/node/v20 for
// ~/.nvm/versions/node/v20/bin/npx): visible read-only, so that its interpreter and libraries are.
std::vector<std::string> installation_of(const std::string& program, const sandbox_context& ctx) {
  const std::string dir = parent(program);
  if (!dir.ends_with("/bin")) return {dir};
  const std::string prefix = parent(dir);
  if (prefix == ctx.home) return {dir};
  if (prefix == ctx.home + "/.local") return {dir, prefix + "/lib"};
  return {prefix};
}

// The launcher caches a program writes into, each the server's own (under cache_root/<server>):
// one server cannot plant a package that another one would run.
struct launcher_cache {
  const char* program;
  const char* inside;  ///< relative to the home directory
  const char* name;    ///< under cache_root/<server>/
};
constexpr std::array<launcher_cache, 6> launcher_caches = {{
    {"npx", ".npm", "npm"},
    {"npm", ".npm", "npm"},
    {"pnpm", ".local/share/pnpm", "pnpm"},
    {"uvx", ".cache/uv", "uv-cache"},
    {"uvx", ".local/share/uv", "uv-data"},
    {"uv", ".cache/uv", "uv-cache"},
}};

std::string base_name(const std::string& p) {
  const auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// The path of a `file://` root as the config loader writes it (percent-encoded), "" for any other.
std::string uri_path(const std::string& root) {
  constexpr std::string_view scheme = "file://";
  if (!root.starts_with(scheme) || root.size() <= scheme.size() || root[scheme.size()] != '/')
    return {};
  std::string p;
  for (std::size_t i = scheme.size(); i < root.size(); ++i) {
    const auto hex = [&](std::size_t at) {
      const char c = root[at];
      return c >= '0' && c <= '9'   ? c - '0'
             : c >= 'a' && c <= 'f' ? c - 'a' + 10
             : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                    : -1;
    };
    if (root[i] == '%' && i + 2 < root.size() && hex(i + 1) >= 0 && hex(i + 2) >= 0) {
      p.push_back(static_cast<char>(hex(i + 1) * 16 + hex(i + 2)));
      i += 2;
    } else {
      p.push_back(root[i]);
    }
  }
  return p;
}

}  // namespace

std::vector<std::string> paths_in_args(const std::vector<std::string>& args,
                                       const std::string& home) {
  std::vector<std::string> out;
  for (const auto& arg : args) {
    std::string p = arg;
    if (auto eq = arg.find('='); eq != std::string::npos && arg.starts_with('-'))
      p = arg.substr(eq + 1);
    if (p.starts_with("~/"))
      p = home + p.substr(1);
    else if (p == "~")
      p = home;
    if (!p.starts_with('/')) continue;
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (exists(p)) out.push_back(std::move(p));
  }
  return out;
}

sandbox_policy make_policy(const server_settings& server, const sandbox_context& ctx) {
  sandbox_policy p;
  const auto& s = server.sandbox;
  p.mode = s.mode.value_or(sandbox_mode::standard);
  if (!p.active()) return p;
  const bool strict = p.mode == sandbox_mode::strict;
  if (s.network)
    p.network = *s.network;
  else
    p.network.mode = strict ? network_setting::kind::none : network_setting::kind::all;
  p.limits = default_limits;
  if (s.memory_max) p.limits.memory_max = *s.memory_max;
  if (s.cpu_max) p.limits.cpu_max = *s.cpu_max;
  if (s.tasks_max) p.limits.tasks_max = *s.tasks_max;
  if (s.files_max) p.limits.files_max = *s.files_max;

  // What the server is given. Under `strict` it may read it, not write it.
  const kind given = strict ? kind::read_only : kind::read_write;
  std::vector<sandbox_mount> grants;
  auto grant = [&](kind how, const std::string& path, std::string why, std::string source = {}) {
    if (how == kind::read_only && source.empty() && !hidden_by_default(path, ctx)) return;
    grants.push_back({how, path, source.empty() ? path : std::move(source), std::move(why)});
  };
  if (within(ctx.helper, ctx.home) || hidden_by_default(ctx.helper, ctx))
    grant(kind::read_only, ctx.helper, "mcpmux-sandbox");
  if (!ctx.program.empty() && hidden_by_default(ctx.program, ctx))
    for (auto& dir : installation_of(ctx.program, ctx)) grant(kind::read_only, dir, "command");
  const std::string launcher = base_name(ctx.program);
  for (const auto& c : launcher_caches)
    if (launcher == c.program && !ctx.cache_root.empty())
      grant(kind::read_write, ctx.home + "/" + c.inside, fmt::format("{} cache", launcher),
            ctx.cache_root + "/" + server.name + "/" + c.name);
  if (!server.cwd.empty() && exists(server.cwd)) grant(given, server.cwd, "cwd");
  for (auto& path : paths_in_args(server.args, ctx.home)) {
    bool dir = false;
    exists(path, &dir);
    if (dir)
      grant(given, path, "args");
    else
      grant(kind::read_only, project_of(path, ctx), "args (a file's project)");
  }
  for (const auto& root : server.roots)
    if (auto path = uri_path(root); !path.empty() && exists(path)) grant(given, path, "roots");
  // A path that does not exist (yet) is left out: bubblewrap cannot mount it.
  for (const auto& path : s.allow_read)
    if (exists(path)) grant(kind::read_only, path, "allow_read");
  for (const auto& path : s.allow_write)
    if (exists(path)) grant(kind::read_write, path, "allow_write");
  // A parent before what is inside it, so that the inner mount is not covered.
  std::stable_sort(grants.begin(), grants.end(),
                   [](const sandbox_mount& a, const sandbox_mount& b) {
                     return std::count(a.path.begin(), a.path.end(), '/') <
                            std::count(b.path.begin(), b.path.end(), '/');
                   });
  p.mounts = std::move(grants);

  // mcpmux's own files last: nothing mounted before can show them. What is inside a hidden
  // directory is hidden with it (and could not be mounted over: the directory is read-only).
  std::vector<std::string> own = ctx.private_paths;
  std::sort(own.begin(), own.end());
  own.erase(std::unique(own.begin(), own.end()), own.end());
  std::vector<std::string> hidden_dirs;
  for (const auto& path : own) {
    bool dir = false;
    if (!path.starts_with('/') || !exists(path, &dir)) continue;
    if (std::any_of(hidden_dirs.begin(), hidden_dirs.end(),
                    [&](const std::string& d) { return within(path, d); }))
      continue;
    if (dir) hidden_dirs.push_back(path);
    p.mounts.push_back({dir ? kind::empty_dir : kind::empty_file, path, path, "mcpmux's own"});
  }
  if (p.network.mode == network_setting::kind::hosts) {
    const std::string proxy = fmt::format("http://127.0.0.1:{}", proxy_port_inside);
    for (const char* var : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
                            "all_proxy", "npm_config_proxy", "npm_config_https_proxy"})
      p.env[var] = proxy;
    p.env["NO_PROXY"] = "";
    p.env["no_proxy"] = "";
    p.env["NODE_USE_ENV_PROXY"] = "1";  // Node ≥ 24 (and 22.21): fetch goes through the proxy too
  }
  p.chdir = server.cwd;
  p.home = ctx.home;
  return p;
}

std::string why_hidden(const sandbox_policy& p, const std::string& path) {
  if (!p.active()) return {};
  std::string verdict;
  const bool hidden_home = within(path, p.home) || within(path, "/tmp") || within(path, "/run");
  if (hidden_home) verdict = "hidden: allow_read or allow_write in its table shows it";
  // The last mount that covers the path decides, as in the sandbox.
  for (const auto& m : p.mounts) {
    if (!within(path, m.path)) continue;
    const bool hides = m.how == kind::empty_dir || m.how == kind::empty_file;
    verdict = hides ? "mcpmux's own: never visible to a server" : "";
  }
  return verdict;
}

std::string describe_network(const network_setting& n) {
  switch (n.mode) {
    case network_setting::kind::all:
      return "all (the host's network, loopback included)";
    case network_setting::kind::none:
      return "none (a network namespace of its own: nothing reachable)";
    case network_setting::kind::hosts: {
      std::string out = "only through mcpmux's filtering proxy, to:";
      for (const auto& h : n.hosts) out += " " + h;
      return out;
    }
  }
  return "unknown";
}

std::string describe(const sandbox_policy& p) {
  if (!p.active()) return "sandbox: off (the server runs with the user's full rights)\n";
  std::string out = fmt::format("sandbox: {}\n", to_string(p.mode));
  out +=
      "system: read-only; /tmp, /run private and empty; own /dev and /proc (own PID space); "
      "the home directory hidden\n";
  for (const auto& m : p.mounts) {
    const char* how = m.how == kind::read_only    ? "read-only "
                      : m.how == kind::read_write ? "read-write"
                                                  : "hidden    ";
    out += fmt::format("  {} {}{}  ({})\n", how, m.path,
                       m.source != m.path ? " <- " + m.source : std::string(), m.why);
  }
  out += "network: " + describe_network(p.network) + "\n";
  out += "limits: " + describe(p.limits) + "\n";
  out += "process: no new privileges, no capabilities, a seccomp filter, killed with the daemon\n";
  return out;
}

std::string summary(const sandbox_policy& p) {
  if (!p.active()) return "off";
  const char* net = p.network.mode == network_setting::kind::all    ? "network all"
                    : p.network.mode == network_setting::kind::none ? "network none"
                                                                    : "network hosts";
  return fmt::format("{} · {}", to_string(p.mode), net);
}

}  // namespace mcpmux
