// Code mode's runners (docs/code-mode.md), the daemon's side of core's code_runner_factory:
// each program gets a fresh runner — Node in the runner's sandbox (server_sandboxes::
// prepare_runner) — and one is kept started ahead, so that a short program does not wait for
// Node to load. A runner is never reused: it exits after its one program.
#pragma once

#include <memory>
#include <optional>

#include "protocol/result.hpp"
#include "transports/stdio_transport.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class server_sandboxes;

class code_runners {
 public:
  code_runners(boost::asio::io_context& io, server_sandboxes& sandboxes);
  ~code_runners();
  code_runners(const code_runners&) = delete;
  code_runners& operator=(const code_runners&) = delete;

  /// A runner for one program: the one started ahead (and the next is started), else a new
  /// one; or why none can start (no sandbox here, no Node).
  result<std::shared_ptr<transport>> take();
  /// Starts one ahead of need (when a profile offers code mode); nothing when one waits.
  void start_ahead();
  /// Shutdown: the runner started ahead is stopped, and none is started from now on.
  void stop();

 private:
  result<spawned_child> spawn();

  boost::asio::io_context& io_;
  server_sandboxes& sandboxes_;
  std::optional<spawned_child> ahead_;
  bool stopped_ = false;
};

}  // namespace mcpmux
