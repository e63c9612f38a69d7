// A child process with pipes on stdin and stdout, for the integration tests that stream to a
// command (mcpmux connect, a daemon with socket activation).
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "tests/integration/harness.hpp"

extern char** environ;

namespace mcpmux::test {

// The environment for a process we start ourselves: no leaks from the developer's shell.
inline std::vector<std::string> child_env(const std::map<std::string, std::string>& changes) {
  static const std::set<std::string> drop{"MCPMUX_TIMEOUT_MS", "MCPMUX_SOCKET", "MCPMUX_CONFIG",
                                          "JOURNAL_STREAM",    "LISTEN_FDS",    "LISTEN_PID",
                                          "LISTEN_FDNAMES",    "NOTIFY_SOCKET"};
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    std::string key = kv.substr(0, kv.find('='));
    if (drop.count(key) || changes.count(key)) continue;
    out.push_back(kv);
  }
  for (const auto& [k, v] : changes) out.push_back(k + "=" + v);
  return out;
}

/// A child process with pipes on stdin and stdout (stderr to a file), for streaming commands.
class child_process {
 public:
  /// `listen_fd` >= 0 is passed as fd 3 with LISTEN_FDS=1 and LISTEN_PID set in the child.
  child_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                const std::string& stderr_path, int listen_fd = -1) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2: " << std::strerror(errno);
      return;
    }
    std::vector<std::string> args = argv;
    std::vector<std::string> envs = child_env(env);
    std::vector<char*> cargs, cenv;
    for (auto& a : args) cargs.push_back(a.data());
    cargs.push_back(nullptr);
    for (auto& e : envs) cenv.push_back(e.data());
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      if (err >= 0) ::dup2(err, 2);
      std::string listen_pid = "LISTEN_PID=" + std::to_string(::getpid());
      if (listen_fd >= 0) {
        if (listen_fd != 3) {
          ::dup2(listen_fd, 3);  // dup2 clears close-on-exec on the new descriptor
        } else {
          ::fcntl(3, F_SETFD, 0);
        }
        cenv.push_back(const_cast<char*>("LISTEN_FDS=1"));
        cenv.push_back(listen_pid.data());
      }
      cenv.push_back(nullptr);
      ::signal(SIGPIPE, SIG_DFL);
      ::execve(cargs[0], cargs.data(), cenv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    in_ = in[1];
    out_ = out[0];
  }
  ~child_process() {
    close_stdin();
    if (out_ >= 0) ::close(out_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& out() const { return buf_; }

  bool write(std::string_view text) {
    while (!text.empty()) {
      ssize_t n = ::write(in_, text.data(), text.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      text.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  void close_stdin() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }

  /// Reads stdout until it contains `text` (true) or `timeout` passes / EOF (false).
  bool wait_output(std::string_view text, ms timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (buf_.find(text) == std::string::npos) {
      auto left =
          std::chrono::duration_cast<ms>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0 || out_ < 0) return false;
      pollfd p{out_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      char chunk[4096];
      ssize_t n = ::read(out_, chunk, sizeof chunk);
      if (n <= 0) {
        ::close(out_);
        out_ = -1;
        return buf_.find(text) != std::string::npos;
      }
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
    return true;
  }

  /// Waits for the exit; the exit status, -1 when killed by a signal, nullopt on timeout.
  std::optional<int> wait_exit(ms timeout) {
    int status = 0;
    const bool done =
        wait_until([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout, 5ms);
    if (!done) return std::nullopt;
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  bool reaped_ = false;
  std::string buf_;
};

}  // namespace mcpmux::test
