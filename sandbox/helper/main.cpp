// mcpmux-sandbox: the small program between mcpmuxd and bubblewrap. It runs in the child mcpmuxd
// spawned, before anything of the server does, so every process the server makes is inside its
// limits from the start:
//   mcpmux-sandbox enter [--cgroup FILE]… [--files N] [--cpu SECONDS] [--address-space MIB]
//                        [--runner] [--no-seccomp] -- BWRAP ARGS…
//     joins each cgroup (its pid into FILE), sets RLIMIT_NOFILE (RLIMIT_CPU, RLIMIT_AS), builds the
//     seccomp filter (the runner's with --runner: no new processes) and execs bubblewrap with
//     `--seccomp FD`.
//   mcpmux-sandbox lock -- PROGRAM ARGS…
//     inside the code-mode runner's sandbox: refuses every later exec, then execs PROGRAM (an
//     absolute path), the one exec it allows.
//   mcpmux-sandbox confine [--write PATH]… -- PROGRAM ARGS…
//     inside the sandbox: Landlock (where the kernel has it) limits writes to PATHs, then execs.
//   mcpmux-sandbox forward --port P --socket PATH -- PROGRAM ARGS…
//     inside a sandbox with a network list: forwards 127.0.0.1:P to the daemon's filtering proxy
//     and runs the server (sandbox/helper/forward.hpp).
// Its errors go to stderr, which is the server's: status shows them.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "sandbox/helper/forward.hpp"
#include "sandbox/helper/landlock.hpp"
#include "sandbox/helper/seccomp.hpp"

namespace {

constexpr int exit_setup_failed = 125;

int fail(const std::string& message) {
  std::fprintf(stderr, "mcpmux-sandbox: %s\n", message.c_str());
  return exit_setup_failed;
}

bool join_cgroup(const std::string& procs, std::string& error) {
  const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
  const std::string pid = std::to_string(::getpid());
  const bool ok =
      fd >= 0 && ::write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
  if (!ok) error = "cannot join the cgroup " + procs + ": " + std::strerror(errno);
  if (fd >= 0) ::close(fd);
  return ok;
}

bool limit_files(rlim_t n, std::string& error) {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  // An unprivileged process cannot raise its hard limit: the smaller of the two then holds.
  rl.rlim_cur = rl.rlim_max =
      (rl.rlim_max == RLIM_INFINITY || n <= rl.rlim_max || ::geteuid() == 0) ? n : rl.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &rl) == 0) return true;
  error = std::string("cannot limit open files: ") + std::strerror(errno);
  return false;
}

// A CPU time limit the kernel holds: SIGXCPU at the limit, SIGKILL a second later (what is left
// when the runner's own watch cannot act).
bool limit_cpu(rlim_t seconds, std::string& error) {
  const rlimit rl{seconds, seconds + 1};
  if (::setrlimit(RLIMIT_CPU, &rl) == 0) return true;
  error = std::string("cannot limit CPU time: ") + std::strerror(errno);
  return false;
}

// An address-space limit: the memory a JavaScript engine takes outside its heap (array
// buffers) held where no cgroup can hold it. Too small for a server (V8 and Go reserve far more
// than they use); the runner's Node starts in 1.5 GiB.
bool limit_address_space(rlim_t mib, std::string& error) {
  const rlimit rl{mib << 20, mib << 20};
  if (::setrlimit(RLIMIT_AS, &rl) == 0) return true;
  error = std::string("cannot limit the address space: ") + std::strerror(errno);
  return false;
}

