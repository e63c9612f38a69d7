// The in-sandbox forwarder, run in a forked child as mcpmux-sandbox runs it: bytes flow both ways
// between its TCP port and the proxy's Unix socket (served here), with half-close; SIGTERM
// reaches the server; its exit status is the server's.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "sandbox/helper/forward.hpp"

namespace mcpmux {
namespace {

// A port nobody listens on now (the kernel's pick, released).
unsigned short free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Connects to 127.0.0.1:port, trying again until the forwarder listens (5 s at most).
int dial_when_listening(unsigned short port) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

// Reads exactly n bytes (or fewer at the end / after 5 s).
std::string read_n(int fd, std::size_t n) {
  std::string out;
  char buf[256];
  while (out.size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) break;
    const auto got = ::read(fd, buf, std::min(sizeof buf, n - out.size()));
    if (got <= 0) break;
    out.append(buf, static_cast<std::size_t>(got));
  }
  return out;
}

// Whether the peer has ended its side (a read gives 0 within 5 s).
bool sees_end(int fd) {
  pollfd p{fd, POLLIN, 0};
  char c;
  return ::poll(&p, 1, 5000) == 1 && ::read(fd, &c, 1) == 0;
}

class forward_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mcpmux-forward-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    path_ = dir_ + "/proxy.sock";
    listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(::listen(listener_, 8), 0);
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(listener_);
    std::filesystem::remove_all(dir_);
  }

  void start(std::vector<std::string> argv) {
    forward_options o;
    o.port = port_;
    o.socket_path = path_;
    o.argv = std::move(argv);
    pid_ = ::fork();
    if (pid_ == 0) ::_exit(run_forward(o));
  }

  // The forwarder's exit status as a shell would show it (the code, or 128+signal).
  int wait_exit() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
  }

  std::string dir_, path_;
  int listener_ = -1;
  unsigned short port_ = free_port();
  pid_t pid_ = -1;
};

TEST_F(forward_test, SplicesBothWaysWithHalfCloseAndPassesSigtermOn) {
  start({"/bin/sh", "-c", "exec sleep 30"});
  const int tcp = dial_when_listening(port_);
  ASSERT_GE(tcp, 0);
  ASSERT_EQ(::write(tcp, "ping", 4), 4);
  pollfd p{listener_, POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  const int proxy = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
  ASSERT_GE(proxy, 0);
  EXPECT_EQ(read_n(proxy, 4), "ping");
  const std::string big(200 * 1024, 'z');  // more than a direction's buffer: flow control
  std::thread writer(
      [&] { EXPECT_EQ(::write(proxy, big.data(), big.size()), ssize_t(big.size())); });
  EXPECT_EQ(read_n(tcp, big.size()), big);
  writer.join();
  ::shutdown(tcp, SHUT_WR);
  EXPECT_TRUE(sees_end(proxy));  // the client's end reaches the proxy...
  ASSERT_EQ(::write(proxy, "pong", 4), 4);
  EXPECT_EQ(read_n(tcp, 4), "pong");  // ...while the answer still comes back
  ::close(proxy);
  EXPECT_TRUE(sees_end(tcp));
  ::close(tcp);

  ::kill(pid_, SIGTERM);
  EXPECT_EQ(wait_exit(), 128 + SIGTERM);
}

TEST_F(forward_test, ExitsWithTheServersStatus) {
  start({"/bin/sh", "-c", "exit 7"});
  EXPECT_EQ(wait_exit(), 7);
  start({"/nonexistent/server"});
  EXPECT_EQ(wait_exit(), 127);
}

TEST_F(forward_test, AClientIsDroppedWhenTheProxyIsGone) {
  ::close(listener_);
  listener_ = -1;
  ::unlink(path_.c_str());
  start({"/bin/sh", "-c", "exec sleep 30"});
  const int tcp = dial_when_listening(port_);
  ASSERT_GE(tcp, 0);
  EXPECT_TRUE(sees_end(tcp));
  ::close(tcp);
  ::kill(pid_, SIGINT);
  EXPECT_EQ(wait_exit(), 128 + SIGINT);
}

}  // namespace
}  // namespace mcpmux
