// The stdio handoff of `mcpmux connect`: the bridge passes the agent's pipes to the daemon and
// copies nothing; the session ends with the agent's stdin or the bridge; $MCPMUX_NO_HANDOFF,
// a terminal-less fallback and an older daemon that refuses keep the copying bridge.
#include <sys/socket.h>
#include <sys/un.h>

#include <filesystem>
#include <thread>

#include "tests/integration/child_process.hpp"
#include "tests/integration/harness.hpp"
#include "transports/stdio_handoff.hpp"

namespace mcpmux::test {
namespace {

using steady = std::chrono::steady_clock;

std::string request_line(int id, std::string_view method, std::string_view params) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + std::string(method) +
         R"(","params":)" + std::string(params) + "}\n";
}

std::string initialize(int id) {
  return request_line(id, "initialize",
                      R"({"protocolVersion":"2025-11-25","capabilities":{},)"
                      R"("clientInfo":{"name":"agent","version":"1"}})");
}

std::string echo(int id, std::string_view text) {
  return request_line(id, "tools/call",
                      R"({"name":"f__echo","arguments":{"text":")" + std::string(text) + "\"}}");
}

// Where descriptor `fd` of process `pid` points ("pipe:[…]", "/dev/null", …).
std::string fd_target(pid_t pid, int fd) {
  std::error_code ec;
  auto t = std::filesystem::read_symlink(
      "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd), ec);
  return ec ? std::string() : t.string();
}

class stdio_handoff : public daemon_test {
 protected:
  // `mcpmux connect` to the daemon, as an agent starts it (pipes on stdin and stdout).
  std::unique_ptr<child_process> agent(std::map<std::string, std::string> env = {}) {
    return std::make_unique<child_process>(
        std::vector<std::string>{mcpmux_path(), "--socket", daemon_->socket(), "connect"}, env,
        dir_.file("bridge.err"));
  }
  static bool handed_over(child_process& a) {
    return wait_until(
        [&] {
          return fd_target(a.pid(), 0) == "/dev/null" && fd_target(a.pid(), 1) == "/dev/null";
        },
        3s, 2ms);
  }
  // initialize, then one echo call; true when both were answered.
  static bool converse(child_process& a, std::string_view text) {
    if (!a.write(initialize(1)) || !a.wait_output("\"protocolVersion\"", 10s)) return false;
    if (!a.write(echo(2, text))) return false;
    return a.wait_output(std::string(text) + "\"", 10s);
  }
};

TEST_F(stdio_handoff, the_bridge_hands_its_stdio_to_the_daemon_and_copies_nothing) {
  start(fake_server_table("f", {}));
  auto a = agent();
  ASSERT_TRUE(converse(*a, "handed over")) << a->out() << read_file(dir_.file("bridge.err"));
  // The bridge lets go of the agent's pipes (the daemon may answer before it has): it holds
  // /dev/null, the daemon holds the pipes.
  EXPECT_TRUE(handed_over(*a)) << fd_target(a->pid(), 0);
  // The agent closes its stdin: the session ends and the bridge exits 0 at once.
  a->close_stdin();
  const auto t0 = steady::now();
  EXPECT_EQ(a->wait_exit(3s), 0) << read_file(dir_.file("bridge.err"));
  std::printf("[ handoff  ] bridge exited %lld ms after the agent closed stdin\n",
              static_cast<long long>(ms_since(t0)));
  EXPECT_TRUE(daemon_->wait_for_log("closed", 2s)) << daemon_->log();
}

TEST_F(stdio_handoff, a_killed_bridge_ends_the_session_and_the_agent_sees_the_end) {
  start(fake_server_table("f", {}));
  auto a = agent();
  ASSERT_TRUE(converse(*a, "before the kill")) << a->out();
  ASSERT_TRUE(handed_over(*a)) << fd_target(a->pid(), 0);
  ASSERT_EQ(::kill(a->pid(), SIGKILL), 0);
  EXPECT_EQ(a->wait_exit(3s), -1);
  // The daemon lets go of the agent's stdout: the agent reads the end, not a hang.
  EXPECT_FALSE(a->wait_output("never written", 3s));
  EXPECT_TRUE(daemon_->wait_for_log("mcpmux connect exited", 2s)) << daemon_->log();
  // The daemon is unharmed.
  auto again = agent();
  EXPECT_TRUE(converse(*again, "after the kill")) << again->out();
}

TEST_F(stdio_handoff, mcpmux_no_handoff_keeps_the_copying_bridge) {
  start(fake_server_table("f", {}));
  auto a = agent({{"MCPMUX_NO_HANDOFF", "1"}});
  ASSERT_TRUE(converse(*a, "copied")) << a->out();
  EXPECT_EQ(fd_target(a->pid(), 0).rfind("pipe:", 0), 0u) << fd_target(a->pid(), 0);
  a->close_stdin();
  EXPECT_EQ(a->wait_exit(3s), 0);
}

TEST_F(stdio_handoff, the_request_without_descriptors_is_an_ordinary_unknown_method) {
  start(fake_server_table("f", {}));
  client c = connect();
  ASSERT_TRUE(c.send_line(std::string(mcpmux::handoff::request)));
  auto r = c.wait_response(json::value("mcpmux-handoff"), 5s);
  ASSERT_TRUE(r.has_value());
  EXPECT_NE(error_code(r), 0) << (r ? json::serialize(*r) : "");
  // The connection goes on as a plain client.
  auto st = c.request("mcpmux/status");
  EXPECT_TRUE(member(st, "result")) << (st ? json::serialize(*st) : "");
}

// A client that passes descriptors epoll cannot wait on (regular files) gets an ordinary
// unknown-method error on its socket; the daemon neither takes them nor falls over.
TEST_F(stdio_handoff, descriptors_that_are_not_streams_are_refused) {
  start(fake_server_table("f", {}));
  const int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", daemon_->socket().c_str());
  ASSERT_EQ(::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const int files[2] = {::open(dir_.write("a.txt", "a").c_str(), O_RDONLY | O_CLOEXEC),
                        ::open(dir_.write("b.txt", "b").c_str(), O_RDWR | O_CLOEXEC)};
  ASSERT_GE(files[0], 0);
  ASSERT_GE(files[1], 0);
  ASSERT_TRUE(mcpmux::handoff::send_request(s, files[0], files[1]));
  std::string got;
  char buf[512];
  while (got.find('\n') == std::string::npos) {
    pollfd p{s, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 5000), 1) << "no answer";
    const ssize_t n = ::read(s, buf, sizeof buf);
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<std::size_t>(n));
  }
  EXPECT_NE(got.find("\"error\""), std::string::npos) << got;
  EXPECT_NE(got.find("mcpmux-handoff"), std::string::npos) << got;
  ::close(s);
  ::close(files[0]);
  ::close(files[1]);
  auto a = agent();
  EXPECT_TRUE(converse(*a, "still serving")) << a->out();
}

