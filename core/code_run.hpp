// Code mode's run (docs/code-mode.md): one program of one client, from mcpmux__run_code to its
// answer. The run owns the runner process that executes the program (a fresh one, sandboxed,
// from the daemon's code_runner_factory) and speaks its NDJSON protocol; each tool call the
// program makes becomes an ordinary call (core/call.hpp) that the client's session starts with
// the run as its caller, so the profile, filters, trust, limits, confirmation, redaction and
// audit apply to it as to any call.
//
// The runner is untrusted: a program that escaped its vm can write any line. So the run checks
// every line itself — the tool is one the program was given, the call count is within the
// limit, the line is bounded, the ids are fresh — and ends the run at its own deadline, a little
// after the runner's. Every end goes through finish() (the program's answer, or an error that
// names what went wrong) or cancel() (the client cancelled or left): the inner calls still in
// flight are cancelled, the runner is stopped, and the client is answered at most once.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/call.hpp"
#include "transports/transport.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

/// What one program may use; the runner holds the first four, the run checks calls and ends
/// the run `grace` after `wall` whatever the runner says.
struct code_limits {
  std::chrono::milliseconds wall{30000};
  std::chrono::milliseconds cpu{10000};
  std::size_t output_bytes = 64 * 1024;
  std::size_t calls = 100;
  std::chrono::milliseconds grace{2000};
  std::size_t program_bytes = 256 * 1024;  ///< the program's own text
};

/// A tool a program may call: its exposed name, split into the `tools.SERVER.TOOL` path.
struct code_tool {
  std::string name, server, tool;
};

class code_run;

/// What a run needs of the session that started it.
class code_host {
 public:
  virtual ~code_host() = default;
  /// Starts a tools/call of `name` (exposed) with `arguments` as an ordinary call whose caller
  /// is `run`, under the client id `id`; null when the profile does not show that tool (hidden,
  /// held by trust, gone since the program started).
  virtual std::shared_ptr<call> start_inner_call(const std::shared_ptr<code_run>& run,
                                                 json::value id, std::string_view name,
                                                 json::value arguments) = 0;
  /// The program's answer (a CallToolResult: isError when it failed), once.
  virtual void run_answered(code_run& run, json::object result) = 0;
  /// The client: its capabilities and questions (an inner call's confirmation), and the audit.
  virtual call_caller& client() = 0;
};

class code_run final : public transport_events,
                       public call_caller,
                       public std::enable_shared_from_this<code_run> {
 public:
  /// `runner`: the runner's connection, not yet started. `id`: the run's id (audit).
  /// `self_tool`: mcpmux__run_code's exposed name, refused inside a program.
  code_run(boost::asio::io_context& io, std::weak_ptr<code_host> host,
           std::shared_ptr<transport> runner, std::string id, std::string self_tool,
           code_limits limits);
  ~code_run() override;
  code_run(const code_run&) = delete;
  code_run& operator=(const code_run&) = delete;

  /// Sends `program` with the tools it may call; the deadline starts.
  void start(std::string_view program, const std::vector<code_tool>& tools);
  /// The client cancelled or left: inner calls cancelled, the runner stopped, nobody answered.
  void cancel();
  const std::string& id() const { return id_; }
  /// Tool calls the program made (each counted once, answered or not).
  std::size_t calls() const { return calls_; }
  bool ended() const { return ended_; }

  // transport_events: the runner's lines.
  void on_message(std::string_view text) override;
  void on_oversize(std::size_t bytes) override;
  void on_closed(std::error_code ec, std::string reason) override;
  // call_caller: the inner calls' answers, and the client's side of their questions.
  void call_replied(call& c, std::string text) override;
  void call_audited(audit_fields& row) override;
  void on_progress(const json::object& params) override;
  bool client_supports(std::string_view capability) const override;
  std::int64_t ask_client(std::string_view method, const json::value& params,
                          response_handler done) override;
  void cancel_ask(std::int64_t id, std::string_view reason) override;

 private:
  struct deadline;
  /// A line of the runner's: {"call"}, {"done"}, {"error"} ({"ready"} is ignored).
  void handle(const json::object& line);
  void inner_call(const json::object& line);
  /// Answers the program's call `id` with a daemon error (unknown tool, over the limit).
  void refuse(const json::value& id, std::string message);
  void send(const json::object& line);
  /// Ends the run with the program's answer or an error: answered once.
  void finish(json::object result);
  /// Ends the run with an error the model reads.
  void fail(std::string text);
  void stop();

  std::weak_ptr<code_host> host_;
  std::shared_ptr<transport> runner_;
  std::string id_;
  std::string self_tool_;
  code_limits limits_;
  std::unique_ptr<deadline> deadline_;
  std::set<std::string> tools_;  ///< the exposed names it was given
  /// Inner calls in flight, by the program's id (serialized).
  std::map<std::string, std::shared_ptr<call>> inner_;
  std::size_t calls_ = 0;
  bool started_ = false;
  bool ended_ = false;
};

/// The answer a runner's end line ({"done": {value, logs}} or {"error": {kind, message, …}})
/// gives the model: what the program printed, then its value as JSON; or an error that names
/// what went wrong (a syntax error with its line and column, an exception with its stack, the
/// limit a program passed) with what it printed before.
json::object code_answer(const json::object& end);

}  // namespace mcpmux
