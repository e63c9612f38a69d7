// sd_notify and socket activation, speaking systemd's documented environment protocol; the ready
// pipe of a spawned daemon.
#include "daemon/systemd.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string>

namespace mcpmux {
namespace {

std::optional<long long> env_number(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  long long n = 0;
  auto [p, ec] = std::from_chars(v, v + std::strlen(v), n);
  if (ec != std::errc() || *p != '\0') return std::nullopt;
  return n;
}

}  // namespace

bool sd_notify(std::string_view state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (!path || !*path) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::size_t len = std::strlen(path);
  if (len >= sizeof(addr.sun_path)) return false;
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  const bool ok =
      ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
               addr_len) == static_cast<ssize_t>(state.size());
  ::close(fd);
  return ok;
}

std::optional<int> sd_listen_fd() {
  auto pid = env_number("LISTEN_PID");
  auto fds = env_number("LISTEN_FDS");
  ::unsetenv("LISTEN_PID");
  ::unsetenv("LISTEN_FDS");
  ::unsetenv("LISTEN_FDNAMES");
  if (!pid || !fds || *pid != ::getpid() || *fds < 1) return std::nullopt;
  constexpr int first = 3;  // SD_LISTEN_FDS_START
  ::fcntl(first, F_SETFD, FD_CLOEXEC);
  return first;
}

std::optional<std::string> bound_unix_path(int fd) {
  sockaddr_un addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      addr.sun_family != AF_UNIX || len <= offsetof(sockaddr_un, sun_path) || addr.sun_path[0] == 0)
    return std::nullopt;
  return std::string(addr.sun_path,
                     ::strnlen(addr.sun_path, len - offsetof(sockaddr_un, sun_path)));
}

bool take_ready_fd(int fd) {
  struct stat st {};
  if (fd < 3 || ::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) return false;
  return ::fcntl(fd, F_SETFD, FD_CLOEXEC) == 0;
}

void notify_ready_fd(int fd) {
  if (fd < 0) return;
  (void)!::write(fd, "r", 1);  // EPIPE when nobody waits any more (SIGPIPE is ignored)
  ::close(fd);
}

std::optional<std::chrono::microseconds> sd_watchdog_interval() {
  auto usec = env_number("WATCHDOG_USEC");
  if (!usec || *usec <= 0) return std::nullopt;
  if (auto pid = env_number("WATCHDOG_PID"); pid && *pid != ::getpid()) return std::nullopt;
  return std::chrono::microseconds(*usec / 2);
}

}  // namespace mcpmux
