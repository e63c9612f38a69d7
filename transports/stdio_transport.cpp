// Spawns an MCP server as a child process group and moves NDJSON over its stdin/stdout.
#include "transports/stdio_transport.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "protocol/error.hpp"
#include "transports/fd_transport.hpp"

extern char** environ;

namespace mcpmux {
namespace {

namespace asio = boost::asio;
using descriptor = asio::posix::stream_descriptor;

std::size_t g_live_children = 0;
constexpr std::size_t max_stderr_line = 4096;

struct pipe_pair {
  int r = -1, w = -1;
  ~pipe_pair() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
  }
  bool open() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return false;
    r = fds[0];
    w = fds[1];
    // Never 0, 1 or 2 (a daemon started with them closed): the child's dup2 onto its stdio must
    // not overwrite another pipe end.
    return keep_above_stdio(r) && keep_above_stdio(w);
  }
  static bool keep_above_stdio(int& fd) {
    if (fd > STDERR_FILENO) return true;
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    if (moved < 0) return false;
    ::close(std::exchange(fd, moved));
    return true;
  }
  int take_r() { return std::exchange(r, -1); }
  int take_w() { return std::exchange(w, -1); }
};

std::string lookup_env(const std::vector<std::string>& env, std::string_view key) {
  for (const auto& kv : env)
    if (kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=')
      return kv.substr(key.size() + 1);
  return {};
}

// PATH lookup as execvp would do it, but against the child's environment.
std::filesystem::path find_program(const std::string& command, const std::vector<std::string>& env,
                                   const std::string& cwd) {
  if (command.find('/') != std::string::npos) {
    std::filesystem::path p(command);
    if (p.is_relative() && !cwd.empty()) p = std::filesystem::path(cwd) / p;
    return p;
  }
  std::string path = lookup_env(env, "PATH");
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::filesystem::path dir = path.substr(start, end - start);
    if (dir.empty()) dir = ".";
    auto candidate = dir / command;
    if (::access(candidate.c_str(), X_OK) == 0 && !std::filesystem::is_directory(candidate))
      return candidate;
    start = end + 1;
  }
  return {};
}

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos && overrides.count(std::string(kv.substr(0, eq)))) continue;
    env.emplace_back(kv);
  }
  for (const auto& [k, v] : overrides) env.push_back(k + "=" + v);
  return env;
}

