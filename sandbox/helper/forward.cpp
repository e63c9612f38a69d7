// The forwarder: a TCP listener on loopback, the server as its child, and one poll loop that
// splices each TCP connection to a new connection on the proxy's Unix socket, both ways, with
// half-close. Signals arrive through a signalfd, so the loop has one place to wait.
#include "sandbox/helper/forward.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <list>
#include <memory>

namespace mcpmux {
namespace {

constexpr std::size_t buffer_bytes = 64 * 1024;  // per direction of a connection

// A descriptor closed with its owner.
class fd_holder {
 public:
  explicit fd_holder(int fd = -1) : fd_(fd) {}
  fd_holder(fd_holder&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  fd_holder& operator=(fd_holder&&) = delete;
  ~fd_holder() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

void complain(const char* what, const std::string& detail) {
  std::fprintf(stderr, "mcpmux-sandbox: %s%s: %s\n", what, detail.c_str(), std::strerror(errno));
}

// One way of a spliced connection: bytes read from `from`, not yet written to `to`.
struct direction {
  int from = -1;
  int to = -1;
  std::unique_ptr<char[]> buffer = std::make_unique<char[]>(buffer_bytes);
  std::size_t begin = 0, end = 0;
  bool ended = false;  ///< `from` said end of file
  bool shut = false;   ///< and `to` has been told so (shutdown for writing)

  bool wants_read() const { return !ended && end < buffer_bytes; }
  bool wants_write() const { return begin < end; }

  // Reads what is there, writes what it can; false on an error (the connection is dropped).
  bool step(short from_events, short to_events) {
    if (wants_read() && (from_events & (POLLIN | POLLHUP | POLLERR))) {
      const auto n = ::recv(from, buffer.get() + end, buffer_bytes - end, 0);
      if (n > 0) end += static_cast<std::size_t>(n);
      if (n == 0) ended = true;
      if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
    }
    if (wants_write() && (to_events & (POLLOUT | POLLERR))) {
      const auto n = ::send(to, buffer.get() + begin, end - begin, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) return false;
      if (n > 0) begin += static_cast<std::size_t>(n);
      if (begin == end) begin = end = 0;
    }
    if (ended && !wants_write() && !shut) {
      ::shutdown(to, SHUT_WR);
      shut = true;
    }
    return true;
  }
};

// A client's TCP connection and its connection to the proxy.
struct spliced {
  fd_holder tcp, proxy;
  direction out, in;  // tcp → proxy, proxy → tcp
  spliced(int t, int p) : tcp(t), proxy(p) {
    out.from = in.to = t;
    out.to = in.from = p;
  }
  bool done() const { return out.shut && in.shut; }
  // A side that hung up still reports POLLHUP to every poll: it is left out of the poll while
  // there is no room to read what it may still hold, so that the loop waits instead of spinning.
  bool tcp_hup = false, proxy_hup = false;
  pollfd tcp_poll() const { return entry(tcp.get(), tcp_hup, out, in); }
  pollfd proxy_poll() const { return entry(proxy.get(), proxy_hup, in, out); }
  // Moves bytes after a poll; false when the connection is to be dropped.
  bool step(short tcp_events, short proxy_events) {
    if ((tcp_events | proxy_events) & (POLLERR | POLLNVAL)) return false;
    tcp_hup = tcp_hup || (tcp_events & POLLHUP);
    proxy_hup = proxy_hup || (proxy_events & POLLHUP);
    return out.step(tcp_events, proxy_events) && in.step(proxy_events, tcp_events) && !done();
  }

 private:
  // The poll entry of the descriptor that `reads` reads from and `writes` writes to.
  static pollfd entry(int fd, bool hup, const direction& reads, const direction& writes) {
    const auto events = static_cast<short>((reads.wants_read() ? POLLIN : 0) |
                                           (writes.wants_write() ? POLLOUT : 0));
    return {hup && !reads.wants_read() ? -1 : fd, events, 0};
  }
};

int listen_tcp(unsigned short port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 128) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

// A new connection to the proxy, or -1. Never waits: a proxy whose backlog is full refuses at
// once (the client sees its connection closed) rather than stalling every other connection.
int dial_proxy(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

// In the child: the caller's signal mask back, no descriptor but stdio, then the server.
[[noreturn]] void exec_server(const std::vector<std::string>& argv, const sigset_t& old_mask) {
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  if (::close_range(3, ~0U, 0) != 0)
    for (int fd = 3; fd < 1024; ++fd) ::close(fd);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  complain("cannot run ", argv[0]);
  ::_exit(127);
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

class forwarder {
 public:
  forwarder(const forward_options& o, int listener, int signals, pid_t child)
      : opt_(o), listener_(listener), signals_(signals), child_(child) {}

  // Until the server ends; its exit code.
  int run() {
    std::vector<pollfd> fds;
    for (;;) {
      fds.clear();
      fds.push_back({signals_.get(), POLLIN, 0});
      const bool room = conns_.size() < opt_.connections_max;
      fds.push_back({room ? listener_.get() : -1, POLLIN, 0});
      for (const auto& c : conns_) {
        fds.push_back(c.tcp_poll());
        fds.push_back(c.proxy_poll());
      }
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) {
        complain("poll", "");
        return 1;
      }
      if ((fds[0].revents & POLLIN) && handle_signals()) return exit_code(status_);
      if (fds[1].revents & POLLIN) accept_all();
      std::size_t i = 2;
      for (auto it = conns_.begin(); it != conns_.end() && i + 1 < fds.size(); i += 2) {
        it = it->step(fds[i].revents, fds[i + 1].revents) ? std::next(it) : conns_.erase(it);
      }
    }
  }

 private:
  // Passes termination signals on and reaps children; true once the server has ended.
  bool handle_signals() {
    signalfd_siginfo info;
    while (::read(signals_.get(), &info, sizeof info) == sizeof info) {
      if (info.ssi_signo != SIGCHLD) ::kill(child_, static_cast<int>(info.ssi_signo));
    }
    // Orphans are ours too when this runs as the namespace's first process.
    for (;;) {
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) return false;
      if (pid == child_) {
        status_ = status;
        return true;
      }
    }
  }

  void accept_all() {
    while (conns_.size() < opt_.connections_max) {
      const int client = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (client < 0) return;  // EAGAIN: none left; anything else: the next poll tries again
      const int proxy = dial_proxy(opt_.socket_path);
      if (proxy < 0) {
        complain("cannot reach the network proxy at ", opt_.socket_path);
        ::close(client);
        continue;
      }
      conns_.emplace_back(client, proxy);
    }
  }

  const forward_options& opt_;
  fd_holder listener_, signals_;
  pid_t child_;
  int status_ = 0;
  std::list<spliced> conns_;
};

}  // namespace

int run_forward(const forward_options& options) {
  if (options.argv.empty()) {
    std::fprintf(stderr, "mcpmux-sandbox: no command to run\n");
    return 127;
  }
  const int listener = listen_tcp(options.port);
  if (listener < 0) {
    complain("cannot listen on 127.0.0.1:", std::to_string(options.port));
    return 127;
  }
  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&handled, s);
  ::sigprocmask(SIG_BLOCK, &handled, &old_mask);
  const int signals = ::signalfd(-1, &handled, SFD_CLOEXEC | SFD_NONBLOCK);
  const pid_t child = signals < 0 ? -1 : ::fork();
  if (child == 0) exec_server(options.argv, old_mask);
  if (child < 0) {
    complain("cannot start the server", "");
    ::close(listener);
    if (signals >= 0) ::close(signals);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    return 127;
  }
  const int code = forwarder(options, listener, signals, child).run();
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  return code;
}

}  // namespace mcpmux
