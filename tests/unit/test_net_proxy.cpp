// The network proxy in process, on its io_context: a CONNECT tunnel to a local echo server both
// ways, refusals that connect nowhere, plain HTTP to a local origin in origin form, a listed name
// that resolves to loopback, the head limit, and stop() ending the tunnels. The client is plain
// blocking sockets on a thread of its own while the test's thread runs the loop.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include "sandbox/net_proxy.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// A blocking client connection to the proxy's socket; reads give up after 5 s.
class client {
 public:
  explicit client(const std::string& path) : fd_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~client() { ::close(fd_); }
  bool connected() const { return connected_; }
  void send(std::string_view s) {
    while (!s.empty()) {
      const auto n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      s.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  void shut() { ::shutdown(fd_, SHUT_WR); }
  // Reads until `until` appears (or the end, or 5 s); everything read so far.
  std::string read_until(std::string_view until = {}) {
    char buf[4096];
    while (until.empty() || got_.find(until) == std::string::npos) {
      const auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        ended_ = n == 0;
        break;
      }
      got_.append(buf, static_cast<std::size_t>(n));
    }
    return got_;
  }
  bool ended() const { return ended_; }

 private:
  int fd_;
  bool connected_ = false;
  bool ended_ = false;
  std::string got_;
};

// A TCP server on 127.0.0.1 that counts its connections and runs `serve` on each.
class local_server {
 public:
  using handler = std::function<asio::awaitable<void>(tcp::socket)>;
  local_server(asio::io_context& io, handler serve)
      : acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        serve_(std::move(serve)) {
    asio::co_spawn(io, accept(), asio::detached);
  }
  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  int accepted() const { return accepted_; }
  void close() { acceptor_.close(); }

 private:
  asio::awaitable<void> accept() {
    for (;;) {
      auto [ec, s] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      ++accepted_;
      asio::co_spawn(acceptor_.get_executor(), serve_(std::move(s)), asio::detached);
    }
  }
  tcp::acceptor acceptor_;
  handler serve_;
  std::atomic<int> accepted_{0};
};

asio::awaitable<void> echo(tcp::socket s) {
  char buf[1024];
  for (;;) {
    auto [ec, n] =
        co_await s.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;  // the end: closing tells the client
    co_await asio::async_write(s, asio::buffer(buf, n), asio::as_tuple(asio::use_awaitable));
  }
}

class net_proxy_test : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mcpmux-netproxy-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
    path_ = dir_ + "/proxy.sock";
  }
  void TearDown() override {
    proxy_.reset();
    std::filesystem::remove_all(dir_);
  }

  void start(std::vector<std::string> network,
             const std::function<void(net_proxy_options&)>& tweak = {}) {
    net_proxy_options o;
    o.socket_path = path_;
    o.network = std::move(network);
    o.server = "files";
    o.on_refused = [this](const net_refusal& r) { refusals_.push_back(r); };
    if (tweak) tweak(o);
    proxy_ = std::make_unique<net_proxy>(io_, std::move(o));
    auto started = proxy_->start();
    ASSERT_TRUE(started.ok()) << started.error().message;
  }

  // Runs `body` on a client thread while this thread runs the loop; returns when it is done.
  void with_loop(const std::function<void()>& body) {
    auto guard = asio::make_work_guard(io_);
    std::thread t([&] {
      body();
      asio::post(io_, [&] {
        guard.reset();
        io_.stop();
      });
    });
    io_.restart();
    io_.run();
    t.join();
  }

  asio::io_context io_;
  std::string dir_, path_;
  std::unique_ptr<net_proxy> proxy_;
  std::vector<net_refusal> refusals_;
};