// A daemon from before the handoff: it reads with read() (passed descriptors are dropped) and
// answers the unknown method with an error; the bridge then copies bytes as before.
TEST_F(stdio_handoff, an_older_daemon_that_refuses_gets_the_copying_bridge) {
  const std::string path = dir_.file("old.sock");
  const int ls = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(ls, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(ls, 4), 0);
  std::string first_line;
  std::thread old_daemon([&] {
    const int c = ::accept(ls, nullptr, nullptr);
    if (c < 0) return;
    std::string in;
    char buf[4096];
    auto read_line = [&]() -> std::string {
      for (;;) {
        if (auto nl = in.find('\n'); nl != std::string::npos) {
          auto line = in.substr(0, nl);
          in.erase(0, nl + 1);
          return line;
        }
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) return {};
        in.append(buf, static_cast<std::size_t>(n));
      }
    };
    first_line = read_line();
    const std::string refusal =
        R"({"jsonrpc":"2.0","id":"mcpmux-handoff","error":{"code":-32601,"message":"Method not found"}})"
        "\n";
    (void)::write(c, refusal.data(), refusal.size());
    const auto second = read_line();  // the agent's initialize, copied by the bridge
    const std::string answer = R"({"jsonrpc":"2.0","id":1,"result":{"copied":")" +
                               std::to_string(second.size()) + "\"}}\n";
    (void)::write(c, answer.data(), answer.size());
    read_line();  // until the bridge half-closes
    ::close(c);
  });
  child_process a({mcpmux_path(), "--socket", path, "connect"}, {}, dir_.file("old.err"));
  ASSERT_TRUE(a.write(initialize(1)));
  EXPECT_TRUE(a.wait_output("\"copied\"", 5s)) << a.out() << read_file(dir_.file("old.err"));
  EXPECT_EQ(first_line, std::string(mcpmux::handoff::request));
  EXPECT_EQ(fd_target(a.pid(), 0).rfind("pipe:", 0), 0u);
  a.close_stdin();
  EXPECT_EQ(a.wait_exit(3s), 0);
  old_daemon.join();
  ::close(ls);
}

}  // namespace
}  // namespace mcpmux::test