class stdio_transport final : public transport,
                              public transport_events,
                              public std::enable_shared_from_this<stdio_transport> {
 public:
  // `pidfd` < 0: pidfd_open is unavailable, the child's exit is noticed through SIGCHLD.
  stdio_transport(asio::io_context& io, int pid, int pidfd, int stdin_w, int stdout_r, int stderr_r,
                  const stdio_options& opt)
      : io_(io), pid_(pid), opt_(opt), err_(io, stderr_r), exit_wait_(io), timer_(io) {
    if (pidfd >= 0)
      exit_wait_.assign(pidfd);
    else
      sigchld_.emplace(io, SIGCHLD);  // from here on no SIGCHLD is missed (asio queues them)
    fd_transport_options fo;
    fo.limits = opt.limits;
    fo.flush_timeout = opt.stdin_grace;
    fo.last_line_at_eof = opt.last_line_at_eof;
    fo.batch = opt.batch;
    inner_ = make_fd_transport(io, stdout_r, stdin_w, fo);
    ++g_live_children;
  }

  ~stdio_transport() override {
    if (!reaped_) {
      // Last resort (the loop is gone): never leave a child behind.
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      --g_live_children;
    }
  }

  void start(transport_events& events) override {
    events_ = &events;
    inner_->start(*this);
    read_stderr();
    if (sigchld_)
      reap();  // the child may have exited before sigchld_ was there; else waits
    else
      wait_exit();
  }

  std::error_code send(std::string message) override {
    if (closing_ || exited_) return errc::transport_closed;
    return inner_->send(std::move(message));
  }

  std::error_code send_copy(std::string_view message) override {
    if (closing_ || exited_) return errc::transport_closed;
    return inner_->send_copy(message);
  }

  void close() override {
    if (closing_) return;
    closing_ = true;
    events_ = nullptr;
    inner_->close();  // flushes, then closes the child's stdin
    if (reaped_) return;
    // stdin closed → SIGTERM to the group → SIGKILL, each step bounded.
    arm(opt_.stdin_grace + opt_.stdin_grace / 4, [](stdio_transport& self) {
      self.signal_group(SIGTERM);
      self.arm(self.opt_.term_grace, [](stdio_transport& s) { s.signal_group(SIGKILL); });
    });
  }

  std::size_t queued_bytes() const override { return inner_->queued_bytes(); }

  // transport_events of the inner NDJSON channel.
  void on_message(std::string_view text) override {
    if (events_) events_->on_message(text);
  }
  void on_message_buffer(std::string&& text) override {
    if (events_) events_->on_message_buffer(std::move(text));
  }
  void on_oversize(std::size_t bytes) override {
    if (events_) events_->on_oversize(bytes);
  }
  void on_oversize_head(std::size_t bytes, std::string_view head) override {
    if (events_) events_->on_oversize_head(bytes, head);
  }
  void on_closed(std::error_code, std::string reason) override {
    stdout_closed_ = true;
    stdout_reason_ = std::move(reason);
    if (exited_) return report_closed();
    // stdout ended but the child lives: give it a moment to exit so the reason names its status.
    arm(std::chrono::milliseconds(500), [](stdio_transport& self) { self.report_closed(); });
  }

 private:
  template <class F>
  void arm(std::chrono::milliseconds d, F f) {
    timer_.expires_after(d);
    timer_.async_wait([self = shared_from_this(), f](boost::system::error_code ec) {
      if (!ec) f(*self);
    });
  }

  void signal_group(int sig) {
    if (!reaped_ || sig == SIGKILL) ::kill(-pid_, sig);
  }

  void read_stderr() {
    err_.async_read_some(asio::buffer(err_buf_),
                         [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
                           self->on_stderr_bytes(std::string_view(self->err_buf_.data(), n));
                           if (ec) {
                             if (!self->err_line_.empty()) self->emit_stderr_line();
                             return;
                           }
                           self->read_stderr();
                         });
  }

  void on_stderr_bytes(std::string_view data) {
    while (!data.empty()) {
      auto nl = data.find('\n');
      auto part = data.substr(0, nl);
      if (err_line_.size() < max_stderr_line)
        err_line_.append(part.substr(0, max_stderr_line - err_line_.size()));
      if (nl == std::string_view::npos) return;
      emit_stderr_line();
      data.remove_prefix(nl + 1);
    }
  }

  void emit_stderr_line() {
    if (!err_line_.empty() && err_line_.back() == '\r') err_line_.pop_back();
    if (opt_.on_stderr && !closing_) opt_.on_stderr(err_line_);
    err_line_.clear();
  }

  void wait_exit() {
    if (sigchld_) {  // any child's SIGCHLD wakes every waiting transport: reap() checks its own
      sigchld_->async_wait([self = shared_from_this()](boost::system::error_code ec, int) {
        if (ec == asio::error::operation_aborted) return;
        self->reap();
      });
      return;
    }
    exit_wait_.async_wait(descriptor::wait_read,
                          [self = shared_from_this()](boost::system::error_code ec) {
                            if (ec == asio::error::operation_aborted) return;
                            self->reap();
                          });
  }

  void reap() {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return wait_exit();  // spurious wake-up
    reaped_ = true;
    exited_ = true;
    --g_live_children;
    status_ = status;
    if (opt_.on_exit) opt_.on_exit(status);
    boost::system::error_code ignored;
    exit_wait_.close(ignored);
    if (sigchld_) sigchld_->cancel(ignored);
    // Whatever the leader left in its group (npx → node) dies with it.
    ::kill(-pid_, SIGKILL);
    if (closing_) {
      timer_.cancel();
      return;
    }
    // What the child wrote before it exited is in the pipe already: deliver it, then report
    // the exit now — not when the last holder of its stdout (a grandchild, maybe in another
    // process group) lets go, which could be never. Status must show the death at once.
    if (!stdout_closed_) inner_->read_ready();
    report_closed();
  }

  void report_closed() {
    auto* ev = std::exchange(events_, nullptr);
    if (!ev) return;
    std::string reason = !exited_             ? stdout_reason_ + " (process still running)"
                         : opt_.describe_exit ? opt_.describe_exit(status_)
                                              : describe_wait_status(status_);
    ev->on_closed(errc::transport_closed, std::move(reason));
  }

  asio::io_context& io_;
  int pid_;
  stdio_options opt_;
  std::shared_ptr<transport> inner_;
  descriptor err_;
  descriptor exit_wait_;                     // the pidfd
  std::optional<asio::signal_set> sigchld_;  // instead, without pidfd_open
  asio::steady_timer timer_;
  transport_events* events_ = nullptr;
  std::array<char, 4096> err_buf_{};
  std::string err_line_;
  std::string stdout_reason_;
  int status_ = 0;
  bool closing_ = false;
  bool exited_ = false;
  bool reaped_ = false;
  bool stdout_closed_ = false;
};

}  // namespace

