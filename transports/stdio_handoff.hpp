// The stdio handoff between `mcpmux connect` and the daemon: the bridge sends `request` as its
// first line with its stdin and stdout attached (SCM_RIGHTS); a daemon that takes them answers
// `accepted` on the socket and from then on reads and writes the agent's pipes itself, keeping
// the socket only to notice the bridge leave. Any other answer (an older daemon's "unknown
// method") means: keep copying bytes. See docs/socket-protocol.md.
#pragma once

#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

namespace mcpmux::handoff {

inline constexpr std::string_view request =
    R"({"jsonrpc":"2.0","id":"mcpmux-handoff","method":"mcpmux/handoff"})";
inline constexpr std::string_view accepted =
    R"({"jsonrpc":"2.0","id":"mcpmux-handoff","result":{"handoff":true}})";

/// Sends the request line on `sock` in one sendmsg with `in` and `out` attached; true when the
/// whole line went out.
inline bool send_request(int sock, int in, int out) {
  std::string line = std::string(request) + "\n";
  iovec iov{line.data(), line.size()};
  const int fds[2] = {in, out};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  for (;;) {
    const ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(line.size());
  }
}

}  // namespace mcpmux::handoff
