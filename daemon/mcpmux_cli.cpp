// mcpmux: the command-line client of mcpmuxd (stdio bridge, status, tools, call, logs, control).

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "config/config.hpp"
#include "config/files.hpp"
#include "daemon/mcpmux_import.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <boost/system/result.hpp>

#ifndef MCPMUX_VERSION
#define MCPMUX_VERSION "0.0.0"
#endif

namespace json = boost::json;

namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

// ---------------------------------------------------------------------------------------------
// Outcomes

/// Process exit status; the values are part of the user-facing contract.
enum class exit_status : int {
  ok = 0,         ///< success
  failure = 1,    ///< the daemon or the tool reported an error, or an answer timed out
  usage = 2,      ///< bad command line
  no_daemon = 3,  ///< nothing answers on the socket
};

/// Why a command stopped; printed as "mcpmux: <message>" followed by `detail` lines.
struct failure {
  // Not an aggregate: result<exit_status, failure> must not see failure as made from a status.
  failure() = default;
  failure(exit_status s, std::string m, std::string d = {})
      : status(s), message(std::move(m)), detail(std::move(d)) {}

  exit_status status = exit_status::failure;
  std::string message;
  std::string detail;
  bool from_daemon = false;  ///< the daemon answered with a JSON-RPC error
  int sys_errno = 0;         ///< errno behind a failed connect, when that is what failed
};

template <class T>
using outcome = boost::system::result<T, failure>;

failure fail(std::string message, std::string detail = {}) {
  return failure{exit_status::failure, std::move(message), std::move(detail)};
}

int report(const failure& f) {
  std::fflush(stdout);
  if (!f.message.empty()) fmt::print(stderr, "mcpmux: {}\n", f.message);
  if (!f.detail.empty()) fmt::print(stderr, "{}\n", f.detail);
  return static_cast<int>(f.status);
}

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

std::string errno_text(int err) {
  return std::strerror(err);
}

// Parses a non-negative decimal integer that must consume the whole string.
std::optional<std::int64_t> parse_count(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

// ---------------------------------------------------------------------------------------------
// File descriptors and the socket

class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  unique_fd& operator=(unique_fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() { reset(); }

  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

/// The daemon's order (after --socket): $MCPMUX_SOCKET, `daemon.socket` of the config the daemon
/// reads ($MCPMUX_CONFIG, else ~/.config/mcpmux/config.toml), $XDG_RUNTIME_DIR/mcpmux,
/// /tmp/mcpmux-<uid>. A config that does not load is the daemon's to report: the default then.
std::string default_socket_path() {
  if (env("MCPMUX_SOCKET")) return mcpmux::resolve_socket_path("", nullptr);
  const auto cfg = mcpmux::load_config("");
  return mcpmux::resolve_socket_path("", cfg.value ? &cfg.value->daemon : nullptr);
}

failure no_daemon(const std::string& path) {
  return failure{exit_status::no_daemon,
                 fmt::format("no daemon at {}: start it with `systemctl --user start "
                             "mcpmuxd.socket` or `mcpmuxd`",
                             path),
                 {}};
}

bool set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

/// Connects to the daemon; the returned socket is non-blocking.
outcome<unique_fd> dial(const std::string& path, milliseconds timeout) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return failure{
        exit_status::usage,
        fmt::format("socket path must be 1 to {} bytes long: '{}'", sizeof addr.sun_path - 1, path),
        {}};
  }
  std::memcpy(addr.sun_path, path.data(), path.size());

  unique_fd fd{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (fd.get() < 0) return fail(fmt::format("socket: {}", errno_text(errno)));

  // A blocking connect() to a Unix socket waits while the listener's backlog is full (a wedged
  // daemon); SO_SNDTIMEO bounds that wait.
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);

  int rc = 0;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    int err = errno;
    if (err == ENOENT || err == ECONNREFUSED) {
      failure f = no_daemon(path);
      f.sys_errno = err;
      return f;
    }
    if (err == EAGAIN || err == EWOULDBLOCK || err == EINPROGRESS) {
      return fail(
          fmt::format("timed out after {} ms connecting to {} (the daemon accepts no "
                      "connections)",
                      timeout.count(), path));
    }
    return failure{
        exit_status::no_daemon, fmt::format("cannot connect to {}: {}", path, errno_text(err)), {}};
  }
  if (!set_nonblocking(fd.get())) return fail(fmt::format("fcntl: {}", errno_text(errno)));
  return fd;
}

// ---------------------------------------------------------------------------------------------
// JSON helpers

json::value parse_json(std::string_view text, boost::system::error_code& ec) {
  json::parse_options opts;
  opts.max_depth = 512;  // tool results nest deeper than Boost.JSON's default of 32
  return json::parse(text, ec, json::storage_ptr{}, opts);
}

// Pretty-prints with two-space indentation, keeping object keys in the order received.
void append_pretty(std::string& out, const json::value& v, std::size_t depth) {
  if (v.is_object() && !v.get_object().empty()) {
    out += "{\n";
    bool first = true;
    for (const auto& member : v.get_object()) {
      if (!first) out += ",\n";
      first = false;
      out.append(2 * (depth + 1), ' ');
      out += json::serialize(member.key());
      out += ": ";
      append_pretty(out, member.value(), depth + 1);
    }
    out += '\n';
    out.append(2 * depth, ' ');
    out += '}';
  } else if (v.is_array() && !v.get_array().empty()) {
    out += "[\n";
    bool first = true;
    for (const auto& element : v.get_array()) {
      if (!first) out += ",\n";
      first = false;
      out.append(2 * (depth + 1), ' ');
      append_pretty(out, element, depth + 1);
    }
    out += '\n';
    out.append(2 * depth, ' ');
    out += ']';
  } else {
    out += json::serialize(v);
  }
}

void print_pretty(const json::value& v) {
  std::string out;
  append_pretty(out, v, 0);
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stdout);
}

const json::value* member(const json::value& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  return v.get_object().if_contains(key);
}

std::optional<std::string_view> member_string(const json::value& v, std::string_view key) {
  const json::value* m = member(v, key);
  if (m == nullptr || !m->is_string()) return std::nullopt;
  return std::string_view(m->get_string());
}

