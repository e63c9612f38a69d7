#include "daemon/peer.hpp"

#include "base/text.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {
namespace {

struct process {
  int pid = 0;
  std::string exe;
  std::vector<std::string> args;
  int parent = 0;
};

// At most `cap` bytes of a small file such as /proc/PID/cmdline, read as it comes: a client's
// session starts after this, so no stream, no buffer filled in advance.
std::string read_small(const std::string& path, std::size_t cap) {
  std::string out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  std::array<char, 4096> buf;
  while (out.size() < cap) {
    const auto n = ::read(fd, buf.data(), std::min(buf.size(), cap - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

process read_process(int pid) {
  process p;
  p.pid = pid;
  const std::string dir = "/proc/" + std::to_string(pid);
  std::array<char, 4096> buf{};
  const auto n = ::readlink((dir + "/exe").c_str(), buf.data(), buf.size() - 1);
  if (n > 0) p.exe.assign(buf.data(), static_cast<std::size_t>(n));
  const std::string cmdline = read_small(dir + "/cmdline", 64 * 1024);
  for (std::size_t at = 0; at < cmdline.size();) {
    const auto end = cmdline.find('\0', at);
    p.args.push_back(cmdline.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  // stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
  const std::string stat = read_small(dir + "/stat", 4096);
  if (const auto close = stat.rfind(')'); close != std::string::npos) {
    int parent = 0;
    char state = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &parent) == 2) p.parent = parent;
  }
  return p;
}

bool is_connect_bridge(const process& p) {
  const bool ours =
      base_name(p.exe) == "mcpmux" || (!p.args.empty() && base_name(p.args.front()) == "mcpmux");
  if (!ours) return false;
  for (std::size_t i = 1; i < p.args.size(); ++i)
    if (p.args[i] == "connect") return true;
  return false;
}

// Programs that only pass a command on: the agent is above them.
bool is_launcher(const process& p) {
  static constexpr std::string_view launchers[] = {"sh",  "bash",    "dash",  "zsh",   "fish",
                                                   "env", "timeout", "nohup", "setsid"};
  const auto name = base_name(p.exe);
  for (auto l : launchers)
    if (name == l) return true;
  return false;
}

}  // namespace

client_identity identify_process(int pid) {
  client_identity who;
  who.pid = pid;
  if (pid <= 0) return who;
  auto peer = read_process(pid);
  who.program = peer.exe;
  process agent = std::move(peer);
  if (is_connect_bridge(agent)) {
    agent = read_process(agent.parent);
    for (int hops = 0; hops < 3 && is_launcher(agent) && agent.parent > 1; ++hops)
      agent = read_process(agent.parent);
  }
  who.agent_pid = agent.pid;
  who.agent_program = std::move(agent.exe);
  who.agent_args = std::move(agent.args);
  return who;
}

client_identity identify_peer(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return {};
  auto who = identify_process(cred.pid);
  who.uid = static_cast<long>(cred.uid);
  return who;
}

}  // namespace mcpmux
