#include "daemon/code_runners.hpp"

#include <sys/wait.h>

#include "base/log.hpp"
#include "daemon/sandboxes.hpp"

namespace mcpmux {
namespace {

// A runner's line: a program's tool call carries its arguments, a result its answer. Bounded
// so that a runner cannot make the daemon hold an unbounded line.
constexpr std::size_t runner_line_bytes = 16u << 20;

// False once `pid` has exited (the runner started ahead may have died meanwhile); it stays
// for its transport to reap.
bool alive(int pid) {
  siginfo_t info{};
  return pid > 0 &&
         ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == 0;
}

}  // namespace

code_runners::code_runners(boost::asio::io_context& io, server_sandboxes& sandboxes)
    : io_(io), sandboxes_(sandboxes) {}

code_runners::~code_runners() {
  stop();
}

void code_runners::stop() {
  stopped_ = true;
  if (ahead_) std::exchange(ahead_, std::nullopt)->channel->close();
}

result<spawned_child> code_runners::spawn() {
  if (stopped_) return failure("the daemon is stopping");
  auto start = sandboxes_.prepare_runner();
  if (!start) return start.error();
  stdio_options opt;
  opt.command = std::move(start->command);
  opt.args = std::move(start->args);
  opt.limits.max_message_bytes = runner_line_bytes;
  opt.describe_exit = std::move(start->describe_exit);
  // A runner that is told its program ended has nothing to finish: no grace worth waiting.
  opt.stdin_grace = std::chrono::milliseconds(100);
  opt.term_grace = std::chrono::milliseconds(500);
  opt.on_stderr = [](std::string_view line) { logger("code").debug("runner: {}", line); };
  return spawn_stdio(io_, opt);
}

result<std::shared_ptr<transport>> code_runners::take() {
  std::optional<spawned_child> child = std::exchange(ahead_, std::nullopt);
  if (child && !alive(child->pid)) {
    child->channel->close();
    child.reset();
  }
  if (!child) {
    auto fresh = spawn();
    if (!fresh) return fresh.error();
    child = std::move(*fresh);
  }
  start_ahead();
  return child->channel;
}

void code_runners::start_ahead() {
  if (ahead_ || stopped_) return;
  auto next = spawn();
  if (!next) return logger("code").debug("no runner started ahead: {}", next.error().message);
  ahead_ = std::move(*next);
}

}  // namespace mcpmux