std::size_t live_children() {
  return g_live_children;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
  }
  return "ended with status " + std::to_string(status);
}

std::string program_path(const stdio_options& opt) {
  return find_program(opt.command, merged_environment(opt.env), opt.cwd).string();
}

result<spawned_child> spawn_stdio(asio::io_context& io, const stdio_options& opt) {
  auto env = merged_environment(opt.env);
  auto program = find_program(opt.command, env, opt.cwd);
  if (program.empty()) {
    return failure("cannot start \"" + opt.command + "\": command not found in PATH");
  }
  pipe_pair in, outp, err;
  if (!in.open() || !outp.open() || !err.open()) {
    return failure(std::string("cannot create pipes: ") + std::strerror(errno));
  }
  // posix_spawn (clone with CLONE_VM|CLONE_VFORK in glibc) copies no page tables, unlike fork:
  // starting a hundred servers costs the loop little, however big the daemon is. The child gets
  // the pipes as stdin/stdout/stderr and no other descriptor, its own process group, an empty
  // signal mask and SIGPIPE back to default (the daemon ignores it; ignored signals survive exec).
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_adddup2(&actions, in.r, STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, outp.w, STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, err.w, STDERR_FILENO);
  ::posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
  if (!opt.cwd.empty()) ::posix_spawn_file_actions_addchdir_np(&actions, opt.cwd.c_str());
  sigset_t none, pipe_default;
  sigemptyset(&none);
  sigemptyset(&pipe_default);
  sigaddset(&pipe_default, SIGPIPE);
  ::posix_spawnattr_setflags(
      &attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  ::posix_spawnattr_setpgroup(&attr, 0);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &pipe_default);
  std::vector<char*> argv;
  argv.reserve(opt.args.size() + 2);
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : opt.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (auto& kv : env) envp.push_back(kv.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return failure("cannot start \"" + opt.command + "\": " + std::strerror(rc));
  }
  // Our own pidfd: readable when the child exits, so waiting costs no thread and no SIGCHLD.
  // Where pidfd_open does not exist (Linux before 5.3, seccomp filters that refuse it, valgrind
  // 3.19 of Debian 12) the transport waits for SIGCHLD instead.
  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0 && errno != ENOSYS && errno != EPERM) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return failure(std::string("pidfd_open failed: ") + std::strerror(errno));
  }
  if (pidfd >= 0) ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);
  // The child's ends were duplicated into it; close ours.
  ::close(in.take_r());
  ::close(outp.take_w());
  ::close(err.take_w());
  return spawned_child{std::make_shared<stdio_transport>(io, pid, pidfd, in.take_w(), outp.take_r(),
                                                         err.take_r(), opt),
                       pid};
}

}  // namespace mcpmux