TEST_F(net_proxy_test, ConnectTunnelsToAListedHostBothWaysWithHalfClose) {
  local_server echo_server(io_, echo);
  const auto port = std::to_string(echo_server.port());
  start({"localhost:" + port});
  std::string head, reply;
  bool ended = false;
  with_loop([&] {
    client c(path_);
    c.send("CONNECT localhost:" + port + " HTTP/1.1\r\nHost: localhost\r\n\r\nfirst ");
    head = c.read_until("\r\n\r\n");
    c.send("second");
    reply = c.read_until("first second");
    c.shut();  // the echo server sees the end, closes, and the client sees that
    c.read_until();
    ended = c.ended();
  });
  EXPECT_EQ(head.substr(0, head.find("\r\n")), "HTTP/1.1 200 Connection established");
  EXPECT_NE(reply.find("\r\n\r\nfirst second"), std::string::npos) << reply;
  EXPECT_TRUE(ended);
  EXPECT_EQ(echo_server.accepted(), 1);
  EXPECT_EQ(proxy_->stats().allowed, 1u);
  EXPECT_EQ(proxy_->stats().refused, 0u);
}

TEST_F(net_proxy_test, AHostOffTheListIsRefusedWith403AndNothingIsConnected) {
  local_server echo_server(io_, echo);
  const auto port = std::to_string(echo_server.port());
  start({"localhost:" + port});
  std::string by_name, by_address, other_port;
  with_loop([&] {
    client a(path_);
    a.send("CONNECT evil.example:443 HTTP/1.1\r\n\r\n");
    by_name = a.read_until();
    client b(path_);
    b.send("CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n");  // listed by name, not address
    by_address = b.read_until();
    client c(path_);
    c.send("GET http://localhost:1/ HTTP/1.1\r\n\r\n");
    other_port = c.read_until();
  });
  EXPECT_TRUE(by_name.starts_with("HTTP/1.1 403 Forbidden\r\n")) << by_name;
  EXPECT_NE(by_name.find("mcpmux refused evil.example:443: add it to `network` in "
                         "[servers.files] to allow it\n"),
            std::string::npos)
      << by_name;
  EXPECT_TRUE(by_address.starts_with("HTTP/1.1 403")) << by_address;
  EXPECT_TRUE(other_port.starts_with("HTTP/1.1 403")) << other_port;
  EXPECT_EQ(echo_server.accepted(), 0);
  const auto stats = proxy_->stats();
  EXPECT_EQ(stats.refused, 3u);
  EXPECT_EQ(stats.allowed, 0u);
  EXPECT_EQ(stats.last_refused, "localhost:1");
  EXPECT_GT(stats.last_refused_ms, 0);
  ASSERT_EQ(refusals_.size(), 3u);
  EXPECT_EQ(refusals_[0].host, "evil.example");
  EXPECT_EQ(refusals_[0].port, 443u);
}

