// The daemon's side of the sandbox: probes the host once, turns a stdio server's start into a
// sandboxed one (sandbox/policy.hpp, sandbox/bwrap.hpp), keeps what each start needs alive, and
// shows it all: `sandbox` in each server's status entry and `mcpmux/sandbox {server}`.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/control.hpp"
#include "sandbox/bwrap.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/host.hpp"
#include "sandbox/policy.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

/// How to start one stdio server: its command line (the helper, bubblewrap and the server, or
/// the server alone) and what lives as long as the process.
struct server_start {
  std::string command;
  std::vector<std::string> args;
  /// Why the process ended, in words ("killed: memory limit 512 MiB" when a limit stopped it).
  /// It holds the start's cgroup and network proxy, and lets them go once it has told.
  std::function<std::string(int status)> describe_exit;
};

class server_sandboxes final : public control_extension {
 public:
  /// `private_paths`: mcpmux's own files, never visible to a server; `runtime_dir`: a private
  /// directory for the network proxies' sockets.
  server_sandboxes(boost::asio::io_context& io, std::vector<std::string> private_paths,
                   std::string runtime_dir);
  ~server_sandboxes() override;

  /// The start of `server`: sandboxed as its config says; unsandboxed with a warning where the
  /// host cannot (mode "default"); an error where it must be and cannot ("required").
  result<server_start> prepare(const server_config& server);
  /// The start of a code-mode runner (sandbox/runner_command.hpp): always sandboxed, its own
  /// cgroup where the host has them; an error that says why where the host cannot sandbox.
  result<server_start> prepare_runner();

  std::optional<result<json::value>> handle(std::string_view method,
                                            const json::object& params) override;
  void describe(const std::string& server, json::object& entry) const override;
  void on_log(const std::string& server, const std::string& line) override;

 private:
  struct server_state;
  sandbox_context context_for(const server_config& server) const;
  server_state& state(const std::string& server);

  struct start_resources;
  /// Why a start's process ended (the OOM killer, when its group says so); lets `keep` go then.
  static std::function<std::string(int)> exit_reason(std::shared_ptr<start_resources> keep);
  void take_probe();
  void report_host() const;
  result<void> attach_limits(const std::string& server, sandbox_launch& launch,
                             start_resources& keep);
  result<void> attach_proxy(const server_config& server, sandbox_launch& launch,
                            start_resources& keep);

  boost::asio::io_context& io_;
  sandbox_host host_;
  /// The try of bubblewrap's namespaces, on a thread of its own so that the daemon's start does
  /// not wait ~10 ms for it; taken in when it is done (a start before that assumes they work).
  std::future<std::string> namespaces_;
  cgroup_host cgroups_;
  std::vector<std::string> private_paths_;
  std::string runtime_dir_;
  std::uint64_t starts_ = 0;
  std::string helper_;
  std::map<std::string, std::shared_ptr<server_state>> servers_;
};

/// Where mcpmux-sandbox is: beside the running program (a build tree, /usr/bin), else in
/// ../libexec/mcpmux (an installed package). "" when neither has it.
std::string find_sandbox_helper();

/// What a code-mode runner's process group may hold, memory included (a cgroup's limit).
constexpr std::uint64_t runner_memory_bytes = 512ull << 20;

}  // namespace mcpmux
