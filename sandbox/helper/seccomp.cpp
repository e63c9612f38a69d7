// A deny list, not an allow list: tool servers are Node, Python, Go and Chromium, whose system
// calls change with every release, and an allow list that misses one breaks a server in a way
// its user cannot diagnose. What is refused is what no tool server needs and what turns a
// compromised one into a compromised machine: debugging other processes, mounting, kernel
// modules and BPF, keyrings, io_uring, joining other namespaces, faking terminal input. System
// calls of another architecture (the 32-bit ABI) kill the process: libseccomp's default.
#include "sandbox/helper/seccomp.hpp"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mcpmux {
namespace {

constexpr const char* refused[] = {"ptrace",
                                   "process_vm_readv",
                                   "process_vm_writev",
                                   "kcmp",
                                   "mount",
                                   "umount",
                                   "umount2",
                                   "pivot_root",
                                   "move_mount",
                                   "open_tree",
                                   "fsopen",
                                   "fsconfig",
                                   "fsmount",
                                   "fspick",
                                   "mount_setattr",
                                   "swapon",
                                   "swapoff",
                                   "reboot",
                                   "kexec_load",
                                   "kexec_file_load",
                                   "init_module",
                                   "finit_module",
                                   "delete_module",
                                   "bpf",
                                   "perf_event_open",
                                   "userfaultfd",
                                   "keyctl",
                                   "add_key",
                                   "request_key",
                                   "acct",
                                   "quotactl",
                                   "quotactl_fd",
                                   "syslog",
                                   "setns",
                                   "open_by_handle_at",
                                   "name_to_handle_at",
                                   "iopl",
                                   "ioperm",
                                   "lookup_dcookie",
                                   "uselib",
                                   "vhangup",
                                   "nfsservctl",
                                   "settimeofday",
                                   "clock_settime",
                                   "clock_adjtime",
                                   "adjtimex",
                                   "io_uring_setup",
                                   "io_uring_enter",
                                   "io_uring_register",
                                   nullptr};

// No process but threads: a JavaScript engine runs threads of its own (V8's platform, libuv's
// pool, a worker), so a task count cannot tell them from a fork bomb; the clone flags can.
int refuse_new_processes(scmp_filter_ctx ctx) {
  int rc = 0;
  for (const char* name : {"fork", "vfork"}) {
    const int nr = ::seccomp_syscall_resolve_name(name);
    if (nr != __NR_SCMP_ERROR && rc == 0)
      rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
  }
  if (rc == 0)
    rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                            SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  if (rc == 0) rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  return rc;
}

}  // namespace

const char* const* refused_syscalls() {
  return refused;
}

int seccomp_filter_fd(seccomp_profile profile, std::string& error) {
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    error = "seccomp_init failed";
    return -1;
  }
  int rc = 0;
  for (const char* const* name = refused; *name && rc == 0; ++name) {
    const int nr = ::seccomp_syscall_resolve_name(*name);
    if (nr == __NR_SCMP_ERROR) continue;  // not on this architecture
    rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    if (rc != 0) error = std::string("cannot refuse ") + *name;
  }
  // Typing into the terminal of whoever started the daemon.
  for (unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)})
    if (rc == 0)
      rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), 1,
                              SCMP_A1(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFu, request));
  if (rc == 0 && profile == seccomp_profile::runner) {
    rc = refuse_new_processes(ctx);
    if (rc != 0) error = "cannot refuse new processes";
  }
  int fd = -1;
  if (rc == 0) {
    fd = ::memfd_create("mcpmux-seccomp", 0);  // not close-on-exec: bubblewrap reads it
    if (fd < 0 || ::seccomp_export_bpf(ctx, fd) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) {
      error = std::string("cannot write the seccomp filter: ") + std::strerror(errno);
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  } else if (error.empty()) {
    error = std::string("cannot build the seccomp filter: ") + std::strerror(-rc);
  }
  ::seccomp_release(ctx);
  return fd;
}

// bubblewrap loads its filter just before it execs the command, so that filter must allow an
// exec; this one, loaded by the helper inside, allows only the exec of the descriptor it was
// given. The descriptor is close-on-exec: once the program runs, no descriptor is that number
// unless the program makes one, and a program that can make one runs native code already.
bool refuse_later_exec(int program_fd, std::string& error) {
  scmp_filter_ctx ctx = ::seccomp_init(SCMP_ACT_ALLOW);
  if (!ctx) {
    error = "seccomp_init failed";
    return false;
  }
  int rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(execve), 0);
  if (rc == 0)
    rc = ::seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(execveat), 1,
                            SCMP_A0(SCMP_CMP_NE, static_cast<scmp_datum_t>(program_fd)));
  if (rc == 0) rc = ::seccomp_load(ctx);  // sets no_new_privs first (libseccomp's default)
  if (rc != 0) error = std::string("cannot refuse later execs: ") + std::strerror(-rc);
  ::seccomp_release(ctx);
  return rc == 0;
}

}  // namespace mcpmux