std::optional<std::int64_t> member_int(const json::value& v, std::string_view key) {
  const json::value* m = member(v, key);
  if (m == nullptr) return std::nullopt;
  if (m->is_int64()) return m->get_int64();
  if (m->is_uint64() && m->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(m->get_uint64());
  }
  if (m->is_double()) return static_cast<std::int64_t>(m->get_double());
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Request/response client for everything but `connect`

/// Upper bound on one message from the daemon (a tools/call result can be large).
constexpr std::size_t max_line_bytes = 64u << 20;

/// One connection that sends JSON-RPC requests and waits, bounded, for their answers.
class daemon_client {
 public:
  daemon_client(unique_fd fd, milliseconds timeout) : fd_(std::move(fd)), timeout_(timeout) {}

  /// Sends a request and returns its `result`; a JSON-RPC error becomes a failure.
  outcome<json::value> request(std::string_view method, json::object params) {
    const std::int64_t id = next_id_++;
    const auto deadline = clock_type::now() + timeout_;
    json::object msg{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
    msg["params"] = std::move(params);
    if (auto sent = send(msg, deadline, method); !sent) return sent.error();

    for (;;) {
      auto line = read_line(deadline, method, id);
      if (!line) return line.error();
      boost::system::error_code ec;
      json::value reply = parse_json(*line, ec);
      if (ec) return fail(fmt::format("the daemon sent invalid JSON: {}", ec.message()));
      if (!reply.is_object()) continue;
      if (member(reply, "method") != nullptr) {
        if (member(reply, "id") != nullptr) {
          answer_peer_request(reply.get_object(), deadline);
        } else if (member_string(reply, "method") == std::string_view(log_notification) &&
                   stashed_.size() < max_stashed) {
          stashed_.push_back(std::move(reply));  // a follower shows these after the answer
        }
        continue;  // other notifications (progress, list_changed) are not ours to show
      }
      const json::value* rid = member(reply, "id");
      if (rid == nullptr || !is_id(*rid, id)) continue;
      if (const json::value* err = member(reply, "error")) return rpc_failure(*err, method);
      if (const json::value* result = member(reply, "result")) return *result;
      return fail(fmt::format("the daemon's answer to {} has neither result nor error", method));
    }
  }

  /// Waits, without a deadline, for the next `notifications/mcpmux/log`. nullopt when the
  /// daemon closed the connection or `stop` was set by a signal handler meanwhile.
  outcome<std::optional<json::value>> next_log_notification(const volatile sig_atomic_t* stop) {
    stop_ = stop;
    for (;;) {
      if (!stashed_.empty()) {
        json::value v = std::move(stashed_.front());
        stashed_.erase(stashed_.begin());
        return std::optional<json::value>(std::move(v));
      }
      if (*stop != 0) return std::optional<json::value>();
      auto line = read_line(clock_type::time_point::max(), "mcpmux/logs", 0);
      if (!line) {
        if (eof_ || *stop != 0) return std::optional<json::value>();
        return line.error();
      }
      boost::system::error_code ec;
      json::value msg = parse_json(*line, ec);
      if (ec) return fail(fmt::format("the daemon sent invalid JSON: {}", ec.message()));
      if (!msg.is_object() || member(msg, "method") == nullptr) continue;
      if (member(msg, "id") != nullptr) {
        answer_peer_request(msg.get_object(), clock_type::now() + timeout_);
      } else if (member_string(msg, "method") == std::string_view(log_notification)) {
        return std::optional<json::value>(std::move(msg));
      }
    }
  }

  /// Sends a notification (no answer expected).
  outcome<void> notify(std::string_view method, json::object params) {
    json::object msg{{"jsonrpc", "2.0"}, {"method", method}};
    msg["params"] = std::move(params);
    auto sent = send(msg, clock_type::now() + timeout_, method);
    if (sent && method == "notifications/initialized") initialized_ = true;
    return sent;
  }

 private:
  static bool is_id(const json::value& v, std::int64_t id) {
    if (v.is_int64()) return v.get_int64() == id;
    if (v.is_uint64()) return id >= 0 && v.get_uint64() == static_cast<std::uint64_t>(id);
    return false;
  }

  static failure rpc_failure(const json::value& err, std::string_view method) {
    auto message = member_string(err, "message");
    failure f = fail(message && !message->empty() ? std::string(*message)
                                                  : fmt::format("{} failed", method));
    if (const json::value* data = member(err, "data"); data != nullptr && !data->is_null()) {
      const json::value* errors = member(*data, "errors");
      if (errors != nullptr && errors->is_array()) {
        // mcpmux/reload: one "file:line: key: message" per line.
        for (const json::value& e : errors->get_array()) {
          if (!f.detail.empty()) f.detail += '\n';
          f.detail += e.is_string() ? std::string(e.get_string()) : json::serialize(e);
        }
      } else {
        f.detail = data->is_string() ? std::string(data->get_string()) : json::serialize(*data);
      }
    }
    f.from_daemon = true;
    return f;
  }

  static constexpr std::string_view log_notification = "notifications/mcpmux/log";
  static constexpr std::size_t max_stashed = 10'000;

  // Waits until fd_ is ready for `events` or the deadline passes; false on timeout, or when
  // a signal handler set *stop_.
  bool wait_for(short events, clock_type::time_point deadline) {
    for (;;) {
      auto left = std::chrono::ceil<milliseconds>(deadline - clock_type::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_.get(), events, 0};
      int rc = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, INT32_MAX)));
      if (rc > 0) return true;
      if (rc < 0 && errno != EINTR) return true;  // let the following I/O call report it
      if (stop_ != nullptr && *stop_ != 0) return false;
    }
  }

  outcome<void> send(const json::object& msg, clock_type::time_point deadline,
                     std::string_view method) {
    std::string line = json::serialize(msg);
    line += '\n';
    std::string_view rest = line;
    while (!rest.empty()) {
      ssize_t n = ::send(fd_.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
      if (n >= 0) {
        rest.remove_prefix(static_cast<std::size_t>(n));
      } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!wait_for(POLLOUT, deadline)) {
          return fail(fmt::format("timed out after {} ms sending {} to the daemon",
                                  timeout_.count(), method));
        }
      } else if (errno != EINTR) {
        return fail(fmt::format("cannot send {} to the daemon: {}", method, errno_text(errno)));
      }
    }
    return {};
  }

  // Reads the next non-empty line; on timeout, asks the daemon to cancel request `id`.
  outcome<std::string> read_line(clock_type::time_point deadline, std::string_view method,
                                 std::int64_t id) {
    for (;;) {
      if (auto nl = inbuf_.find('\n', scanned_); nl != std::string::npos) {
        std::string line = inbuf_.substr(0, nl);
        inbuf_.erase(0, nl + 1);
        scanned_ = 0;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        return line;
      }
      scanned_ = inbuf_.size();
      if (inbuf_.size() > max_line_bytes) {
        return fail(
            fmt::format("the daemon's answer to {} exceeds {} MiB", method, max_line_bytes >> 20));
      }
      constexpr std::size_t chunk = 64 * 1024;
      const std::size_t old_size = inbuf_.size();
      inbuf_.resize(old_size + chunk);
      ssize_t n = ::recv(fd_.get(), inbuf_.data() + old_size, chunk, 0);
      const int err = errno;
      inbuf_.resize(old_size + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
      if (n > 0) continue;
      if (n == 0) {
        eof_ = true;
        return fail(fmt::format("the daemon closed the connection before answering {}", method));
      }
      if (err == EAGAIN || err == EWOULDBLOCK) {
        if (!wait_for(POLLIN, deadline)) {
          if (stop_ != nullptr && *stop_ != 0) return fail("interrupted");
          cancel(id);
          return fail(
              fmt::format("no answer from the daemon to {} within {} ms (raise it with "
                          "--timeout MS)",
                          method, timeout_.count()));
        }
      } else if (err != EINTR) {
        return fail(fmt::format("lost the connection to the daemon: {}", errno_text(err)));
      }
    }
  }

  // The daemon may ping us while a call runs; anything else we did not declare support for.
  void answer_peer_request(const json::object& req, clock_type::time_point deadline) {
    json::object reply{{"jsonrpc", "2.0"}, {"id", req.at("id")}};
    const json::value& method = req.at("method");
    if (method.is_string() && method.get_string() == "ping") {
      reply["result"] = json::object{};
    } else {
      reply["error"] = json::object{{"code", -32601}, {"message", "Method not found"}};
    }
    (void)send(reply, deadline, "a reply");
  }

  // Best effort: tell the daemon to stop work we no longer wait for (closing also does).
  void cancel(std::int64_t id) {
    if (!initialized_) return;
    json::object msg{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}};
    msg["params"] = json::object{{"requestId", id}, {"reason", "client timeout"}};
    std::string line = json::serialize(msg);
    line += '\n';
    (void)::send(fd_.get(), line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  unique_fd fd_;
  milliseconds timeout_;
  std::int64_t next_id_ = 1;
  bool initialized_ = false;
  std::string inbuf_;
  std::size_t scanned_ = 0;                      // bytes of inbuf_ already known to hold no newline
  bool eof_ = false;                             // the daemon closed the connection
  std::vector<json::value> stashed_;             // log notifications seen while awaiting an answer
  const volatile sig_atomic_t* stop_ = nullptr;  // set by a signal handler: stop waiting
};

// ---------------------------------------------------------------------------------------------
// connect: the byte-transparent stdio bridge

/// A source stops being read while its destination holds this much (bounded memory).
constexpr std::size_t bridge_high_water = 1u << 20;
/// Largest single read; big reads keep syscalls per message low.
constexpr std::size_t bridge_read_chunk = 256u << 10;

/// Fixed-capacity FIFO of bytes: append at the back, consume from the front.
class byte_buffer {
 public:
  byte_buffer() : storage_(std::make_unique_for_overwrite<char[]>(capacity)) {}

  std::size_t size() const { return end_ - begin_; }
  bool empty() const { return begin_ == end_; }
  bool accepting() const { return size() < bridge_high_water; }
  const char* data() const { return storage_.get() + begin_; }

  /// Free space at the back, at least bridge_read_chunk bytes while accepting().
  std::span<char> space() {
    if (capacity - end_ < bridge_read_chunk && begin_ > 0) {
      std::memmove(storage_.get(), storage_.get() + begin_, size());
      end_ -= begin_;
      begin_ = 0;
    }
    return {storage_.get() + end_, std::min(bridge_read_chunk, capacity - end_)};
  }
  void commit(std::size_t n) { end_ += n; }
  void consume(std::size_t n) {
    begin_ += n;
    if (begin_ == end_) begin_ = end_ = 0;
  }
  void clear() { begin_ = end_ = 0; }

 private:
  static constexpr std::size_t capacity = bridge_high_water + bridge_read_chunk;
  std::unique_ptr<char[]> storage_;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

enum class io_result { progress, would_block, eof, error };

io_result read_into(int fd, byte_buffer& buf, int& err) {
  auto space = buf.space();
  for (;;) {
    ssize_t n = ::read(fd, space.data(), space.size());
    if (n > 0) {
      buf.commit(static_cast<std::size_t>(n));
      return io_result::progress;
    }
    if (n == 0) return io_result::eof;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return io_result::would_block;
    err = errno;
    return io_result::error;
  }
}

// Writes as much of buf as the fd takes without blocking.
io_result drain(int fd, byte_buffer& buf, int& err) {
  while (!buf.empty()) {
    ssize_t n = ::write(fd, buf.data(), buf.size());
    if (n > 0) {
      buf.consume(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return io_result::would_block;
    err = n < 0 ? errno : EIO;
    return io_result::error;
  }
  return io_result::progress;
}

// stdin/stdout are made non-blocking for the bridge; when they are a terminal that flag is
// shared with the shell, so it is restored on every way out, including fatal signals.
int saved_stdin_flags = -1;
int saved_stdout_flags = -1;

void restore_stdio_flags() {
  if (saved_stdin_flags >= 0) ::fcntl(STDIN_FILENO, F_SETFL, saved_stdin_flags);
  if (saved_stdout_flags >= 0) ::fcntl(STDOUT_FILENO, F_SETFL, saved_stdout_flags);
}

extern "C" void restore_and_reraise(int sig) {
  restore_stdio_flags();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void make_stdio_nonblocking() {
  saved_stdin_flags = ::fcntl(STDIN_FILENO, F_GETFL);
  saved_stdout_flags = ::fcntl(STDOUT_FILENO, F_GETFL);
  struct sigaction sa {};
  sa.sa_handler = restore_and_reraise;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::sigaction(sig, &sa, nullptr);
  if (saved_stdin_flags >= 0) ::fcntl(STDIN_FILENO, F_SETFL, saved_stdin_flags | O_NONBLOCK);
  if (saved_stdout_flags >= 0) ::fcntl(STDOUT_FILENO, F_SETFL, saved_stdout_flags | O_NONBLOCK);
}

/// Copies stdin → socket and socket → stdout until the daemon closes; returns the exit status.
exit_status run_bridge(int sock) {
  ::signal(SIGPIPE, SIG_IGN);
  make_stdio_nonblocking();
  struct restore_guard {
    ~restore_guard() { restore_stdio_flags(); }
  } guard;

  byte_buffer to_sock;  // read from stdin, not yet written to the daemon
  byte_buffer to_out;   // read from the daemon, not yet written to stdout
  bool stdin_open = true;
  bool sock_readable = true;
  bool sock_writable = true;
  exit_status status = exit_status::ok;
  int err = 0;

  auto lose_socket_writes = [&] {
    sock_writable = false;
    stdin_open = false;
    to_sock.clear();
  };
  auto flush_to_socket = [&] {
    if (sock_writable && drain(sock, to_sock, err) == io_result::error) lose_socket_writes();
  };

  for (;;) {
    if (!stdin_open && to_sock.empty() && sock_writable) {
      ::shutdown(sock, SHUT_WR);  // the daemon sees EOF and may still answer what it has
      sock_writable = false;
    }
    if (!sock_readable && to_out.empty()) return status;

    pollfd fds[3] = {};
    fds[0].fd = stdin_open && to_sock.accepting() ? STDIN_FILENO : -1;
    fds[0].events = POLLIN;
    short sock_events = 0;
    if (sock_readable && to_out.accepting()) sock_events |= POLLIN;
    if (sock_writable && !to_sock.empty()) sock_events |= POLLOUT;
    fds[1].fd = sock_events != 0 ? sock : -1;
    fds[1].events = sock_events;
    fds[2].fd = to_out.empty() ? -1 : STDOUT_FILENO;
    fds[2].events = POLLOUT;

    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      fmt::print(stderr, "mcpmux: poll: {}\n", errno_text(errno));
      return exit_status::failure;
    }

    if (fds[2].revents != 0 && drain(STDOUT_FILENO, to_out, err) == io_result::error) {
      return exit_status::ok;  // whoever reads our stdout is gone
    }

    if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
      if (sock_events & POLLIN) {
        switch (read_into(sock, to_out, err)) {
          case io_result::progress:
            if (drain(STDOUT_FILENO, to_out, err) == io_result::error) return exit_status::ok;
            break;
          case io_result::would_block:
            break;
          case io_result::eof:
            sock_readable = false;
            lose_socket_writes();
            break;
          case io_result::error:
            fmt::print(stderr, "mcpmux: lost the connection to the daemon: {}\n", errno_text(err));
            status = exit_status::failure;
            sock_readable = false;
            lose_socket_writes();
            break;
        }
      } else if (fds[1].revents & (POLLHUP | POLLERR)) {
        flush_to_socket();  // surfaces the error, if any, as a failed write
      }
    }
    if (fds[1].revents & POLLOUT) flush_to_socket();

    if (fds[0].revents != 0) {
      switch (read_into(STDIN_FILENO, to_sock, err)) {
        case io_result::progress:
          flush_to_socket();
          break;
        case io_result::would_block:
          break;
        case io_result::eof:
        case io_result::error:  // an unreadable stdin ends the conversation like EOF
          stdin_open = false;
          break;
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Tables

/// Display columns of the terminal, or of an assumed one when stdout is not a terminal.
std::size_t output_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  if (auto cols = env("COLUMNS")) {
    if (auto n = parse_count(*cols); n && *n > 0) return static_cast<std::size_t>(*n);
  }
  return 120;
}

bool use_colour() {
  // no-color.org: a NO_COLOR that is present and non-empty disables colour.
  return ::isatty(STDOUT_FILENO) && !env("NO_COLOR");
}

// Code points, the width approximation used for alignment (the input is valid UTF-8).
std::size_t display_width(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

/// One line, no control characters (which also keeps escape sequences from the peer inert).
std::string one_line(std::string_view s, bool first_line_only) {
  if (first_line_only) s = s.substr(0, s.find('\n'));
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string truncate(std::string s, std::size_t width) {
  if (display_width(s) <= width) return s;
  if (width == 0) return {};
  std::size_t seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((s[i] & 0xC0) == 0x80) continue;
    if (seen == width - 1) {
      s.resize(i);
      return s + "…";
    }
    ++seen;
  }
  return s;
}

enum class align { left, right };

struct column {
  std::string_view header;
  std::size_t max_width;  ///< 0: take what the row width leaves (only for the last column)
  align alignment = align::left;
};

struct cell {
  std::string text;
  std::string_view colour;  ///< SGR sequence or empty
};

void print_table(std::span<const column> columns, const std::vector<std::vector<cell>>& rows,
                 std::size_t total_width) {
  constexpr std::size_t gap = 2;
  std::vector<std::size_t> widths(columns.size());
  std::size_t used = 0;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    std::size_t w = display_width(columns[c].header);
    for (const auto& row : rows) w = std::max(w, display_width(row[c].text));
    if (columns[c].max_width == 0) {
      std::size_t left = total_width > used ? total_width - used : 0;
      w = std::min(w, std::max<std::size_t>(left, 16));
    } else {
      w = std::min(w, columns[c].max_width);
    }
    widths[c] = w;
    used += w + gap;
  }

  std::string out;
  auto append_cell = [&](std::size_t c, std::string_view text, std::string_view colour) {
    const bool last = c + 1 == columns.size();
    std::string shown = truncate(std::string(text), widths[c]);
    std::size_t pad = widths[c] - display_width(shown);
    if (columns[c].alignment == align::right) out.append(pad, ' ');
    if (!colour.empty()) out += colour;
    out += shown;
    if (!colour.empty()) out += "\x1b[0m";
    if (columns[c].alignment == align::left && !last) out.append(pad, ' ');
    if (!last) out.append(gap, ' ');
  };
  for (std::size_t c = 0; c < columns.size(); ++c) append_cell(c, columns[c].header, {});
  out += '\n';
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) append_cell(c, row[c].text, row[c].colour);
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

std::string format_duration_ms(std::int64_t ms) {
  std::int64_t s = ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
}

std::string format_latency_us(std::int64_t us) {
  if (us < 1000) return fmt::format("{}us", us);
  if (us < 1'000'000) return fmt::format("{:.1f}ms", static_cast<double>(us) / 1e3);
  return fmt::format("{:.2f}s", static_cast<double>(us) / 1e6);
}

std::string text_or_dash(const json::value& v, std::string_view key, bool first_line_only) {
  auto s = member_string(v, key);
  return s && !s->empty() ? one_line(*s, first_line_only) : "-";
}

// The status table's last column: a crash loop first (with why), then the notes of a server that
// works with something missing, then the last error (kept after a recovery).
std::string problem_text(const json::value& server) {
  std::string out;
  if (const auto* loop = member(server, "crash_looping");
      loop && loop->is_bool() && loop->get_bool())
    out = "crash-looping: ";
  const auto* notes = member(server, "notes");
  if (out.empty() && notes && notes->is_array() && !notes->get_array().empty()) {
    out = "note: ";
    for (const auto& n : notes->get_array())
      if (n.is_string()) out += std::string(n.get_string()) + "; ";
    out.resize(out.size() - 2);
    return out;
  }
  auto error = text_or_dash(server, "last_error", false);
  return out.empty() ? error : out + error;
}

template <class Format>
std::string int_or_dash(const json::value& v, std::string_view key, Format format) {
  auto n = member_int(v, key);
  return n ? format(*n) : "-";
}

std::string plain_int(std::int64_t n) {
  return std::to_string(n);
}

// ---------------------------------------------------------------------------------------------
// Commands

struct context {
  std::string socket_path;
  milliseconds timeout;
};

/// Options of one command after parsing; a flag without value maps to "".
struct parsed_args {
  std::vector<std::string> positional;
  std::map<std::string, std::string, std::less<>> options;

  bool has(std::string_view name) const { return options.find(name) != options.end(); }
  std::optional<std::string> value(std::string_view name) const {
    auto it = options.find(name);
    if (it == options.end()) return std::nullopt;
    return it->second;
  }
};

outcome<daemon_client> open_client(const context& ctx) {
  auto fd = dial(ctx.socket_path, ctx.timeout);
  if (!fd) return fd.error();
  return daemon_client(std::move(*fd), ctx.timeout);
}

failure unexpected_answer(std::string_view method) {
  return fail(fmt::format("unexpected answer from the daemon to {}", method));
}

// ---------------------------------------------------------------------------------------------
// connect --spawn: start mcpmuxd when nothing answers on the socket

/// How long a freshly started daemon gets to accept connections.
constexpr milliseconds spawn_wait{5'000};
/// How long to wait for another client that is starting the daemon (it needs spawn_wait).
constexpr milliseconds spawn_lock_wait{3 * spawn_wait};

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// mcpmuxd next to this executable, else the bare name for a PATH search.
std::string daemon_program() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n > 0) {
    std::string candidate = parent_dir(std::string(buf, static_cast<std::size_t>(n))) + "/mcpmuxd";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "mcpmuxd";
}

/// Where a spawned daemon writes its log: $XDG_STATE_HOME/mcpmux/mcpmuxd.log ("" if unknown).
std::string spawn_log_path() {
  if (auto state = env("XDG_STATE_HOME"); state && state->front() == '/') {
    return *state + "/mcpmux/mcpmuxd.log";
  }
  if (auto home = env("HOME"); home && home->front() == '/') {
    return *home + "/.local/state/mcpmux/mcpmuxd.log";
  }
  return {};
}

/// What the spawning children report through the status pipe.
struct spawn_note {
  char kind;  ///< 'p': the daemon's pid; 'e': errno of a failed fork or exec
  std::int32_t value;
};

/// Starts `mcpmuxd --socket PATH` detached (own session, not our child, stdio to the log or
/// /dev/null); returns its pid once it has been exec'd.
outcome<pid_t> spawn_daemon(const std::string& socket, const std::string& program,
                            const std::string& log) {
  std::vector<std::string> argv{program, "--socket", socket};
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  if (!log.empty()) (void)mcpmux::make_dirs(parent_dir(log), 0700);

  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) return fail(fmt::format("pipe: {}", errno_text(errno)));
  unique_fd read_end{pipefd[0]};
  unique_fd write_end{pipefd[1]};
  auto note = [&](char kind, std::int32_t value) {
    spawn_note msg{kind, value};
    (void)!::write(write_end.get(), &msg, sizeof msg);  // atomic: smaller than PIPE_BUF
  };

  const pid_t middle = ::fork();
  if (middle < 0) return fail(fmt::format("fork: {}", errno_text(errno)));
  if (middle == 0) {
    // The middle child starts a session and exits at once, so the daemon is reparented (to
    // init or a subreaper) and never becomes a zombie of ours.
    ::setsid();
    const pid_t pid = ::fork();
    if (pid != 0) {
      note(pid > 0 ? 'p' : 'e', pid > 0 ? pid : errno);
      ::_exit(0);
    }
    int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    int out =
        log.empty() ? -1 : ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (out < 0) out = null;
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    if (out >= 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    // Nothing of ours that systemd handed us belongs to the daemon.
    for (const char* name : {"NOTIFY_SOCKET", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES",
                             "WATCHDOG_PID", "WATCHDOG_USEC"}) {
      ::unsetenv(name);
    }
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_DFL);
    ::execvp(cargv[0], cargv.data());
    note('e', errno);
    ::_exit(127);
  }
  write_end.reset();
  int wstatus = 0;
  while (::waitpid(middle, &wstatus, 0) < 0 && errno == EINTR) {
  }

  // EOF arrives when the daemon has exec'd (close-on-exec) or the children have exited.
  pid_t pid = -1;
  int exec_errno = 0;
  for (;;) {
    spawn_note msg{};
    ssize_t n = ::read(read_end.get(), &msg, sizeof msg);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof msg)) break;
    if (msg.kind == 'p') pid = msg.value;
    if (msg.kind == 'e') exec_errno = msg.value;
  }
  if (exec_errno != 0) {
    return failure{exit_status::no_daemon,
                   fmt::format("cannot start {}: {}", program, errno_text(exec_errno)),
                   {}};
  }
  if (pid <= 0) return failure{exit_status::no_daemon, fmt::format("cannot start {}", program), {}};
  return pid;
}

/// Nothing answers at ctx.socket_path: under an exclusive lock on `<socket>.lock`, checks again
/// and, if still nothing answers, starts mcpmuxd and waits until it accepts connections. Clients
/// that start at the same moment queue on the lock and then find the one daemon.
outcome<unique_fd> spawn_and_dial(const context& ctx) {
  const std::string& socket = ctx.socket_path;
  if (std::string error; !mcpmux::make_dirs(parent_dir(socket), 0700, &error))
    return failure{exit_status::no_daemon, std::move(error), {}};
  const std::string lock_path = socket + ".lock";
  unique_fd lock{::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)};
  if (lock.get() < 0) {
    return failure{exit_status::no_daemon,
                   fmt::format("cannot open {}: {}", lock_path, errno_text(errno)),
                   {}};
  }
  const auto lock_deadline = clock_type::now() + spawn_lock_wait;
  while (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return fail(fmt::format("cannot lock {}: {}", lock_path, errno_text(errno)));
    }
    if (clock_type::now() >= lock_deadline) {
      return fail(
          fmt::format("timed out after {} ms waiting for another mcpmux to start the "
                      "daemon (lock {})",
                      spawn_lock_wait.count(), lock_path));
    }
    ::usleep(10'000);
  }

  // Whoever held the lock before us may have started the daemon already.
  auto fd = dial(socket, ctx.timeout);
  if (fd || fd.error().sys_errno == 0) return fd;

  const std::string program = daemon_program();
  const std::string log = spawn_log_path();
  auto pid = spawn_daemon(socket, program, log);
  if (!pid) return pid.error();
  const std::string see_log = log.empty() ? std::string() : fmt::format("; see {}", log);
  const auto deadline = clock_type::now() + spawn_wait;
  for (;;) {
    fd = dial(socket, ctx.timeout);
    if (fd || fd.error().sys_errno == 0) return fd;
    if (::kill(*pid, 0) != 0 && errno == ESRCH) {
      return failure{exit_status::no_daemon,
                     fmt::format("{} (pid {}) exited during start-up{}", program, *pid, see_log),
                     {}};
    }
    if (clock_type::now() >= deadline) {
      return failure{exit_status::no_daemon,
                     fmt::format("started {} (pid {}), but it did not accept connections on {} "
                                 "within {} ms{}",
                                 program, *pid, socket, spawn_wait.count(), see_log),
                     {}};
    }
    ::usleep(20'000);
  }
}

outcome<exit_status> run_connect(const context& ctx, const parsed_args& args) {
  auto fd = dial(ctx.socket_path, ctx.timeout);
  // Only "nothing there" (ENOENT, ECONNREFUSED) starts a daemon; EACCES and the like do not.
  if (!fd && args.has("spawn") && fd.error().sys_errno != 0) fd = spawn_and_dial(ctx);
  if (!fd) return fd.error();
  return run_bridge(fd->get());
}

outcome<exit_status> run_status(const context& ctx, const parsed_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  auto status = client->request("mcpmux/status", {});
  if (!status) return status.error();
  if (args.has("json")) {
    print_pretty(*status);
    return exit_status::ok;
  }
  if (!status->is_object()) return unexpected_answer("mcpmux/status");
  const json::value& st = *status;

  std::string header = fmt::format(
      "mcpmuxd {}  pid {}  up {}  clients {}  socket {}  config {}\n",
      text_or_dash(st, "version", true), int_or_dash(st, "pid", plain_int),
      int_or_dash(st, "uptime_ms", format_duration_ms), int_or_dash(st, "clients", plain_int),
      text_or_dash(st, "socket", true), text_or_dash(st, "config", true));
  std::fwrite(header.data(), 1, header.size(), stdout);

  const json::value* servers = member(st, "servers");
  if (servers == nullptr || !servers->is_array() || servers->get_array().empty()) {
    std::fputs("no servers configured\n", stdout);
    return exit_status::ok;
  }

  static constexpr column columns[] = {
      {"NAME", 24},
      {"TYPE", 5},
      {"STATE", 10},
      {"PID", 8, align::right},
      {"UPTIME", 7, align::right},
      {"RESTARTS", 8, align::right},
      {"TOOLS", 6, align::right},
      {"CALLS", 9, align::right},
      {"P50", 8, align::right},
      {"P99", 8, align::right},
      {"LAST ERROR / NOTES", 0},
  };
  const bool colour = use_colour();
  std::vector<std::vector<cell>> rows;
  for (const json::value& s : servers->get_array()) {
    std::string state = text_or_dash(s, "state", true);
    std::string_view sgr;
    if (colour) {
      if (state == "ready") sgr = "\x1b[32m";
      if (state == "connecting" || state == "backoff") sgr = "\x1b[33m";
      if (state == "failed") sgr = "\x1b[31m";
    }
    rows.push_back({
        {text_or_dash(s, "name", true), {}},
        {text_or_dash(s, "type", true), {}},
        {std::move(state), sgr},
        {int_or_dash(s, "pid", plain_int), {}},
        {int_or_dash(s, "uptime_ms", format_duration_ms), {}},
        {int_or_dash(s, "restarts", plain_int), {}},
        {int_or_dash(s, "tools", plain_int), {}},
        {int_or_dash(s, "calls", plain_int), {}},
        {int_or_dash(s, "latency_p50_us", format_latency_us), {}},
        {int_or_dash(s, "latency_p99_us", format_latency_us), {}},
        {problem_text(s), {}},
    });
  }
  print_table(columns, rows, output_width());
  return exit_status::ok;
}

outcome<exit_status> run_tools(const context& ctx, const parsed_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  auto answer = client->request("mcpmux/tools", {});
  if (!answer) return answer.error();
  const json::value* tools = member(*answer, "tools");
  if (tools == nullptr || !tools->is_array()) return unexpected_answer("mcpmux/tools");

  json::array selected;
  const auto server = args.value("server");
  for (const json::value& t : tools->get_array()) {
    if (!server || member_string(t, "server") == std::string_view(*server)) selected.push_back(t);
  }
  if (args.has("json")) {
    print_pretty(selected);
    return exit_status::ok;
  }
  if (selected.empty()) {
    fmt::print(
        stderr, "{}\n",
        server ? fmt::format("no tools from server '{}'", *server) : std::string("no tools"));
    return exit_status::ok;
  }
  static constexpr column columns[] = {
      {"NAME", 48}, {"SERVER", 20}, {"ORIGINAL", 40}, {"DESCRIPTION", 0}};
  std::vector<std::vector<cell>> rows;
  for (const json::value& t : selected) {
    rows.push_back({{text_or_dash(t, "name", true), {}},
                    {text_or_dash(t, "server", true), {}},
                    {text_or_dash(t, "original", true), {}},
                    {text_or_dash(t, "description", true), {}}});
  }
  print_table(columns, rows, output_width());
  return exit_status::ok;
}

outcome<exit_status> run_call(const context& ctx, const parsed_args& args) {
  const std::string& tool = args.positional[0];
  json::object arguments;
  if (args.positional.size() > 1) {
    boost::system::error_code ec;
    json::value parsed = parse_json(args.positional[1], ec);
    if (ec || !parsed.is_object()) {
      return failure{exit_status::usage,
                     ec ? fmt::format("JSON_ARGS is not valid JSON: {}", ec.message())
                        : std::string("JSON_ARGS must be a JSON object, like '{\"path\":\"x\"}'"),
                     "usage: mcpmux call TOOL [JSON_ARGS] [--json]\nTry 'mcpmux call --help'."};
    }
    arguments = std::move(parsed.get_object());
  }

  auto client = open_client(ctx);
  if (!client) return client.error();
  auto init = client->request(
      "initialize", {{"protocolVersion", "2025-11-25"},
                     {"capabilities", json::object{}},
                     {"clientInfo", {{"name", "mcpmux-cli"}, {"version", MCPMUX_VERSION}}}});
  if (!init) {
    failure f = init.error();
    if (f.from_daemon) f.message = "initialize failed: " + f.message;
    return f;
  }
  if (auto sent = client->notify("notifications/initialized", {}); !sent) return sent.error();

  json::object params{{"name", tool}};
  params["arguments"] = std::move(arguments);
  auto result = client->request("tools/call", std::move(params));
  if (!result) return result.error();
  if (!result->is_object()) return unexpected_answer("tools/call");

  const json::value* is_error = member(*result, "isError");
  const bool tool_failed = is_error != nullptr && is_error->is_bool() && is_error->get_bool();
  if (args.has("json")) {
    print_pretty(*result);
    return tool_failed ? exit_status::failure : exit_status::ok;
  }
  std::string out;
  if (const json::value* content = member(*result, "content"); content && content->is_array()) {
    for (const json::value& block : content->get_array()) {
      auto text = member_string(block, "text");
      if (member_string(block, "type") == std::string_view("text") && text) {
        out += *text;
        if (out.empty() || out.back() != '\n') out += '\n';
      } else {
        out += json::serialize(block);
        out += '\n';
      }
    }
  }
  std::fwrite(out.data(), 1, out.size(), tool_failed ? stderr : stdout);
  return tool_failed ? exit_status::failure : exit_status::ok;
}

volatile sig_atomic_t stop_requested = 0;

extern "C" void on_stop_signal(int) {
  stop_requested = 1;
}

void append_log_line(std::string& out, const json::value& line, bool terminal) {
  std::string text = line.is_string() ? std::string(line.get_string()) : json::serialize(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  out += terminal ? one_line(text, false) : text;
  out += '\n';
}

outcome<exit_status> run_logs(const context& ctx, const parsed_args& args) {
  std::int64_t lines = 100;
  if (auto n = args.value("lines")) {
    auto parsed = parse_count(*n);
    if (!parsed || *parsed < 1) {
      return failure{exit_status::usage,
                     fmt::format("-n wants a positive number of lines, not '{}'", *n),
                     "usage: mcpmux logs SERVER [-n N] [-f]\nTry 'mcpmux logs --help'."};
    }
    lines = *parsed;
  }
  const bool follow = args.has("follow");
  const std::string& server = args.positional[0];
  auto client = open_client(ctx);
  if (!client) return client.error();
  json::object params{{"server", server}, {"lines", lines}};
  if (follow) params["follow"] = true;
  auto answer = client->request("mcpmux/logs", std::move(params));
  if (!answer) return answer.error();
  const json::value* got = member(*answer, "lines");
  if (got == nullptr || !got->is_array()) return unexpected_answer("mcpmux/logs");

  const bool terminal = ::isatty(STDOUT_FILENO);
  std::string out;
  for (const json::value& line : got->get_array()) append_log_line(out, line, terminal);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!follow) return exit_status::ok;

  // Follow until the daemon closes the connection or SIGINT/SIGTERM; no deadline applies.
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) ::sigaction(sig, &sa, nullptr);
  for (;;) {
    std::fflush(stdout);
    auto next = client->next_log_notification(&stop_requested);
    if (!next) return next.error();
    if (!next->has_value()) return exit_status::ok;
    const json::value* p = member(**next, "params");
    if (p == nullptr || member_string(*p, "server") != std::string_view(server)) continue;
    const json::value* line = member(*p, "line");
    if (line == nullptr) continue;
    out.clear();
    append_log_line(out, *line, terminal);
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) return exit_status::ok;
  }
}

outcome<exit_status> run_restart(const context& ctx, const parsed_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  const std::string& server = args.positional[0];
  auto answer = client->request("mcpmux/restart", {{"server", server}});
  if (!answer) return answer.error();
  fmt::print("restart of server '{}' requested\n", server);
  return exit_status::ok;
}

// "a, b" from a JSON array of strings.
std::string join_names(const json::value* names) {
  std::string out;
  if (names == nullptr || !names->is_array()) return out;
  for (const json::value& n : names->get_array()) {
    if (!out.empty()) out += ", ";
    out += n.is_string() ? one_line(n.get_string(), true) : json::serialize(n);
  }
  return out;
}

std::size_t count_of(const json::value* names) {
  return names != nullptr && names->is_array() ? names->get_array().size() : 0;
}

outcome<exit_status> run_reload(const context& ctx, const parsed_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  auto answer = client->request("mcpmux/reload", {});
  if (!answer) return answer.error();  // data.errors become the detail lines
  if (args.has("json")) {
    print_pretty(*answer);
    return exit_status::ok;
  }
  if (!answer->is_object()) return unexpected_answer("mcpmux/reload");
  const json::value& r = *answer;

  // "reloaded CONFIG: added a, b; removed c; changed d; N unchanged"
  std::string summary;
  for (std::string_view key : {"added", "removed", "changed"}) {
    std::string names = join_names(member(r, key));
    if (!names.empty()) summary += fmt::format("{} {}; ", key, names);
  }
  summary += fmt::format("{} unchanged", count_of(member(r, "unchanged")));
  fmt::print("reloaded {}: {}\n", text_or_dash(r, "config", true), summary);
  if (const json::value* keys = member(r, "restart_required"); keys && keys->is_array()) {
    for (const json::value& k : keys->get_array()) {
      fmt::print("{} needs a daemon restart\n",
                 k.is_string() ? one_line(k.get_string(), true) : json::serialize(k));
    }
  }
  std::fflush(stdout);
  if (const json::value* warnings = member(r, "warnings"); warnings && warnings->is_array()) {
    for (const json::value& w : warnings->get_array()) {
      fmt::print(stderr, "mcpmux: warning: {}\n",
                 w.is_string() ? std::string(w.get_string()) : json::serialize(w));
    }
  }
  return exit_status::ok;
}

// ---------------------------------------------------------------------------------------------
// Command line

struct option_spec {
  std::string_view name;  ///< long name without dashes; also the key in parsed_args
  char short_name;        ///< 0 when there is none
  bool takes_value;
};

using handler = outcome<exit_status> (*)(const context&, const parsed_args&);

struct command_spec {
  std::string_view name;
  std::string_view synopsis;  ///< after "mcpmux "
  std::string_view summary;   ///< one line for `mcpmux --help`
  std::string_view help;      ///< body of `mcpmux NAME --help`
  std::span<const option_spec> options;
  std::string_view first_positional;  ///< named in "missing ..." errors
  std::size_t min_positional;
  std::size_t max_positional;
  milliseconds default_timeout;
  handler run;
};

constexpr milliseconds control_timeout{10'000};
constexpr milliseconds call_timeout{60'000};

constexpr option_spec json_option[] = {{"json", 0, false}};
constexpr option_spec tools_options[] = {{"json", 0, false}, {"server", 0, true}};
constexpr option_spec logs_options[] = {{"lines", 'n', true}, {"follow", 'f', false}};
constexpr option_spec connect_options[] = {{"spawn", 0, false}};

// The subcommand table: `mcpmux NAME` dispatches to `run`; help text and option parsing come
// from here too. New subcommands (import, …) add one entry.
constexpr command_spec commands[] = {
    {"connect",
     "connect [--spawn]",
     "bridge stdin/stdout to the daemon (use as a stdio MCP server)",
     "Copies bytes between stdin/stdout and the daemon's socket, unchanged, so that any MCP\n"
     "client that launches stdio servers can use mcpmux:\n"
     "  command = \"mcpmux\", args = [\"connect\", \"--spawn\"]\n"
     "Ends when the daemon closes the connection (after stdin's EOF has been passed on).\n"
     "--timeout bounds only the connection attempt.\n"
     "Options:\n"
     "  --spawn   when no daemon answers, start mcpmuxd (from this program's directory, else\n"
     "            PATH) in the background with --socket, and wait up to 5 s for it; clients\n"
     "            starting together share one daemon (they queue on SOCKET.lock). Its output\n"
     "            goes to $XDG_STATE_HOME/mcpmux/mcpmuxd.log.\n",
     connect_options,
     {},
     0,
     0,
     control_timeout,
     run_connect},
    {"status",
     "status [--json]",
     "show the daemon and the state of every server",
     "Options:\n"
     "  --json   print the daemon's status object as JSON\n",
     json_option,
     {},
     0,
     0,
     control_timeout,
     run_status},
    {"tools",
     "tools [--json] [--server NAME]",
     "list the combined tools",
     "Options:\n"
     "  --json          print the tool list as a JSON array\n"
     "  --server NAME   only the tools of server NAME\n",
     tools_options,
     {},
     0,
     0,
     control_timeout,
     run_tools},
    {"call", "call TOOL [JSON_ARGS] [--json]", "call a tool and print its result",
     "Calls the exposed tool TOOL (see `mcpmux tools`) with JSON_ARGS, a JSON object\n"
     "(default {}). Text content is printed as text, other content as JSON; a tool error\n"
     "goes to stderr and exits 1.\n"
     "Options:\n"
     "  --json   print the raw result object (including structuredContent)\n",
     json_option, "TOOL", 1, 2, call_timeout, run_call},
    {"logs", "logs SERVER [-n N] [-f]", "print a server's recent log lines",
     "Options:\n"
     "  -n, --lines N   how many of the latest lines (default 100)\n"
     "  -f, --follow    then keep printing new lines as they come, until the daemon\n"
     "                  closes the connection or Ctrl-C (no timeout applies)\n",
     logs_options, "SERVER", 1, 1, control_timeout, run_logs},
    {"restart",
     "restart SERVER",
     "restart one server",
     "",
     {},
     "SERVER",
     1,
     1,
     control_timeout,
     run_restart},
    {"reload",
     "reload [--json]",
     "reload the configuration and print what changed",
     "Unchanged servers keep running; changed ones restart; added ones start; removed ones\n"
     "stop. An invalid file changes nothing: its errors are printed and the exit status is 1.\n"
     "Options:\n"
     "  --json   print the daemon's answer as JSON\n",
     json_option,
     {},
     0,
     0,
     control_timeout,
     run_reload},
};

const command_spec* find_command(std::string_view name) {
  for (const command_spec& c : commands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string global_help() {
  std::string out = fmt::format(
      "Usage: mcpmux [--socket PATH] [--timeout MS] COMMAND [ARGS...]\n"
      "\n"
      "Client of mcpmuxd, the daemon that shares one set of MCP servers among many clients.\n"
      "\n"
      "Commands:\n");
  for (const command_spec& c : commands) {
    out += fmt::format("  {:<34}{}\n", c.synopsis, c.summary);
  }
  // import works on files, not on the daemon: its own parser (daemon/mcpmux_import.cpp).
  out += fmt::format("  {:<34}{}\n", "import FILE... [--write]",
                     "convert mcpServers JSON (Claude, Cursor, VS Code, ...) to mcpmux TOML");
  out += fmt::format(
      "\n"
      "Global options (before or after the command):\n"
      "  --socket PATH   the daemon's socket; default $MCPMUX_SOCKET, else daemon.socket of the\n"
      "                  config ($MCPMUX_CONFIG or ~/.config/mcpmux/config.toml), else\n"
      "                  $XDG_RUNTIME_DIR/mcpmux/mcpmux.sock, else /tmp/mcpmux-UID/mcpmux.sock\n"
      "                  (here: {})\n"
      "  --timeout MS    how long to wait for each answer (default {} for call, {} otherwise)\n"
      "  -h, --help      show this help; `mcpmux COMMAND --help` for one command\n"
      "  -V, --version   show the version\n"
      "\n"
      "Exit status: 0 success, 1 the daemon or the tool reported an error (or timed out),\n"
      "2 bad usage, 3 no daemon answers.\n",
      default_socket_path(), call_timeout.count(), control_timeout.count());
  return out;
}

std::string command_help(const command_spec& c) {
  std::string summary(c.summary);
  summary[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(summary[0])));
  std::string out = fmt::format("Usage: mcpmux {}\n\n{}.\n", c.synopsis, summary);
  if (!c.help.empty()) out += fmt::format("\n{}", c.help);
  out += fmt::format(
      "\nGlobal options: --socket PATH, --timeout MS (default {} ms). See `mcpmux --help`.\n",
      c.default_timeout.count());
  return out;
}

failure usage_failure(const command_spec* c, std::string message) {
  std::string hint =
      c != nullptr ? fmt::format("usage: mcpmux {}\nTry 'mcpmux {} --help'.", c->synopsis, c->name)
                   : std::string(
                         "usage: mcpmux [--socket PATH] [--timeout MS] COMMAND [ARGS...]\n"
                         "Try 'mcpmux --help'.");
  return failure{exit_status::usage, std::move(message), std::move(hint)};
}

/// What the whole command line asks for.
struct invocation {
  const command_spec* command = nullptr;
  std::vector<std::string> args;  ///< the command's own arguments, globals removed
  std::optional<std::string> socket;
  std::optional<milliseconds> timeout;
  bool help = false;
  bool version = false;
};

// Consumes a global option at args[i] if there is one; true when it did.
outcome<bool> take_global(std::span<const std::string> args, std::size_t& i, invocation& inv) {
  std::string_view arg = args[i];
  for (std::string_view name : {std::string_view("--socket"), std::string_view("--timeout")}) {
    std::optional<std::string> value;
    if (arg == name) {
      if (i + 1 >= args.size()) {
        return usage_failure(inv.command, fmt::format("option '{}' needs a value", name));
      }
      value = args[++i];
    } else if (arg.starts_with(name) && arg.size() > name.size() && arg[name.size()] == '=') {
      value = std::string(arg.substr(name.size() + 1));
    } else {
      continue;
    }
    if (name == "--socket") {
      if (value->empty()) return usage_failure(inv.command, "--socket needs a non-empty path");
      inv.socket = std::move(value);
    } else {
      auto ms = parse_count(*value);
      if (!ms || *ms < 1 || *ms > INT32_MAX) {
        return usage_failure(inv.command,
                             fmt::format("--timeout wants milliseconds > 0, not '{}'", *value));
      }
      inv.timeout = milliseconds(*ms);
    }
    return true;
  }
  return false;
}

outcome<invocation> parse_invocation(std::span<const std::string> args) {
  invocation inv;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (inv.command != nullptr && arg == "--") {
      inv.args.insert(inv.args.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    auto global = take_global(args, i, inv);
    if (!global) return global.error();
    if (*global) continue;
    if (arg == "-h" || arg == "--help") {
      inv.help = true;
    } else if (inv.command != nullptr) {
      inv.args.push_back(arg);
    } else if (arg == "-V" || arg == "--version") {
      inv.version = true;
    } else if (arg.starts_with("-")) {
      return usage_failure(nullptr, fmt::format("unknown option '{}'", arg));
    } else if (arg == "help") {
      // `mcpmux help [COMMAND]`
      inv.help = true;
      if (i + 1 < args.size()) {
        inv.command = find_command(args[i + 1]);
        if (inv.command == nullptr) {
          return usage_failure(nullptr, fmt::format("unknown command '{}'", args[i + 1]));
        }
      }
      break;
    } else {
      inv.command = find_command(arg);
      if (inv.command == nullptr) {
        return usage_failure(nullptr, fmt::format("unknown command '{}'", arg));
      }
    }
  }
  return inv;
}

outcome<parsed_args> parse_command_args(const command_spec& spec,
                                        std::span<const std::string> args) {
  parsed_args out;
  bool only_positional = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (only_positional || arg.size() < 2 || arg[0] != '-') {
      out.positional.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    const option_spec* opt = nullptr;
    std::optional<std::string> inline_value;
    if (arg.starts_with("--")) {
      std::string_view body = std::string_view(arg).substr(2);
      auto eq = body.find('=');
      std::string_view name = body.substr(0, eq);
      if (eq != std::string_view::npos) inline_value = std::string(body.substr(eq + 1));
      for (const option_spec& o : spec.options) {
        if (o.name == name) opt = &o;
      }
    } else {
      for (const option_spec& o : spec.options) {
        if (o.short_name == arg[1]) opt = &o;
      }
      if (opt != nullptr && arg.size() > 2) {
        if (!opt->takes_value)
          opt = nullptr;  // no bundling of flags
        else
          inline_value = arg.substr(2);
      }
    }
    if (opt == nullptr) {
      return usage_failure(&spec, fmt::format("unknown option '{}' for {}", arg, spec.name));
    }
    if (!opt->takes_value) {
      if (inline_value) {
        return usage_failure(&spec, fmt::format("option '--{}' takes no value", opt->name));
      }
      out.options[std::string(opt->name)] = "";
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) {
        return usage_failure(&spec, fmt::format("option '{}' needs a value", arg));
      }
      inline_value = args[++i];
    }
    out.options[std::string(opt->name)] = std::move(*inline_value);
  }
  if (out.positional.size() < spec.min_positional) {
    return usage_failure(&spec, fmt::format("{}: missing {}", spec.name, spec.first_positional));
  }
  if (out.positional.size() > spec.max_positional) {
    return usage_failure(&spec, fmt::format("{}: unexpected argument '{}'", spec.name,
                                            out.positional[spec.max_positional]));
  }
  return out;
}

int run(std::span<const std::string> args) {
  auto inv = parse_invocation(args);
  if (!inv) return report(inv.error());
  if (inv->help) {
    std::string text = inv->command ? command_help(*inv->command) : global_help();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  if (inv->version) {
    fmt::print("mcpmux {}\n", MCPMUX_VERSION);
    return 0;
  }
  if (inv->command == nullptr) return report(usage_failure(nullptr, "no command given"));

  auto parsed = parse_command_args(*inv->command, inv->args);
  if (!parsed) return report(parsed.error());
  const context ctx{inv->socket ? *inv->socket : default_socket_path(),
                    inv->timeout.value_or(inv->command->default_timeout)};
  auto status = inv->command->run(ctx, *parsed);
  if (!status) return report(status.error());
  if (std::fflush(stdout) != 0 && *status == exit_status::ok) return 1;
  return static_cast<int>(*status);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 2 && std::string_view(argv[1]) == "import")
      return mcpmux::run_import(argc - 2, argv + 2);
    std::vector<std::string> args(argv + 1, argv + argc);
    return run(args);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mcpmux: internal error: {}\n", e.what());
    return 1;
  }
}
