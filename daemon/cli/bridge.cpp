// The stdio<->socket bridge of `mcpmux connect`: one poll loop, bounded buffers, no parsing.
#include "daemon/cli/bridge.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "daemon/cli/json.hpp"
#include "transports/stdio_handoff.hpp"

namespace mcpmux::cli {
namespace {

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

bool is_pipe_or_socket(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

// The daemon's first line, exactly (bytes after it stay in the socket for the copying bridge);
// empty on EOF, error or timeout.
std::string read_answer_line(int sock, std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{sock, POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, left.count())));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return {};
    const ssize_t n = ::recv(sock, buf, sizeof buf, MSG_PEEK);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    const auto* nl = static_cast<const char*>(std::memchr(buf, '\n', static_cast<std::size_t>(n)));
    if (!nl) {
      if (n == static_cast<ssize_t>(sizeof buf)) return {};  // no answer of ours is that long
      continue;                                              // wait for the rest of the line
    }
    const std::size_t len = static_cast<std::size_t>(nl - buf) + 1;
    std::string line(len, '\0');
    if (::recv(sock, line.data(), len, 0) != static_cast<ssize_t>(len)) return {};
    line.pop_back();
    return line;
  }
}

// After the handoff: the daemon holds the agent's pipes. Ours go, so that the agent's end of
// them depends on the daemon alone; then wait for the daemon to close the socket.
exit_status wait_for_daemon(int sock) {
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
    ::close(null);
  }
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) & ~O_NONBLOCK);  // now we only wait
  char buf[256];
  for (;;) {
    const ssize_t n = ::read(sock, buf, sizeof buf);
    if (n > 0) continue;  // nothing is expected here
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    return exit_status::ok;
  }
}

}  // namespace

std::optional<exit_status> choose_profile(int sock, const std::string& name,
                                          std::chrono::milliseconds answer_timeout) {
  const std::string line = json::serialize(json::object{{"jsonrpc", "2.0"},
                                                        {"id", "mcpmux-profile"},
                                                        {"method", "mcpmux/profile"},
                                                        {"params", json::object{{"name", name}}}}) +
                           "\n";
  if (::send(sock, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    fmt::print(stderr, "mcpmux: cannot write to the daemon: {}\n", std::strerror(errno));
    return exit_status::no_daemon;
  }
  const auto answer = read_answer_line(
      sock, answer_timeout.count() > 0 ? answer_timeout : std::chrono::milliseconds(10000));
  boost::system::error_code ec;
  const auto reply = parse_json(answer, ec);
  if (!ec && member(reply, "result")) return std::nullopt;
  const json::value* error = ec ? nullptr : member(reply, "error");
  const auto text = error ? member_string(*error, "message") : std::nullopt;
  print_visible(stderr, "mcpmux: {}\n",
                text ? *text : std::string_view("the daemon did not answer the profile request"));
  return exit_status::failure;
}

exit_status run_connect_bridge(int sock, std::chrono::milliseconds answer_timeout) {
  const char* off = std::getenv("MCPMUX_NO_HANDOFF");
  if ((off && *off) || !is_pipe_or_socket(STDIN_FILENO) || !is_pipe_or_socket(STDOUT_FILENO) ||
      !handoff::send_request(sock, STDIN_FILENO, STDOUT_FILENO))
    return run_bridge(sock);
  const auto answer = read_answer_line(
      sock, answer_timeout.count() > 0 ? answer_timeout : std::chrono::milliseconds(10000));
  if (answer == handoff::accepted) return wait_for_daemon(sock);
  if (answer.empty()) {
    fmt::print(stderr, "mcpmux: the daemon did not answer the stdio handoff\n");
    return exit_status::failure;
  }
  return run_bridge(sock);  // an older daemon refused the method: copy bytes instead
}

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

}  // namespace mcpmux::cli
