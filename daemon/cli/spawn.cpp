// Starting the daemon for `mcpmux connect --spawn`: the lock that makes concurrent clients share
// one daemon, the spawn that detaches it, and the wait for its socket.
#include "daemon/cli/spawn.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include "base/files.hpp"
#include "config/config.hpp"
#include "config/paths.hpp"

namespace mcpmux::cli {
namespace {

/// How long a freshly started daemon gets to accept connections.
constexpr milliseconds spawn_wait{5'000};
/// How long to wait for another client that is starting the daemon (it needs spawn_wait).
constexpr milliseconds spawn_lock_wait{3 * spawn_wait};

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

/// A daemon being started: its pid, and the read end of the pipe it writes a byte down (then
/// closes) once its socket listens (`--ready-fd`).
struct started_daemon {
  pid_t pid = -1;
  unique_fd ready;
};

/// Starts `mcpmuxd --socket PATH --ready-fd N` in a session of its own (no controlling
/// terminal, out of our process group), stdio to the log or /dev/null; returns once it has been
/// exec'd. posix_spawn (a vfork, no copy of our page tables) instead of a double fork: this is on
/// the path of every agent that starts the daemon. It is our child, so SIGCHLD is ignored: the
/// kernel reaps it should it exit before we do; after we do, init (or a subreaper) does.
outcome<started_daemon> spawn_daemon(const context& ctx, const std::string& program,
                                     const std::string& log) {
  if (!log.empty()) (void)mcpmux::make_dirs(parent_dir(log), 0700);
  int readyfd[2];
  if (::pipe2(readyfd, O_CLOEXEC) != 0) return fail(fmt::format("pipe: {}", errno_text(errno)));
  unique_fd ready_read{readyfd[0]};
  unique_fd ready_write{readyfd[1]};
  // Opened here, so that a log that cannot be written means /dev/null, not a failed start.
  unique_fd null{::open("/dev/null", O_RDWR | O_CLOEXEC)};
  if (null.get() < 0) return fail(fmt::format("/dev/null: {}", errno_text(errno)));
  unique_fd out{log.empty() ? -1
                            : ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)};
  const int out_fd = out.get() >= 0 ? out.get() : null.get();
  // The daemon's end of the pipe: its lowest descriptor above stdio that is none of ours it
  // still needs (the pipe is placed first, stdio after).
  int ready_target = 3;
  while (ready_target == ready_write.get() || ready_target == null.get() || ready_target == out_fd)
    ++ready_target;
  // A default socket is the daemon's to find by the same rule (same environment, same config):
  // it then records it for clients whose environment lacks what found it. A named one is passed.
  std::vector<std::string> argv{program, "--ready-fd", std::to_string(ready_target)};
  if (!ctx.default_socket) argv.insert(argv.end(), {"--socket", ctx.socket_path});
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  // Nothing of ours that systemd handed us belongs to the daemon.
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) {
    const std::string_view var(*e);
    bool ours = false;
    for (std::string_view name : {"NOTIFY_SOCKET=", "LISTEN_PID=", "LISTEN_FDS=", "LISTEN_FDNAMES=",
                                  "WATCHDOG_PID=", "WATCHDOG_USEC="})
      ours = ours || var.substr(0, name.size()) == name;
    if (!ours) envp.push_back(*e);
  }
  envp.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawnattr_init(&attr);
  ::posix_spawn_file_actions_adddup2(&fa, ready_write.get(), ready_target);  // not close-on-exec
  ::posix_spawn_file_actions_adddup2(&fa, null.get(), STDIN_FILENO);
  ::posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&fa, out_fd, STDERR_FILENO);
  sigset_t none, defaults;
  ::sigemptyset(&none);
  ::sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) ::sigaddset(&defaults, sig);
  ::posix_spawnattr_setsigmask(&attr, &none);
  ::posix_spawnattr_setsigdefault(&attr, &defaults);
  ::posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGCHLD, &ignore, nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, cargv[0], &fa, &attr, cargv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&fa);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return failure{
        exit_status::no_daemon, fmt::format("cannot start {}: {}", program, errno_text(rc)), {}};
  }
  return started_daemon{pid, std::move(ready_read)};
}

/// The lock that makes concurrent `--spawn`s start one daemon: one per user, next to the
/// daemon's record (~/.local/state/mcpmux/spawn.lock), whatever socket path each client
/// resolved. Its directory must be the user's own and private, and the file is opened without
/// following a symlink.
outcome<unique_fd> open_spawn_lock() {
  const std::string dir = parent_dir(daemon_record_path());
  const std::string path = dir + "/spawn.lock";
  if (auto made = mcpmux::make_private_dir(dir); !made)
    return failure{exit_status::no_daemon, "cannot start the daemon: " + made.error().message, {}};
  unique_fd lock{::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)};
  struct stat st {};
  if (lock.get() < 0 || ::fstat(lock.get(), &st) != 0) {
    return failure{
        exit_status::no_daemon, fmt::format("cannot open {}: {}", path, errno_text(errno)), {}};
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != ::getuid()) {
    return failure{
        exit_status::no_daemon, fmt::format("refusing the lock {}: not a file of yours", path), {}};
  }
  return lock;
}

/// open_spawn_lock(), then an exclusive flock on it, waiting for another client that is starting
/// the daemon.
outcome<unique_fd> take_spawn_lock() {
  auto lock = open_spawn_lock();
  if (!lock) return lock;
  const auto lock_deadline = clock_type::now() + spawn_lock_wait;
  while (::flock(lock->get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return fail(fmt::format("cannot lock the daemon's start: {}", errno_text(errno)));
    }
    if (clock_type::now() >= lock_deadline) {
      return fail(
          fmt::format("timed out after {} ms waiting for another mcpmux to start the daemon",
                      spawn_lock_wait.count()));
    }
    ::usleep(2'000);  // the holder is starting the daemon: ~20-30 ms; we follow within 2 ms
  }
  return lock;
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
  auto lock = take_spawn_lock();
  if (!lock) return lock.error();

  // Whoever held the lock before us may have started the daemon already.
  auto fd = dial_daemon(ctx);
  if (fd || fd.error().sys_errno == 0) return fd;

  const std::string program = daemon_program();
  const std::string log = spawn_log_path();
  auto started = spawn_daemon(ctx, program, log);
  if (!started) return started.error();
  const std::string see_log = log.empty() ? std::string() : fmt::format("; see {}", log);
  const auto deadline = clock_type::now() + spawn_wait;
  for (;;) {
    fd = dial_daemon(ctx);
    if (fd || fd.error().sys_errno == 0) return fd;
    if (::kill(started->pid, 0) != 0 && errno == ESRCH) {
      return failure{
          exit_status::no_daemon,
          fmt::format("{} (pid {}) exited during start-up{}", program, started->pid, see_log),
          {}};
    }
    if (clock_type::now() >= deadline) {
      return failure{
          exit_status::no_daemon,
          fmt::format("started {} (pid {}), but it did not accept connections on {} "
                      "within {} ms{}",
                      program, started->pid, ctx.socket_path, spawn_wait.count(), see_log),
          {}};
    }
    // Woken by the daemon's ready byte (or its exit); between tries every 20 ms all the same.
    wait_ready(started->ready, milliseconds(20));
  }
}

std::string daemon_program() {
  if (const auto self = self_executable(); !self.empty()) {
    std::string candidate = parent_dir(self) + "/mcpmuxd";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "mcpmuxd";
}

std::string self_executable() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace mcpmux::cli
