// The seccomp filter of every sandboxed server, built with libseccomp and handed to bubblewrap.
#pragma once

#include <string>

namespace mcpmux {

/// Writes the filter as a BPF program into a new memory file and returns its descriptor
/// (inherited by bubblewrap's `--seccomp FD`), or -1 with `error` set.
int seccomp_filter_fd(std::string& error);

/// The system calls the filter refuses (EPERM), for docs and tests.
const char* const* refused_syscalls();

}  // namespace mcpmux
