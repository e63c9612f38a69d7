#include "daemon/sandboxes.hpp"

#include <unistd.h>

#include <array>
#include <climits>

#include "base/files.hpp"
#include "base/log.hpp"
#include "config/paths.hpp"
#include "sandbox/bwrap.hpp"
#include "transports/stdio_transport.hpp"

namespace mcpmux {
namespace {

std::string self_dir() {
  std::array<char, PATH_MAX> buf{};
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  return n > 0 ? parent_dir(std::string(buf.data(), static_cast<std::size_t>(n))) : std::string();
}

// A line of a server's stderr that reports the sandbox saying no.
bool reports_denial(std::string_view line) {
  static constexpr std::array<std::string_view, 8> words = {
      "EACCES", "EPERM", "EROFS", "Permission denied", "permission denied",
      "Read-only file system", "read-only file system", "Operation not permitted"};
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
  std::uint64_t denied = 0;
  std::string last_denied;
};

server_sandboxes::server_sandboxes(std::vector<std::string> private_paths)
    : private_paths_(std::move(private_paths)), helper_(find_sandbox_helper()) {
  const char* path = ::getenv("PATH");
  host_ = probe_sandbox_host(path ? path : "");
  if (host_.usable() && helper_.empty())
    host_.problem = "mcpmux-sandbox is not installed beside mcpmuxd (reinstall mcpmux)";
  if (!host_.usable())
    logger("sandbox").warn("servers cannot be sandboxed here: {}; sandbox = \"default\" starts them "
             "unsandboxed, \"required\" does not start them",
             host_.problem);
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
    if (m.source != m.path) {
      std::string error;
      if (!make_dirs(m.source, 0700, &error))
        return failure("cannot make the sandbox's cache: " + error);
    }
  sandbox_launch launch;
  launch.bwrap = host_.bwrap;
  launch.helper = helper_;
  std::vector<std::string> command{ctx.program};
  command.insert(command.end(), server.args.begin(), server.args.end());
  auto full = sandboxed_command(st.policy, ctx, launch, command);
  start.command = full.front();
  start.args.assign(full.begin() + 1, full.end());
  st.sandboxed = true;
  return start;
}

std::optional<result<json::value>> server_sandboxes::handle(std::string_view method,
                                                            const json::object& params) {
  if (method != "mcpmux/sandbox") return std::nullopt;
  const auto* name = params.if_contains("server");
  if (!name || !name->is_string())
    return result<json::value>(failure("mcpmux/sandbox needs {\"server\": NAME}",
                                       rpc_code::invalid_params));
  const std::string server(name->get_string());
  auto it = servers_.find(server);
  if (it == servers_.end())
    return result<json::value>(failure(
        "server \"" + server + "\" is not a stdio server that has been started", 
        rpc_code::invalid_params));
  const auto& st = *it->second;
  std::string text = mcpmux::describe(st.policy);
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
  json::object s{{"mode", to_string(st.policy.mode)},
                 {"sandboxed", st.sandboxed},
                 {"summary", st.sandboxed ? summary(st.policy)
                                          : std::string(st.policy.active() ? "not sandboxed"
                                                                           : "off")},
                 {"denied", st.denied}};
  if (!st.warning.empty()) s["warning"] = st.warning;
  if (!st.last_denied.empty()) s["last_denied"] = st.last_denied;
  entry["sandbox"] = std::move(s);
}

void server_sandboxes::on_log(const std::string& server, const std::string& line) {
  auto it = servers_.find(server);
  if (it == servers_.end() || !it->second->sandboxed || !reports_denial(line)) return;
  ++it->second->denied;
  it->second->last_denied = line.substr(0, 300);
}

}  // namespace mcpmux
