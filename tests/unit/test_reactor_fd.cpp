// reactor_fd: edge-triggered readiness (a wait made after a read came up short completes when,
// and only when, more arrives), whole writes across partial ones, and what waits when the
// descriptor is closed, released or broken.
#include "transports/reactor_fd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace mcpmux {
namespace {

using boost::system::error_code;
using namespace std::chrono_literals;

class reactor_fd_test : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::pipe2(pipe_, O_CLOEXEC), 0);
    ::signal(SIGPIPE, SIG_IGN);
  }
  void TearDown() override {
    if (pipe_[1] >= 0) ::close(pipe_[1]);
  }

  // Runs the loop for `d`, or until `done` holds.
  template <class Pred>
  bool run_until(Pred done, std::chrono::milliseconds d = 2000ms) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (!done() && std::chrono::steady_clock::now() < until) {
      io_.run_for(1ms);
      io_.restart();
    }
    return done();
  }

  static std::size_t drain(int fd) {
    std::size_t total = 0;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) total += static_cast<std::size_t>(n);
    return total;
  }

  boost::asio::io_context io_;
  int pipe_[2] = {-1, -1};
};

TEST_F(reactor_fd_test, AWaitAfterAShortReadCompletesOnlyWhenMoreArrives) {
  reactor_fd rd(io_, pipe_[0]);
  for (int round = 0; round < 200; ++round) {
    // The descriptor is empty (read until it would block): the wait must stay queued.
    drain(rd.native_handle());
    std::optional<error_code> got;
    rd.async_readable([&](error_code ec) { got = ec; });
    if (round == 0) {
      // The first wait may complete at once: no read has told the reactor the edge is used.
      if (run_until([&] { return got.has_value(); }, 20ms)) {
        drain(rd.native_handle());
        got.reset();
        rd.async_readable([&](error_code ec) { got = ec; });
      }
    }
    EXPECT_FALSE(run_until([&] { return got.has_value(); }, round < 3 ? 20ms : 0ms))
        << "completed with nothing to read, round " << round;
    ASSERT_EQ(::write(pipe_[1], "x", 1), 1);
    ASSERT_TRUE(run_until([&] { return got.has_value(); })) << "missed the data, round " << round;
    EXPECT_FALSE(*got);
    char c;
    ASSERT_EQ(::read(rd.native_handle(), &c, 1), 1);
  }
}

TEST_F(reactor_fd_test, TheWriterHangingUpCompletesTheWait) {
  reactor_fd rd(io_, pipe_[0]);
  drain(rd.native_handle());
  std::optional<error_code> got;
  rd.async_readable([&](error_code ec) { got = ec; });
  run_until([&] { return got.has_value(); }, 20ms);  // the first may come at once
  got.reset();
  drain(rd.native_handle());
  rd.async_readable([&](error_code ec) { got = ec; });
  ::close(std::exchange(pipe_[1], -1));
  ASSERT_TRUE(run_until([&] { return got.has_value(); }));
  EXPECT_FALSE(*got);
  char c;
  EXPECT_EQ(::read(rd.native_handle(), &c, 1), 0);  // end of stream
}

TEST_F(reactor_fd_test, ClosingCompletesAWaitWithOperationAborted) {
  auto rd = std::make_optional<reactor_fd>(io_, pipe_[0]);
  drain(rd->native_handle());
  std::optional<error_code> first;
  rd->async_readable([&](error_code ec) { first = ec; });
  run_until([&] { return first.has_value(); }, 20ms);
  std::optional<error_code> got;
  rd->async_readable([&](error_code ec) { got = ec; });
  rd->close();
  EXPECT_FALSE(rd->is_open());
  ASSERT_TRUE(run_until([&] { return got.has_value(); }));
  EXPECT_EQ(*got, boost::asio::error::operation_aborted);
  // A wait on a closed descriptor fails at once rather than never.
  got.reset();
  rd->async_readable([&](error_code ec) { got = ec; });
  ASSERT_TRUE(run_until([&] { return got.has_value(); }));
  EXPECT_EQ(*got, boost::asio::error::bad_descriptor);
}

