#include "daemon/sandboxes.hpp"

#include <unistd.h>

#include <array>
#include <climits>

#include "base/files.hpp"
#include "base/log.hpp"
#include "config/paths.hpp"
#include "sandbox/net_proxy.hpp"
#include "sandbox/runner_command.hpp"
#include "transports/stdio_transport.hpp"

namespace mcpmux {
namespace {

std::string self_dir() {
  std::array<char, PATH_MAX> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? parent_dir(std::string(buf.data(), static_cast<std::size_t>(n))) : std::string();
}

// The absolute paths a line names ("open '/home/u/.ssh/id_rsa'", "ENOENT /x/y:").
std::vector<std::string> paths_named(std::string_view line) {
  std::vector<std::string> out;
  for (std::size_t i = line.find('/'); i != std::string_view::npos; i = line.find('/', i)) {
    if (i > 0 && line[i - 1] != ' ' && line[i - 1] != '\'' && line[i - 1] != '"' &&
        line[i - 1] != '(' && line[i - 1] != '=' && line[i - 1] != '`') {
      i = line.find_first_of(" '\"", i);
      if (i == std::string_view::npos) break;
      continue;
    }
    std::size_t end = line.find_first_of(" '\"`),", i);
    if (end == std::string_view::npos) end = line.size();
    std::string p(line.substr(i, end - i));
    while (p.size() > 1 && (p.back() == ':' || p.back() == '.')) p.pop_back();
    out.push_back(std::move(p));
    i = end;
  }
  return out;
}

// A line of a server's stderr that reports the sandbox saying no.
bool reports_denial(std::string_view line) {
  static constexpr std::array<std::string_view, 8> words = {"EACCES",
                                                            "EPERM",
                                                            "EROFS",
                                                            "Permission denied",
                                                            "permission denied",
                                                            "Read-only file system",
                                                            "read-only file system",
                                                            "Operation not permitted"};
  for (auto w : words)
    if (line.find(w) != std::string_view::npos) return true;
  return false;
}

}  // namespace

std::string find_sandbox_helper() {
  const std::string dir = self_dir();
  if (dir.empty()) return {};
  for (const std::string& candidate :
       {dir + "/mcpmux-sandbox", parent_dir(dir) + "/libexec/mcpmux/mcpmux-sandbox"})
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  return {};
}

/// What status shows of one server's sandbox.
struct server_sandboxes::server_state {
  sandbox_policy policy;
  bool sandboxed = false;  ///< the last start was sandboxed
  std::string warning;     ///< why the last start was not, though it should have been
  std::string limits;      ///< the limits and what enforces each
  std::uint64_t denied = 0;
  std::string last_denied;
  /// The running start's group and proxy, while it runs (for what they count).
  std::weak_ptr<start_resources> running;
};

/// What one sandboxed start holds until its process is reaped: its cgroup (removed then, the
/// processes left in it killed) and its network proxy.
struct server_sandboxes::start_resources {
  std::optional<server_group> group;
  std::unique_ptr<net_proxy> proxy;
  ~start_resources() {
    if (proxy) proxy->stop();
  }
};

server_sandboxes::server_sandboxes(boost::asio::io_context& io,
                                   std::vector<std::string> private_paths, std::string runtime_dir)
    : io_(io),
      private_paths_(std::move(private_paths)),
      runtime_dir_(std::move(runtime_dir)),
      helper_(find_sandbox_helper()) {
  stdio_options bwrap;  // looked up as a server's command is, in the daemon's PATH
  bwrap.command = "bwrap";
  host_ = locate_sandbox_host(program_path(bwrap));
  if (host_.usable() && helper_.empty())
    host_.problem = "mcpmux-sandbox is not installed beside mcpmuxd (reinstall mcpmux)";
  if (host_.usable()) {
    namespaces_ = std::async(std::launch::async, try_namespaces, host_.bwrap);
    cgroups_ = probe_cgroups();
    if (!cgroups_.usable()) logger("sandbox").warn("{}", cgroups_.problem);
  }
  report_host();
}

// Says once, at start or when the try of the namespaces comes back, that servers cannot be
// sandboxed here.
void server_sandboxes::report_host() const {
  if (host_.usable()) return;
  logger("sandbox").warn(
      "servers cannot be sandboxed here: {}; sandbox = \"default\" starts them unsandboxed, "
      "\"required\" does not start them",
      host_.problem);
}

void server_sandboxes::take_probe() {
  if (!namespaces_.valid() ||
      namespaces_.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
    return;
  host_.problem = namespaces_.get();
  host_.namespaces = host_.problem.empty();
  report_host();
}

server_sandboxes::~server_sandboxes() = default;

server_sandboxes::server_state& server_sandboxes::state(const std::string& server) {
  auto& s = servers_[server];
  if (!s) s = std::make_shared<server_state>();
  return *s;
}

sandbox_context server_sandboxes::context_for(const server_config& server) const {
  sandbox_context ctx;
  ctx.home = home_dir();
  ctx.private_paths = private_paths_;
  ctx.cache_root = cache_dir() + "/sandbox";
  stdio_options so;
  so.command = server.command;
  so.env = server.env;
  so.cwd = server.cwd;
  ctx.program = program_path(so);
  ctx.helper = helper_;
  return ctx;
}

result<server_start> server_sandboxes::prepare(const server_config& server) {
  take_probe();
  auto& st = state(server.name);
  const sandbox_context ctx = context_for(server);
  st.policy = make_policy(server, ctx);
  st.sandboxed = false;
  st.warning.clear();
  server_start start;
  start.command = server.command;
  start.args = server.args;
  if (!st.policy.active()) return start;
  if (!host_.usable()) {
    if (st.policy.mode == sandbox_mode::required)
      return failure("not started: sandbox = \"required\", and " + host_.problem);
    st.warning = "not sandboxed: " + host_.problem;
    return start;
  }
  if (ctx.program.empty())
    return failure("cannot start \"" + server.command + "\": command not found in PATH");
  // The caches a server writes into are made before it starts: bubblewrap mounts what exists.
  for (const auto& m : st.policy.mounts)
    if (m.source != m.path)
      if (auto made = make_dirs(m.source, 0700); !made)
        return failure("cannot make the sandbox's cache: " + made.error().message);
  sandbox_launch launch;
  launch.bwrap = host_.bwrap;
  launch.helper = helper_;
  launch.landlock = host_.landlock_abi > 0;
  auto keep = std::make_shared<start_resources>();
  if (auto r = attach_limits(server.name, launch, *keep); !r) return r.error();
  if (auto r = attach_proxy(server, launch, *keep); !r) return r.error();
  std::vector<std::string> command{ctx.program};
  command.insert(command.end(), server.args.begin(), server.args.end());
  auto full = sandboxed_command(st.policy, ctx, launch, command);
  start.command = full.front();
  start.args.assign(full.begin() + 1, full.end());
  // The exit is described before the group goes: whether the OOM killer struck is in it.
  start.describe_exit = exit_reason(keep);
  st.running = keep;
  st.sandboxed = true;
  return start;
}

std::function<std::string(int)> server_sandboxes::exit_reason(
    std::shared_ptr<start_resources> keep) {
  return [keep = std::move(keep)](int status) mutable {
    std::string reason = keep->group ? keep->group->kill_reason() : std::string();
    reason = reason.empty() ? describe_wait_status(status) : "killed: " + reason;
    keep.reset();
    return reason;
  };
}

result<server_start> server_sandboxes::prepare_runner() {
  take_probe();
  if (!host_.usable())
    return failure("code mode runs programs only in a sandbox, and " + host_.problem);
  runner_launch launch;
  launch.bwrap = host_.bwrap;
  launch.helper = helper_;
  stdio_options node;
  node.command = "node";
  launch.node = program_path(node);
  if (launch.node.empty()) return failure("code mode needs Node.js (node is not in PATH)");
  // runner.mjs lies beside mcpmux-sandbox (the build tree's copy, or libexec/mcpmux).
  launch.script = parent_dir(helper_) + "/runner.mjs";
  if (::access(launch.script.c_str(), R_OK) != 0)
    return failure("the code-mode runner " + launch.script + " is missing (reinstall mcpmux)");
  auto keep = std::make_shared<start_resources>();
  if (cgroups_.usable()) {
    resource_limits limits;
    limits.memory_max = runner_memory_bytes;
    if (auto group = create_group(cgroups_, "code-run-" + std::to_string(++starts_), limits)) {
      launch.cgroup_procs = group->procs_files();
      keep->group.emplace(std::move(*group));
    }
  }
  auto full = runner_command(launch);
  server_start start;
  start.command = full.front();
  start.args.assign(full.begin() + 1, full.end());
  start.describe_exit = exit_reason(std::move(keep));
  return start;
}

result<void> server_sandboxes::attach_limits(const std::string& server, sandbox_launch& launch,
                                             start_resources& keep) {
  auto& st = state(server);
  const resource_limits& limits = st.policy.limits;
  st.limits = mcpmux::describe(cgroups_, limits);
  if (!cgroups_.usable()) return {};
  auto group = create_group(cgroups_, server, limits);
  if (!group) {
    // Limits that cannot be had are shown as missing, not pretended; the server still starts.
    st.limits = mcpmux::describe(cgroup_host{}, limits) + " (" + group.error().message + ")";
    return {};
  }
  launch.cgroup_procs = group->procs_files();
  st.limits = group->description();
  keep.group.emplace(std::move(*group));
  return {};
}

result<void> server_sandboxes::attach_proxy(const server_config& server, sandbox_launch& launch,
                                            start_resources& keep) {
  const auto& policy = state(server.name).policy;
  if (policy.network.mode != network_setting::kind::hosts) return {};
  // A server with a list and no proxy would reach nothing at all: it is not started.
  if (runtime_dir_.empty()) return failure("no runtime directory for the network proxy");
  if (auto made = make_private_dir(runtime_dir_); !made)
    return failure("cannot make the network proxy's directory: " + made.error().message);
  net_proxy_options po;
  po.socket_path = runtime_dir_ + "/" + std::to_string(++starts_) + ".sock";
  po.network = policy.network.hosts;
  po.server = server.name;
  po.on_refused = [weak =
                       std::weak_ptr<server_state>(servers_[server.name])](const net_refusal& r) {
    auto st = weak.lock();
    if (!st) return;
    ++st->denied;
    st->last_denied = "network: " + r.host + ":" + std::to_string(r.port) + " refused (" +
                      r.reason + "); `network` in the server's table allows it";
  };
  keep.proxy = std::make_unique<net_proxy>(io_, std::move(po));
  if (auto r = keep.proxy->start(); !r) return r.error();
  launch.proxy_socket = runtime_dir_ + "/" + std::to_string(starts_) + ".sock";
  return {};
}

std::optional<result<json::value>> server_sandboxes::handle(std::string_view method,
                                                            const json::object& params) {
  if (method != "mcpmux/sandbox") return std::nullopt;
  take_probe();
  const auto* name = params.if_contains("server");
  if (!name || !name->is_string())
    return result<json::value>(
        failure("mcpmux/sandbox needs {\"server\": NAME}", rpc_code::invalid_params));
  const std::string server(name->get_string());
  auto it = servers_.find(server);
  if (it == servers_.end())
    return result<json::value>(
        failure("server \"" + server + "\" is not a stdio server that has been started",
                rpc_code::invalid_params));
  const auto& st = *it->second;
  std::string text = mcpmux::describe(st.policy);
  if (st.sandboxed) {
    text += "enforced: " + st.limits + "\n";
    if (host_.landlock_abi > 0)
      text += "landlock: ABI " + std::to_string(host_.landlock_abi) +
              ", writes refused beyond what the mounts allow (a second layer)\n";
  }
  if (!st.warning.empty()) text += "warning: " + st.warning + "\n";
  json::object out{{"server", server},
                   {"mode", to_string(st.policy.mode)},
                   {"sandboxed", st.sandboxed},
                   {"text", text}};
  if (!host_.usable()) out["host_problem"] = host_.problem;
  return result<json::value>(json::value(std::move(out)));
}

void server_sandboxes::describe(const std::string& server, json::object& entry) const {
  auto it = servers_.find(server);
  if (it == servers_.end()) return;
  const auto& st = *it->second;
  json::object s{
      {"mode", to_string(st.policy.mode)},
      {"sandboxed", st.sandboxed},
      {"summary", st.sandboxed ? summary(st.policy)
                               : std::string(st.policy.active() ? "not sandboxed" : "off")},
      {"denied", st.denied}};
  if (st.sandboxed) s["limits"] = st.limits;
  if (auto running = st.running.lock(); running && running->group)
    if (auto reached = running->group->limits_reached(); !reached.empty())
      s["limits_reached"] = reached;
  if (!st.warning.empty()) s["warning"] = st.warning;
  if (!st.last_denied.empty()) s["last_denied"] = st.last_denied;
  entry["sandbox"] = std::move(s);
}

void server_sandboxes::on_log(const std::string& server, const std::string& line) {
  // What the server itself wrote (upstream notes its stderr as "stderr: …").
  constexpr std::string_view prefix = "stderr: ";
  if (!line.starts_with(prefix)) return;
  const std::string_view text = std::string_view(line).substr(prefix.size());
  auto it = servers_.find(server);
  if (it == servers_.end() || !it->second->sandboxed) return;
  auto& st = *it->second;
  // A path the host has and the sandbox hides reads as "not found" to the server: name it.
  if (text.find("ENOENT") != std::string_view::npos ||
      text.find("No such file") != std::string_view::npos ||
      text.find("no such file") != std::string_view::npos) {
    for (const auto& path : paths_named(text)) {
      if (::access(path.c_str(), F_OK) != 0) continue;
      if (auto why = why_hidden(st.policy, path); !why.empty()) {
        ++st.denied;
        st.last_denied = path + ": " + why;
        return;
      }
    }
  }
  if (!reports_denial(text)) return;
  ++st.denied;
  st.last_denied = std::string(text.substr(0, 300));
}

}  // namespace mcpmux
