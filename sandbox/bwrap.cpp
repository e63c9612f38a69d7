// bubblewrap does the namespaces and the mounts: Debian packages it, Flatpak and Claude Code's
// sandbox-runtime run on it, and it works unprivileged wherever user namespaces are allowed.
#include "sandbox/bwrap.hpp"

namespace mcpmux {

std::vector<std::string> bwrap_arguments(const sandbox_policy& p, const sandbox_context& ctx,
                                         const sandbox_launch& launch,
                                         const std::vector<std::string>& command) {
  std::vector<std::string> a;
  auto add = [&](std::initializer_list<std::string> words) {
    for (const auto& w : words) a.push_back(w);
  };
  // Every namespace bubblewrap knows (user where it can, PID, IPC, UTS, cgroup, network), the
  // host's network back unless the server may not have it. --new-session: no ioctl on the
  // daemon's terminal; --die-with-parent: nothing outlives the daemon.
  add({"--unshare-all"});
  if (p.network.mode == network_setting::kind::all) add({"--share-net"});
  add({"--die-with-parent", "--new-session", "--cap-drop", "ALL"});
  add({"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs",
       "/run"});
  // /etc/resolv.conf often points into /run: name lookups keep working with the host's network.
  if (p.network.mode == network_setting::kind::all)
    add({"--ro-bind-try", "/run/systemd/resolve", "/run/systemd/resolve"});
  if (!ctx.home.empty() && ctx.home != "/") add({"--tmpfs", ctx.home});
  for (const auto& m : p.mounts) {
    switch (m.how) {
      case sandbox_mount::kind::read_only:
        add({"--ro-bind", m.source, m.path});
        break;
      case sandbox_mount::kind::read_write:
        add({"--bind", m.source, m.path});
        break;
      case sandbox_mount::kind::empty_dir:
        add({"--tmpfs", m.path, "--remount-ro", m.path});
        break;
      case sandbox_mount::kind::empty_file:
        add({"--ro-bind", "/dev/null", m.path});
        break;
    }
  }
  if (p.network.mode == network_setting::kind::hosts)
    add({"--bind", launch.proxy_socket, proxy_socket_inside});
  for (const auto& [k, v] : p.env) add({"--setenv", k, v});
  if (!p.chdir.empty()) add({"--chdir", p.chdir});
  a.push_back("--");
  // Landlock under the mounts: writes only where the mounts allow them (what the server was
  // given, its caches, the private /tmp and home, /dev and /proc).
  if (launch.landlock) {
    add({launch.helper, "confine"});
    for (const char* always : {"/tmp", "/dev", "/proc"}) add({"--write", always});
    if (!ctx.home.empty() && ctx.home != "/") add({"--write", ctx.home});
    for (const auto& m : p.mounts)
      if (m.how == sandbox_mount::kind::read_write) add({"--write", m.path});
    a.push_back("--");
  }
  if (p.network.mode == network_setting::kind::hosts)
    add({launch.helper, "forward", "--port", std::to_string(proxy_port_inside), "--socket",
         proxy_socket_inside, "--"});
  a.insert(a.end(), command.begin(), command.end());
  return a;
}

std::vector<std::string> sandboxed_command(const sandbox_policy& p, const sandbox_context& ctx,
                                           const sandbox_launch& launch,
                                           const std::vector<std::string>& command) {
  std::vector<std::string> out{launch.helper, "enter"};
  for (const auto& f : launch.cgroup_procs) {
    out.push_back("--cgroup");
    out.push_back(f);
  }
  if (p.limits.files_max) {
    out.push_back("--files");
    out.push_back(std::to_string(p.limits.files_max));
  }
  out.push_back("--");
  out.push_back(launch.bwrap);
  auto args = bwrap_arguments(p, ctx, launch, command);
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

}  // namespace mcpmux
