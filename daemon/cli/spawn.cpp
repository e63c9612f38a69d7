// Starting the daemon for `mcpmux connect --spawn`: the lock that makes concurrent clients share
// one daemon, and the double fork that detaches it.
//
// Why a double fork: `mcpmux connect` lives as long as its agent, often for hours, and never
// waits for the daemon. Were the daemon our child, it would stay our zombie from the moment it
// exits until we do. The middle child starts a new session (no controlling terminal, so a hangup
// there does not reach the daemon), forks the daemon and exits at once; we reap only the middle
// child, and the daemon is reparented to init (or a subreaper), which reaps it. posix_spawn
// cannot do this: what it starts is the caller's child.
#include "daemon/cli/spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "config/files.hpp"

namespace mcpmux::cli {
namespace {

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
  if (const auto self = self_executable(); !self.empty()) {
    std::string candidate = parent_dir(self) + "/mcpmuxd";
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

/// A daemon being started: its pid, and the read end of the pipe it writes a byte down (then
/// closes) once its socket listens ($MCPMUX_READY_FD; an older daemon keeps it open silently).
struct started_daemon {
  pid_t pid = -1;
  unique_fd ready;
};

/// Starts `mcpmuxd --socket PATH` detached (own session, not our child, stdio to the log or
/// /dev/null); returns once it has been exec'd.
outcome<started_daemon> spawn_daemon(const std::string& socket, const std::string& program,
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
  int readyfd[2];
  if (::pipe2(readyfd, O_CLOEXEC) != 0) return fail(fmt::format("pipe: {}", errno_text(errno)));
  unique_fd ready_read{readyfd[0]};
  unique_fd ready_write{readyfd[1]};
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
    // The daemon's end of the ready pipe, named for this very process (the pid survives exec).
    ::fcntl(ready_write.get(), F_SETFD, 0);
    char number[16];
    std::snprintf(number, sizeof number, "%d", ready_write.get());
    ::setenv("MCPMUX_READY_FD", number, 1);
    std::snprintf(number, sizeof number, "%d", static_cast<int>(::getpid()));
    ::setenv("MCPMUX_READY_PID", number, 1);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) ::signal(sig, SIG_DFL);
    ::execvp(cargv[0], cargv.data());
    note('e', errno);
    ::_exit(127);
  }
  write_end.reset();
  ready_write.reset();
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
  return started_daemon{pid, std::move(ready_read)};
}

/// Waits up to `max` for the daemon's ready byte (or its end of the pipe closing: it exited);
/// once either came, or with no pipe, just sleeps `max`.
void wait_ready(unique_fd& ready, milliseconds max) {
  if (ready.get() < 0) {
    ::usleep(static_cast<useconds_t>(max.count() * 1000));
    return;
  }
  pollfd p{ready.get(), POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(max.count())) > 0) ready.reset();
}

}  // namespace

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
  auto started = spawn_daemon(socket, program, log);
  if (!started) return started.error();
  const std::string see_log = log.empty() ? std::string() : fmt::format("; see {}", log);
  const auto deadline = clock_type::now() + spawn_wait;
  for (;;) {
    fd = dial(socket, ctx.timeout);
    if (fd || fd.error().sys_errno == 0) return fd;
    if (::kill(started->pid, 0) != 0 && errno == ESRCH) {
      return failure{
          exit_status::no_daemon,
          fmt::format("{} (pid {}) exited during start-up{}", program, started->pid, see_log),
          {}};
    }
    if (clock_type::now() >= deadline) {
      return failure{exit_status::no_daemon,
                     fmt::format("started {} (pid {}), but it did not accept connections on {} "
                                 "within {} ms{}",
                                 program, started->pid, socket, spawn_wait.count(), see_log),
                     {}};
    }
    // Woken by the daemon's ready byte; an older daemon is dialled again every 20 ms.
    wait_ready(started->ready, milliseconds(20));
  }
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace mcpmux::cli