TEST_F(reactor_fd_test, ReleaseGivesTheDescriptorBackOpen) {
  reactor_fd rd(io_, pipe_[0]);
  const int fd = rd.release();
  EXPECT_EQ(fd, pipe_[0]);
  EXPECT_FALSE(rd.is_open());
  ASSERT_EQ(::write(pipe_[1], "y", 1), 1);
  char c = 0;
  EXPECT_EQ(::read(fd, &c, 1), 1);
  EXPECT_EQ(c, 'y');
  // And it can be registered again (release took it out of epoll).
  reactor_fd again(io_, fd);
  EXPECT_TRUE(again.is_open());
}

TEST_F(reactor_fd_test, AWriteLargerThanThePipeGoesOutWholeAcrossPartialWrites) {
  reactor_fd wr(io_, pipe_[1]);
  pipe_[1] = -1;  // owned by wr now
  const int reader = pipe_[0];
  ASSERT_EQ(::fcntl(reader, F_SETFL, O_NONBLOCK), 0);
  // Odd sizes, so that partial writes end inside buffers.
  std::vector<std::string> parts;
  for (int i = 0; i < 40; ++i)
    parts.emplace_back(7919 * (i % 5 + 1), static_cast<char>('a' + i % 26));
  std::string want;
  std::vector<iovec> iov;
  for (auto& p : parts) {
    want += p;
    iov.push_back({p.data(), p.size()});
  }
  std::optional<error_code> done;
  wr.async_write_all(iov.data(), iov.size(), [&](error_code ec) { done = ec; });
  std::string got;
  char buf[8192];
  run_until([&] {
    for (ssize_t n; (n = ::read(reader, buf, sizeof buf)) > 0;)
      got.append(buf, static_cast<std::size_t>(n));
    return done.has_value() && got.size() == want.size();
  });
  ASSERT_TRUE(done.has_value());
  EXPECT_FALSE(*done);
  EXPECT_EQ(got, want);
}

TEST_F(reactor_fd_test, AWriteToAPipeNobodyReadsFailsWithItsError) {
  reactor_fd wr(io_, pipe_[1]);
  pipe_[1] = -1;
  ::close(pipe_[0]);
  std::string text = "lost\n";
  iovec iov{text.data(), text.size()};
  std::optional<error_code> done;
  wr.async_write_all(&iov, 1, [&](error_code ec) { done = ec; });
  EXPECT_FALSE(done.has_value()) << "the handler runs from the loop, never inside the call";
  ASSERT_TRUE(run_until([&] { return done.has_value(); }));
  EXPECT_EQ(done->value(), EPIPE);
}

TEST_F(reactor_fd_test, ASocketWaitsForReadingAndWritingAtOnce) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  reactor_fd s(io_, sv[0]);
  // Fill the socket so that the write has to wait, with a read wait queued beside it.
  std::string big(4 << 20, 'z');
  iovec iov{big.data(), big.size()};
  std::optional<error_code> written, readable;
  s.async_write_all(&iov, 1, [&](error_code ec) { written = ec; });
  drain(s.native_handle());
  s.async_readable([&](error_code ec) { readable = ec; });
  run_until([&] { return readable.has_value(); }, 20ms);  // the first may come at once
  readable.reset();
  s.async_readable([&](error_code ec) { readable = ec; });
  EXPECT_FALSE(run_until([&] { return written.has_value() || readable.has_value(); }, 20ms));
  // The peer drains what was written and answers.
  ASSERT_EQ(::fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
  std::size_t got = 0;
  run_until([&] {
    got += drain(sv[1]);
    return written.has_value() && got == big.size();
  });
  EXPECT_EQ(got, big.size());
  ASSERT_TRUE(written.has_value());
  EXPECT_FALSE(*written);
  EXPECT_FALSE(readable.has_value());
  ASSERT_EQ(::write(sv[1], "ok", 2), 2);
  ASSERT_TRUE(run_until([&] { return readable.has_value(); }));
  EXPECT_FALSE(*readable);
  ::close(sv[1]);
}

}  // namespace
}  // namespace mcpmux