int enter(int argc, char** argv) {
  std::vector<std::string> cgroups;
  long files = 0;
  long cpu = 0;
  long address_space = 0;
  bool seccomp = true;
  auto profile = mcpmux::seccomp_profile::server;
  int i = 2;
  for (; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    const std::string_view a = argv[i];
    if (a == "--cgroup" && i + 1 < argc)
      cgroups.emplace_back(argv[++i]);
    else if (a == "--files" && i + 1 < argc)
      files = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--cpu" && i + 1 < argc)
      cpu = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--address-space" && i + 1 < argc)
      address_space = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--runner")
      profile = mcpmux::seccomp_profile::runner;
    else if (a == "--no-seccomp")
      seccomp = false;
    else
      return fail("unknown option " + std::string(a));
  }
  if (i + 1 >= argc) return fail("usage: mcpmux-sandbox enter [OPTIONS] -- BWRAP ARGS...");
  std::string error;
  for (const auto& c : cgroups)
    if (!join_cgroup(c, error)) return fail(error);
  if (files > 0 && !limit_files(static_cast<rlim_t>(files), error)) return fail(error);
  if (cpu > 0 && !limit_cpu(static_cast<rlim_t>(cpu), error)) return fail(error);
  if (address_space > 0 && !limit_address_space(static_cast<rlim_t>(address_space), error))
    return fail(error);
  std::vector<std::string> args(argv + i + 1, argv + argc);
  if (seccomp) {
    const int fd = mcpmux::seccomp_filter_fd(profile, error);
    if (fd < 0) return fail(error);
    args.insert(args.begin() + 1, {"--seccomp", std::to_string(fd)});
  }
  std::vector<char*> exec_argv;
  for (auto& a : args) exec_argv.push_back(a.data());
  exec_argv.push_back(nullptr);
  ::execv(exec_argv[0], exec_argv.data());
  return fail("cannot run " + args[0] + ": " + std::strerror(errno));
}

int confine(int argc, char** argv) {
  std::vector<std::string> writable;
  int i = 2;
  for (; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    if (std::string_view(argv[i]) == "--write" && i + 1 < argc)
      writable.emplace_back(argv[++i]);
    else
      return fail("unknown option " + std::string(argv[i]));
  }
  if (i + 1 >= argc)
    return fail("usage: mcpmux-sandbox confine [--write PATH]... -- PROGRAM ARGS...");
  std::string error;
  if (mcpmux::restrict_writes(writable, error) < 0) return fail(error);
  ::execvp(argv[i + 1], argv + i + 1);
  return fail("cannot run " + std::string(argv[i + 1]) + ": " + std::strerror(errno));
}

int lock(int argc, char** argv) {
  if (argc < 4 || std::string_view(argv[2]) != "--" || argv[3][0] != '/')
    return fail("usage: mcpmux-sandbox lock -- /PROGRAM ARGS...");
  const int fd = ::open(argv[3], O_PATH | O_CLOEXEC);
  if (fd < 0) return fail("cannot open " + std::string(argv[3]) + ": " + std::strerror(errno));
  std::string error;
  if (!mcpmux::refuse_later_exec(fd, error)) return fail(error);
  ::syscall(SYS_execveat, fd, "", argv + 3, environ, AT_EMPTY_PATH);
  return fail("cannot run " + std::string(argv[3]) + ": " + std::strerror(errno));
}

int forward(int argc, char** argv) {
  mcpmux::forward_options opt;
  int i = 2;
  for (; i < argc && std::string_view(argv[i]) != "--"; ++i) {
    const std::string_view a = argv[i];
    if (a == "--port" && i + 1 < argc)
      opt.port = static_cast<unsigned short>(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--socket" && i + 1 < argc)
      opt.socket_path = argv[++i];
    else
      return fail("unknown option " + std::string(a));
  }
  if (i + 1 >= argc || opt.socket_path.empty())
    return fail("usage: mcpmux-sandbox forward --port P --socket PATH -- PROGRAM ARGS...");
  opt.argv.assign(argv + i + 1, argv + argc);
  return mcpmux::run_forward(opt);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view mode = argc > 1 ? argv[1] : "";
  if (mode == "enter") return enter(argc, argv);
  if (mode == "confine") return confine(argc, argv);
  if (mode == "forward") return forward(argc, argv);
  if (mode == "lock") return lock(argc, argv);
  return fail(
      "usage: mcpmux-sandbox enter|confine|forward|lock ... (started by mcpmuxd, not by "
      "people)");
}
