// token_command: the bearer token of an HTTP upstream, printed by a command. The command runs as
// any other child (spawn_stdio: posix_spawn, its own process group, reaped), without blocking.
#include "transports/http_client_detail.hpp"
#include "transports/http_text.hpp"
#include "transports/stdio_transport.hpp"

namespace mcpmux::http_client {
namespace {

constexpr std::size_t max_token_bytes = 64 * 1024;

// Collects what the token command prints, until its output ends.
struct token_run final : transport_events {
  explicit token_run(asio::io_context& io) : wake(io) {
    wake.expires_at(asio::steady_timer::time_point::max());
  }
  void on_message(std::string_view line) override { lines.emplace_back(line); }
  void on_oversize(std::size_t) override { too_long = true; }
  void on_closed(std::error_code, std::string) override {
    closed = true;
    wake.cancel();
  }
  asio::steady_timer wake;  ///< cancelled when the run is over (or timed out)
  std::vector<std::string> lines;
  std::optional<int> status;  ///< the wait status, once reaped
  bool too_long = false, closed = false, timed_out = false;
};

}  // namespace

// Runs `/bin/sh -c token_command`; its trimmed stdout is the token.
awaitable<std::optional<std::string>> http_transport::run_token_command(std::string& err) {
  auto self = shared_from_this();
  auto run = std::make_shared<token_run>(io_);
  stdio_options so;
  so.command = "/bin/sh";
  so.args = {"-c", opt_.token_command};
  so.limits.max_message_bytes = max_token_bytes;
  so.last_line_at_eof = true;                       // `cat token-file` need not end with a newline
  so.stdin_grace = std::chrono::milliseconds(100);  // it reads nothing: no reason to wait
  so.term_grace = std::chrono::milliseconds(500);
  so.on_exit = [run](int status) { run->status = status; };
  auto spawned = spawn_stdio(io_, so);
  if (!spawned.channel) {
    err = "cannot run token_command: " + spawned.error;
    co_return std::nullopt;
  }
  spawned.channel->start(*run);
  asio::steady_timer t(io_);
  if (opt_.timeout.count() > 0) {
    t.expires_after(opt_.timeout);
    t.async_wait([run](error_code ec) {
      if (ec || run->closed) return;
      run->timed_out = true;
      run->wake.cancel();
    });
  }
  co_await run->wake.async_wait(use_tuple);
  t.cancel();
  spawned.channel->close();  // a command still running is stopped, its group with it
  if (run->timed_out) {
    err = "token_command timed out after " + std::to_string(opt_.timeout.count()) + "ms";
    co_return std::nullopt;
  }
  if (run->too_long) {
    err = "token_command printed more than " + std::to_string(max_token_bytes) + " bytes";
    co_return std::nullopt;
  }
  if (!run->status) {
    err = "token_command closed its output but did not exit";
    co_return std::nullopt;
  }
  if (*run->status != 0) {
    err = "token_command " + describe_wait_status(*run->status);
    co_return std::nullopt;
  }
  if (run->lines.size() > 1) {
    err = "token_command printed more than one line";
    co_return std::nullopt;
  }
  auto token = run->lines.empty() ? std::string() : trim(run->lines.front());
  if (token.empty()) {
    err = "token_command printed nothing";
    co_return std::nullopt;
  }
  if (!safe_header_value(token)) {
    err = "token_command printed an unusable line";
    co_return std::nullopt;
  }
  co_return token;
}

}  // namespace mcpmux::http_client
