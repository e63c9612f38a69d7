#include "sandbox/helper/landlock.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

namespace mcpmux {
namespace {

// The rights that change the file system (ABI 1), plus REFER (ABI 2) and TRUNCATE (ABI 3),
// named by value where Debian 12's header stops at ABI 2.
constexpr std::uint64_t abi1_writes =
    LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
    LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
    LANDLOCK_ACCESS_FS_MAKE_SYM;
constexpr std::uint64_t refer = 1ULL << 13;
constexpr std::uint64_t truncate = 1ULL << 14;

std::string fail(std::string what) {
  return what + ": " + std::strerror(errno);
}

}  // namespace

int restrict_writes(const std::vector<std::string>& writable, std::string& error) {
  const long abi =
      ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi <= 0) return 0;
  std::uint64_t handled = abi1_writes;
  if (abi >= 2) handled |= refer;
  if (abi >= 3) handled |= truncate;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = handled;
  const int ruleset =
      static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) {
    error = fail("landlock_create_ruleset");
    return -1;
  }
  for (const auto& path : writable) {
    const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;  // not in this sandbox: nothing to allow
    landlock_path_beneath_attr rule{};
    rule.parent_fd = fd;
    rule.allowed_access = handled;
    // A file (not a directory) takes only the rights that apply to files.
    struct stat st {};
    if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
      rule.allowed_access &= LANDLOCK_ACCESS_FS_WRITE_FILE | truncate;
    const long rc = ::syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    ::close(fd);
    if (rc != 0) {
      error = fail("landlock_add_rule " + path);
      ::close(ruleset);
      return -1;
    }
  }
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
    error = fail("landlock_restrict_self");
    ::close(ruleset);
    return -1;
  }
  ::close(ruleset);
  return static_cast<int>(abi);
}

}  // namespace mcpmux
