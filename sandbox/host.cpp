// Probes bubblewrap by running it once: whether user namespaces are allowed depends on the
// kernel, its sysctls, AppArmor and the container the daemon runs in, and only a try tells.
#include "sandbox/host.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace mcpmux {
namespace {

// Runs argv with no stdio (all /dev/null) and returns its wait status, or -1 when it could not
// start or did not end within `limit` (then it is killed).
int run_quietly(const std::vector<std::string>& args, std::chrono::milliseconds limit,
                std::string& stderr_text) {
  int err[2];
  if (::pipe2(err, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(err[1]);
  if (rc != 0) {
    ::close(err[0]);
    stderr_text = std::strerror(rc);
    return -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[512];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{err[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::read(err[0], buf, sizeof buf);
    if (n <= 0) break;
    if (stderr_text.size() < 2048) stderr_text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(err[0]);
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      stderr_text = "did not finish within " + std::to_string(limit.count()) + " ms";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

std::string first_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  return s;
}

}  // namespace

int landlock_abi_version() {
  const long v =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return v > 0 ? static_cast<int>(v) : 0;
}

sandbox_host locate_sandbox_host(const std::string& bwrap) {
  sandbox_host host;
  host.landlock_abi = landlock_abi_version();
  host.bwrap = bwrap;
  if (host.bwrap.empty())
    host.problem = "bubblewrap (bwrap) is not installed: apt install bubblewrap";
  else
    host.namespaces = true;
  return host;
}

std::string try_namespaces(const std::string& bwrap) {
  std::string err;
  const int status = run_quietly(
      {bwrap, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "/bin/true"},
      std::chrono::seconds(5), err);
  if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
  err = first_line(err);
  return "bubblewrap cannot create namespaces here" + (err.empty() ? std::string() : ": " + err) +
         " (user namespaces disabled? see docs/security.md)";
}

sandbox_host probe_sandbox_host(const std::string& bwrap) {
  sandbox_host host = locate_sandbox_host(bwrap);
  if (!host.usable()) return host;
  host.problem = try_namespaces(host.bwrap);
  host.namespaces = host.problem.empty();
  return host;
}

}  // namespace mcpmux
