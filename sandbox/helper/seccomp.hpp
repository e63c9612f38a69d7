// The seccomp filters: every sandboxed server's, built with libseccomp and handed to
// bubblewrap, and the code-mode runner's stricter one (no new processes, no later exec).
#pragma once

#include <string>

namespace mcpmux {

/// Which filter a sandbox gets.
enum class seccomp_profile {
  server,  ///< the deny list below
  runner,  ///< the deny list, and no process but threads: fork, vfork, clone without
           ///< CLONE_THREAD refused, clone3 answered ENOSYS (its flags are behind a pointer a
           ///< filter cannot read, and libc then falls back to clone, whose flags it can)
};

/// Writes the filter as a BPF program into a new memory file and returns its descriptor
/// (inherited by bubblewrap's `--seccomp FD`), or -1 with `error` set.
int seccomp_filter_fd(seccomp_profile profile, std::string& error);

/// Loads, into this process, a filter that refuses every execve and every execveat but of the
/// descriptor `program_fd` (opened by the caller, close-on-exec), so that the one exec that
/// follows is the last: false with `error` set if it cannot.
bool refuse_later_exec(int program_fd, std::string& error);

/// The system calls the filter refuses (EPERM), for docs and tests.
const char* const* refused_syscalls();

}  // namespace mcpmux
