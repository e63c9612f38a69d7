// token_command: the bearer token of an HTTP upstream, printed by a command. The command runs as
// any other child (spawn_stdio: posix_spawn, its own process group, reaped), without blocking.
// It is a bearer_source like an OAuth login: run once for the first request, and once more when
// the server refuses the token (401/403); a different token is retried once, the same one is the
// server's error.
#include <boost/asio/steady_timer.hpp>

#include "base/redact.hpp"
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

class command_bearer final : public bearer_source,
                             public std::enable_shared_from_this<command_bearer> {
 public:
  command_bearer(asio::io_context& io, std::string command, std::chrono::milliseconds timeout)
      : io_(io), command_(std::move(command)), timeout_(timeout) {}

  std::optional<bearer_verdict> ready() override {
    if (fetched_) return bearer_verdict{bearer_verdict::send, token_, {}};
    return std::nullopt;
  }

  void fetch(std::function<void(bearer_verdict)> done) override {
    if (fetched_) return done({bearer_verdict::send, token_, {}});
    waiters_.push_back([done = std::move(done)](const std::string& token, const std::string& err) {
      if (!err.empty()) return done({bearer_verdict::close, {}, err});
      done({bearer_verdict::send, token, {}});
    });
    run();
  }

  void rejected(unsigned status, const std::string& used, const std::string&,
                std::function<void(bearer_verdict)> done) override {
    // Another request's refusal already brought a new token: use it.
    if (fetched_ && !running_ && token_ != used) return done({bearer_verdict::send, token_, {}});
    waiters_.push_back([done = std::move(done), used, status, self = shared_from_this()](
                           const std::string& token, const std::string& err) {
      if (!err.empty()) self->log_.warn("token refresh after HTTP {} failed: {}", status, err);
      if (err.empty() && token != used) {
        self->log_.info("HTTP {}: token refreshed; retrying once", status);
        return done({bearer_verdict::send, token, {}});
      }
      done({bearer_verdict::refuse, {}, {}});  // the server's own error says it
    });
    run();
  }

 private:
  using waiter = std::function<void(const std::string& token, const std::string& err)>;

  void run() {
    if (running_) return;
    running_ = true;
    asio::co_spawn(io_, run_command(),
                   [self = shared_from_this()](std::exception_ptr, std::optional<std::string> tok) {
                     self->running_ = false;
                     if (tok) {
                       add_secret(*tok);  // never in a log line or an error
                       self->token_ = std::move(*tok);
                       self->fetched_ = true;
                     }
                     const std::string err = tok ? std::string() : self->error_;
                     for (auto& w : std::exchange(self->waiters_, {})) w(self->token_, err);
                   });
  }

  // Runs `/bin/sh -c token_command`; its trimmed stdout is the token.
  awaitable<std::optional<std::string>> run_command() {
    auto run = std::make_shared<token_run>(io_);
    stdio_options so;
    so.command = "/bin/sh";
    so.args = {"-c", command_};
    so.limits.max_message_bytes = max_token_bytes;
    so.last_line_at_eof = true;                       // `cat token-file` need not end with \n
    so.stdin_grace = std::chrono::milliseconds(100);  // it reads nothing: no reason to wait
    so.term_grace = std::chrono::milliseconds(500);
    so.on_exit = [run](int status) { run->status = status; };
    auto spawned = spawn_stdio(io_, so);
    if (!spawned) co_return failed("cannot run token_command: " + spawned.error().message);
    const auto child = spawned->channel;
    child->start(*run);
    asio::steady_timer t(io_);
    if (timeout_.count() > 0) {
      t.expires_after(timeout_);
      t.async_wait([run](error_code ec) {
        if (ec || run->closed) return;
        run->timed_out = true;
        run->wake.cancel();
      });
    }
    co_await run->wake.async_wait(use_tuple);
    t.cancel();
    child->close();  // a command still running is stopped, its group with it
    if (run->timed_out)
      co_return failed("token_command timed out after " + std::to_string(timeout_.count()) + "ms");
    if (run->too_long)
      co_return failed("token_command printed more than " + std::to_string(max_token_bytes) +
                       " bytes");
    if (!run->status) co_return failed("token_command closed its output but did not exit");
    if (*run->status != 0) co_return failed("token_command " + describe_wait_status(*run->status));
    if (run->lines.size() > 1) co_return failed("token_command printed more than one line");
    auto token = run->lines.empty() ? std::string() : trim(run->lines.front());
    if (token.empty()) co_return failed("token_command printed nothing");
    if (!safe_header_value(token)) co_return failed("token_command printed an unusable line");
    co_return token;
  }

  std::optional<std::string> failed(std::string why) {
    error_ = std::move(why);
    return std::nullopt;
  }

  asio::io_context& io_;
  std::string command_;
  std::chrono::milliseconds timeout_;
  logger log_{"token_command"};
  std::string token_, error_;
  bool fetched_ = false, running_ = false;
  std::vector<waiter> waiters_;
};

}  // namespace
}  // namespace mcpmux::http_client

namespace mcpmux {

std::shared_ptr<bearer_source> make_command_bearer(boost::asio::io_context& io, std::string command,
                                                   std::chrono::milliseconds timeout) {
  return std::make_shared<http_client::command_bearer>(io, std::move(command), timeout);
}

}  // namespace mcpmux