TEST_F(net_proxy_test, PlainHttpReachesTheOriginInOriginFormAndTheAnswerComesBack) {
  std::string seen;  // the head the origin received
  local_server origin(io_, [&seen](tcp::socket s) -> asio::awaitable<void> {
    char buf[4096];
    while (seen.find("\r\n\r\n") == std::string::npos) {
      auto [ec, n] =
          co_await s.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      seen.append(buf, n);
    }
    const std::string_view reply =
        "HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello";
    co_await asio::async_write(s, asio::buffer(reply), asio::as_tuple(asio::use_awaitable));
  });
  const auto port = std::to_string(origin.port());
  start({"localhost:" + port});
  std::string answer;
  with_loop([&] {
    client c(path_);
    c.send("GET http://localhost:" + port +
           "/p?q=1 HTTP/1.1\r\nHost: elsewhere.example\r\n"
           "Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n");
    answer = c.read_until();
  });
  // The client is told that the connection ends with this answer, as it does.
  EXPECT_EQ(answer, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
  EXPECT_EQ(seen, "GET /p?q=1 HTTP/1.1\r\nHost: localhost:" + port +
                      "\r\nAccept: */*\r\nConnection: close\r\n\r\n");
}

TEST_F(net_proxy_test, AListedNameThatResolvesToLoopbackIsRefused) {
  // This machine's own name resolves to a loopback address on most hosts (/etc/hosts); it stands
  // for a DNS answer rebound onto the daemon's loopback endpoint.
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  local_server echo_server(io_, echo);
  start({std::string(name) + ":" + std::to_string(echo_server.port())});
  std::string answer;
  with_loop([&] {
    client c(path_);
    c.send("CONNECT " + std::string(name) + ":" + std::to_string(echo_server.port()) +
           " HTTP/1.1\r\n\r\n");
    answer = c.read_until();
  });
  if (answer.starts_with("HTTP/1.1 502"))
    GTEST_SKIP() << "this host's name does not resolve to a loopback address";
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 403")) << answer;
  EXPECT_NE(answer.find("a local address"), std::string::npos) << answer;
  EXPECT_EQ(echo_server.accepted(), 0);
  ASSERT_EQ(refusals_.size(), 1u);
  EXPECT_NE(refusals_[0].reason.find("resolves to 127."), std::string::npos);
}

TEST_F(net_proxy_test, AHeadOverTheLimitIs431) {
  start({"localhost:8080"}, [](net_proxy_options& o) { o.head_max = 1024; });
  std::string answer;
  with_loop([&] {
    client c(path_);
    c.send("CONNECT localhost:8080 HTTP/1.1\r\nX-Fill: " + std::string(2000, 'x'));
    answer = c.read_until();
  });
  EXPECT_TRUE(answer.starts_with("HTTP/1.1 431 ")) << answer;
  EXPECT_EQ(proxy_->stats().allowed, 0u);
}

TEST_F(net_proxy_test, ConnectionsOverTheLimitAre503) {
  local_server echo_server(io_, echo);
  const auto port = std::to_string(echo_server.port());
  start({"localhost:" + port}, [](net_proxy_options& o) { o.connections_max = 1; });
  std::string second, after;
  with_loop([&] {
    {
      client first(path_);
      first.send("CONNECT localhost:" + port + " HTTP/1.1\r\n\r\n");
      first.read_until("\r\n\r\n");
      second = client(path_).read_until();
    }
    // The first one's end frees its place (the proxy sees it on the loop: wait until it has).
    for (int i = 0; i < 500 && !after.starts_with("HTTP/1.1 403"); ++i) {
      client c(path_);
      c.send("CONNECT elsewhere.example:443 HTTP/1.1\r\n\r\n");
      after = c.read_until();
    }
  });
  EXPECT_TRUE(second.starts_with("HTTP/1.1 503 ")) << second;
  EXPECT_TRUE(after.starts_with("HTTP/1.1 403 ")) << after;
}

TEST_F(net_proxy_test, AnIdleTunnelIsClosed) {
  local_server echo_server(io_, echo);
  const auto port = std::to_string(echo_server.port());
  start({"localhost:" + port},
        [](net_proxy_options& o) { o.idle_timeout = std::chrono::milliseconds(50); });
  std::string got;
  bool ended = false;
  with_loop([&] {
    client c(path_);
    c.send("CONNECT localhost:" + port + " HTTP/1.1\r\n\r\nx");
    got = c.read_until("\r\n\r\nx");
    c.read_until();  // nothing more is sent: the proxy ends it (the read's own limit is 5 s)
    ended = c.ended();
  });
  EXPECT_NE(got.find("\r\n\r\nx"), std::string::npos) << got;
  EXPECT_TRUE(ended);
}

TEST_F(net_proxy_test, StopEndsTheTunnelsAndRemovesTheSocket) {
  local_server echo_server(io_, echo);
  const auto port = std::to_string(echo_server.port());
  start({"localhost:" + port});
  bool ended = false;
  with_loop([&] {
    client c(path_);
    c.send("CONNECT localhost:" + port + " HTTP/1.1\r\n\r\n");
    c.read_until("\r\n\r\n");
    asio::post(io_, [&] { proxy_->stop(); });
    c.read_until();
    ended = c.ended();
  });
  EXPECT_TRUE(ended);
  EXPECT_FALSE(std::filesystem::exists(path_));
  EXPECT_FALSE(client(path_).connected());
}

TEST_F(net_proxy_test, StartSaysWhichEntryOrPathIsWrong) {
  net_proxy_options bad_entry;
  bad_entry.socket_path = path_;
  bad_entry.network = {"a.*.example"};
  auto r = net_proxy(io_, bad_entry).start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("\"a.*.example\""), std::string::npos) << r.error().message;
  net_proxy_options bad_path;
  bad_path.socket_path = dir_ + "/missing/proxy.sock";
  bad_path.server = "files";
  r = net_proxy(io_, bad_path).start();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot listen on " + bad_path.socket_path), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace mcpmux
