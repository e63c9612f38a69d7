// The fd transport: messages in runs go out in order with plain ones, the shared middle is not
// copied and is let go once written, and the queue cap counts every run; a write the descriptor
// cannot take at once goes out whole later, and a failed one is reported from the loop; what one
// read makes a session send goes out in one write per destination (the loop's write batch held
// while the read is fed); what one read brings is delivered whole, long lines included.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "protocol/error.hpp"
#include "transports/fd_transport.hpp"
#include "transports/write_batch.hpp"

namespace mcpmux {
namespace {

struct quiet_events : transport_events {
  void on_message(std::string_view) override {}
  void on_oversize(std::size_t) override {}
  void on_closed(std::error_code, std::string) override {}
};

class fd_transport_write : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  void TearDown() override { ::close(fds_[1]); }

  std::shared_ptr<transport> open(std::size_t max_queue = 64u << 20,
                                  std::shared_ptr<write_batch> batch = nullptr) {
    fd_transport_options o;
    o.limits.max_queue_bytes = max_queue;
    o.batch = std::move(batch);
    auto t = make_fd_transport(io_, fds_[0], fds_[0], o);
    t->start(events_);
    return t;
  }
  // Runs the loop until everything queued is written, then reads what the peer got.
  std::string drain(transport& t, std::size_t expect) {
    std::string got;
    char buf[65536];
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (got.size() < expect && std::chrono::steady_clock::now() < until) {
      io_.run_for(std::chrono::milliseconds(1));
      io_.restart();
      const auto n = ::recv(fds_[1], buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) got.append(buf, static_cast<std::size_t>(n));
    }
    EXPECT_EQ(t.queued_bytes(), 0u);
    return got;
  }

  boost::asio::io_context io_;
  quiet_events events_;
  int fds_[2] = {-1, -1};
};

TEST_F(fd_transport_write, SplicedMessagesGoOutWholeAndInOrder) {
  auto t = open();
  auto shared = std::make_shared<const std::string>(R"([{"name":"a"},{"name":"b"}])");
  ASSERT_FALSE(t->send("first"));
  auto item = std::make_shared<const std::string>(R"({"name":"a"})");
  ASSERT_FALSE(t->send_spliced({R"({"result":{"tools":)", shared, "}}"}));
  ASSERT_FALSE(t->send_spliced({"head only", nullptr, {}}));
  ASSERT_FALSE(t->send_spliced({"", item, "!"}));
  ASSERT_FALSE(t->send("last"));
  const std::string want =
      "first\n"
      R"({"result":{"tools":[{"name":"a"},{"name":"b"}]}})"
      "\nhead only\n"
      R"({"name":"a"}!)"
      "\nlast\n";
  EXPECT_EQ(drain(*t, want.size()), want);
  // Written: the transport holds the shared text no longer.
  EXPECT_EQ(shared.use_count(), 1);
  EXPECT_EQ(item.use_count(), 1);
}

// What the descriptor takes at once is done when send returns: nothing is left queued and no
// completion is posted (one cost the loop an epoll_wait of its own per message).
TEST_F(fd_transport_write, AWriteTheDescriptorTakesIsDoneWhenSendReturns) {
  auto t = open();
  io_.poll();  // the transport's first wait for input is queued
  ASSERT_FALSE(t->send("one"));
  ASSERT_FALSE(t->send_spliced({"two", std::make_shared<const std::string>("+"), "!"}));
  EXPECT_EQ(t->queued_bytes(), 0u);
  EXPECT_EQ(io_.poll(), 0u);
  char buf[64];
  const auto n = ::recv(fds_[1], buf, sizeof buf, MSG_DONTWAIT);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)), "one\ntwo+!\n");
}

TEST_F(fd_transport_write, ABigSharedMiddleIsWrittenInFull) {
  auto t = open();
  auto shared = std::make_shared<const std::string>(3u << 20, 'x');  // beyond a socket buffer
  ASSERT_FALSE(t->send_spliced({"<", shared, ">"}));
  EXPECT_EQ(t->queued_bytes(), shared->size() + 3);
  const auto got = drain(*t, shared->size() + 3);
  ASSERT_EQ(got.size(), shared->size() + 3);
  EXPECT_EQ(got.front(), '<');
  EXPECT_EQ(got.substr(got.size() - 2), ">\n");
  EXPECT_EQ(got.find_first_not_of('x', 1), got.size() - 2);
}

// A message written from where it is (the queue empty) that the descriptor takes only part of
// is queued with what is left: what is sent next goes after it.
TEST_F(fd_transport_write, WhatFollowsAMessageWrittenInPartGoesAfterIt) {
  auto t = open();
  auto shared = std::make_shared<const std::string>(3u << 20, 'y');
  ASSERT_FALSE(t->send_spliced({"[", shared, "]"}));
  const auto first = shared->size() + 3;
  EXPECT_EQ(t->queued_bytes(), first);
  ASSERT_FALSE(t->send("next"));
  EXPECT_EQ(t->queued_bytes(), first + 5);
  const auto got = drain(*t, first + 5);
  ASSERT_EQ(got.size(), first + 5);
  EXPECT_EQ(got.substr(got.size() - 8), "y]\nnext\n");
  EXPECT_EQ(shared.use_count(), 1);
}

// A text the caller keeps: written from its buffer when it goes at once, copied when it has to
// wait (the rest of a big one, or behind a held batch), so that the caller may reuse its buffer
// as soon as send_copy returns.
TEST_F(fd_transport_write, ACallersTextIsCopiedOnlyWhenItWaits) {
  auto t = open();
  io_.poll();
  std::string buffer = "first";
  ASSERT_FALSE(t->send_copy(buffer));
  EXPECT_EQ(t->queued_bytes(), 0u);
  EXPECT_EQ(io_.poll(), 0u);     // done: nothing posted
  buffer.assign(3u << 20, 'z');  // beyond a socket buffer: the rest waits
  ASSERT_FALSE(t->send_copy(buffer));
  EXPECT_GT(t->queued_bytes(), 0u);
  buffer.assign("then");  // queued behind it: copied
  ASSERT_FALSE(t->send_copy(buffer));
  buffer.assign("overwritten");
  const auto want = "first\n" + std::string(3u << 20, 'z') + "\nthen\n";
  EXPECT_EQ(drain(*t, want.size()), want);
}

TEST_F(fd_transport_write, ACallersTextHeldForTheBatchGoesOutAsItWasSent) {
  const auto batch = std::make_shared<write_batch>();
  auto t = open(64u << 20, batch);
  std::string buffer;
  batch->hold();
  for (const auto* text : {"one", "two", "three"}) {
    buffer.assign(text);
    ASSERT_FALSE(t->send_copy(buffer));
  }
  buffer.assign("gone");
  batch->release();
  EXPECT_EQ(drain(*t, 14), "one\ntwo\nthree\n");
}

TEST_F(fd_transport_write, ACallersTextIsRefusedAsSendRefusesIt) {
  auto t = open(16);
  EXPECT_EQ(t->send_copy(std::string(64, 'x')), make_error_code(errc::queue_full));
  EXPECT_EQ(t->queued_bytes(), 0u);
  ASSERT_FALSE(t->send_copy("fits"));
  EXPECT_EQ(drain(*t, 5), "fits\n");
  t->close();
  EXPECT_EQ(t->send_copy("late"), make_error_code(errc::transport_closed));
}

TEST_F(fd_transport_write, TheQueueCapCountsTheSharedMiddle) {
  auto t = open(1024);
  auto shared = std::make_shared<const std::string>(2000, 'x');
  EXPECT_EQ(t->send_spliced({"h", shared, "t"}), make_error_code(errc::queue_full));
  EXPECT_EQ(t->queued_bytes(), 0u);
  EXPECT_EQ(shared.use_count(), 1);  // refused: not kept
  ASSERT_FALSE(t->send("small"));
  EXPECT_EQ(drain(*t, 6), "small\n");
}

// More messages than one write gathers (and more buffers than Asio writes at a time), queued
// while the loop's batch is held: all go out at the flush, whole and in order.
TEST_F(fd_transport_write, AHeldBatchOfManyMessagesGoesOutInOrder) {
  const auto batch = std::make_shared<write_batch>();
  auto t = open(64u << 20, batch);
  std::string want;
  batch->hold();
  for (int i = 0; i < 300; ++i) {
    const std::string head = "m" + std::to_string(i);
    ASSERT_FALSE(t->send_spliced({head, std::make_shared<const std::string>("-"), "."}));
    want += head + "-.\n";
  }
  char buf[64];
  EXPECT_LT(::recv(fds_[1], buf, sizeof buf, MSG_DONTWAIT), 0);  // held: nothing written yet
  batch->release();
  EXPECT_EQ(t->queued_bytes(), 0u);  // the socket took it all at the flush
  EXPECT_EQ(drain(*t, want.size()), want);
}

// A write that fails is reported from the loop, not from inside send(): the caller of send is
// in the middle of its own work.
TEST(fd_transport_fail, AWriteToAReaderThatIsGoneIsReportedFromTheLoop) {
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  ::close(out[0]);  // nobody reads what the transport writes
  ::signal(SIGPIPE, SIG_IGN);
  struct closed_events : quiet_events {
    std::string reason;
    void on_closed(std::error_code, std::string r) override { reason = std::move(r); }
  } events;
  boost::asio::io_context io;
  auto t = make_fd_transport(io, in[0], out[1], {});
  t->start(events);
  EXPECT_FALSE(t->send("lost"));
  EXPECT_EQ(events.reason, "");
  for (int i = 0; i < 100 && events.reason.empty(); ++i) io.run_for(std::chrono::milliseconds(1));
  EXPECT_NE(events.reason.find("write failed"), std::string::npos) << events.reason;
  EXPECT_EQ(t->send("after"), make_error_code(errc::transport_closed));
  t->close();
  ::close(in[1]);
}

// A transport that only knows whole messages gets the runs joined.
// A relay of two transports: every line read on `from` is sent on to `to`, as a session forwards
// requests. `to` writes into a SOCK_SEQPACKET socket, so its peer receives one record per write.
struct forward_events : transport_events {
  std::shared_ptr<transport> to;
  int sent = 0;
  bool close_at_third = false;
  int peek_fd = -1;               ///< when set: what its reader could take after each send
  std::vector<ssize_t> readable;  ///< bytes of the first record then, -1 for none
  void on_message(std::string_view line) override {
    EXPECT_FALSE(to->send(std::string(line)));
    if (peek_fd >= 0) {
      char buf[4096];
      readable.push_back(::recv(peek_fd, buf, sizeof buf, MSG_PEEK | MSG_DONTWAIT));
    }
    if (++sent == 3 && close_at_third) to->close();
  }
  void on_oversize(std::size_t) override {}
  void on_closed(std::error_code, std::string) override {}
};

class fd_transport_cork : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, in_), 0);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, out_), 0);
    fd_transport_options o;
    o.batch = batch_;
    fwd_.to = make_fd_transport(io_, out_[0], out_[0], o);
    fwd_.to->start(sink_);
    from_ = make_fd_transport(io_, in_[0], in_[0], o);
    from_->start(fwd_);
  }
  void TearDown() override {
    ::close(in_[1]);
    ::close(out_[1]);
  }
  // Writes `batch` in one send and returns the records `to` wrote, until `expect` bytes came.
  std::vector<std::string> relay(std::string_view batch, std::size_t expect) {
    EXPECT_EQ(::send(in_[1], batch.data(), batch.size(), 0), static_cast<ssize_t>(batch.size()));
    std::vector<std::string> got;
    std::size_t bytes = 0;
    char buf[4096];
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (bytes < expect && std::chrono::steady_clock::now() < until) {
      io_.run_for(std::chrono::milliseconds(1));
      io_.restart();
      ssize_t n;
      while ((n = ::recv(out_[1], buf, sizeof buf, MSG_DONTWAIT)) > 0) {
        got.emplace_back(buf, static_cast<std::size_t>(n));
        bytes += static_cast<std::size_t>(n);
      }
    }
    return got;
  }

  boost::asio::io_context io_;
  std::shared_ptr<write_batch> batch_ = std::make_shared<write_batch>();
  quiet_events sink_;
  forward_events fwd_;
  std::shared_ptr<transport> from_;
  int in_[2] = {-1, -1}, out_[2] = {-1, -1};
};

TEST_F(fd_transport_cork, AReadsBatchGoesOutInOneWrite) {
  const std::string batch = "{\"id\":1}\n{\"id\":22}\n{\"id\":333}\n";
  EXPECT_EQ(relay(batch, batch.size()), std::vector<std::string>{batch});
  EXPECT_EQ(fwd_.sent, 3);
  EXPECT_EQ(fwd_.to->queued_bytes(), 0u);
  // Alone, a line goes out as soon as its read is fed.
  EXPECT_EQ(relay("{\"id\":4}\n", 9), std::vector<std::string>{"{\"id\":4}\n"});
}

// The batch goes out with the last line's first message, while the session is still handling
// that line: what it does after sending (the audit, the histograms) does not delay the peer.
TEST_F(fd_transport_cork, TheBatchLeavesWithTheLastLinesFirstMessage) {
  fwd_.peek_fd = out_[1];
  const std::string batch = "{\"id\":1}\n{\"id\":22}\r\n{\"id\":333}\r\n";
  const std::string sent = "{\"id\":1}\n{\"id\":22}\n{\"id\":333}\n";
  EXPECT_EQ(relay(batch, sent.size()), std::vector<std::string>{sent});
  EXPECT_EQ(fwd_.readable, (std::vector<ssize_t>{-1, -1, static_cast<ssize_t>(sent.size())}));
  // A line completed across reads is the last of its read too.
  fwd_.readable.clear();
  ASSERT_EQ(::send(in_[1], "{\"id\":4", 7, 0), 7);
  EXPECT_EQ(relay("}\n", 9), std::vector<std::string>{"{\"id\":4}\n"});
  EXPECT_EQ(fwd_.readable, std::vector<ssize_t>{9});
  // After blank lines the batch waits for the end of the read, as before; an unfinished line
  // is not part of the read's batch.
  fwd_.readable.clear();
  EXPECT_EQ(relay("{\"id\":5}\n\n  \n", 9), std::vector<std::string>{"{\"id\":5}\n"});
  EXPECT_EQ(fwd_.readable, std::vector<ssize_t>{-1});
  fwd_.readable.clear();
  EXPECT_EQ(relay("{\"id\":6}\n{\"id\"", 9), std::vector<std::string>{"{\"id\":6}\n"});
  EXPECT_EQ(fwd_.readable, std::vector<ssize_t>{9});
}

TEST_F(fd_transport_cork, ClosingACorkedTransportStillWritesWhatWasSent) {
  fwd_.close_at_third = true;
  const std::string batch = "{\"id\":1}\n{\"id\":22}\n{\"id\":333}\n";
  EXPECT_EQ(relay(batch, batch.size()), std::vector<std::string>{batch});
}

// Readiness is edge-triggered: after a read that filled its buffer the transport reads on by
// itself, since no new edge will come for what is left.
struct recording_events : transport_events {
  std::vector<std::string> lines;
  void on_message(std::string_view line) override { lines.emplace_back(line); }
  void on_oversize(std::size_t) override {}
  void on_closed(std::error_code, std::string) override {}
};

TEST(fd_transport_read, WhatOneEdgeBringsIsReadWholeThoughItFillsTheBufferTwice) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int size = 1 << 20;
  ASSERT_EQ(::setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &size, sizeof size), 0);
  boost::asio::io_context io;
  recording_events events;
  auto t = make_fd_transport(io, sv[0], sv[0], {});
  t->start(events);
  const auto run = [&io](auto done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done() && std::chrono::steady_clock::now() < until) {
      io.run_for(std::chrono::milliseconds(1));
      io.restart();
    }
  };
  // One short line first, so that the transport's wait is queued and the next bytes are one
  // edge; then a line of 150 KiB and a short one, in one send, and nothing after them.
  ASSERT_EQ(::send(sv[1], "{\"id\":0}\n", 9, 0), 9);
  run([&] { return events.lines.size() == 1; });
  ASSERT_EQ(events.lines.size(), 1u);
  const std::string big = "{\"id\":1,\"pad\":\"" + std::string(150 * 1024, 'p') + "\"}";
  const std::string batch = big + "\n{\"id\":2}\n";
  ASSERT_EQ(::send(sv[1], batch.data(), batch.size(), 0), static_cast<ssize_t>(batch.size()));
  run([&] { return events.lines.size() == 3; });
  ASSERT_EQ(events.lines.size(), 3u);
  EXPECT_EQ(events.lines[1], big);
  EXPECT_EQ(events.lines[2], "{\"id\":2}");
  t->close();
  ::close(sv[1]);
}

// Lines longer than what waits for the loop (1 KiB) are read on at once, whole.
TEST(fd_transport_read, LinesLongerThanTheFirstBufferArriveWhole) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  boost::asio::io_context io;
  recording_events events;
  auto t = make_fd_transport(io, sv[0], sv[0], {});
  t->start(events);
  std::vector<std::string> want;
  std::string batch;
  for (std::size_t len : {1023u, 1024u, 1025u, 5000u, 10u}) {
    want.push_back("{\"p\":\"" + std::string(len, 'q') + "\"}");
    batch += want.back() + "\n";
  }
  ASSERT_EQ(::send(sv[1], batch.data(), batch.size(), 0), static_cast<ssize_t>(batch.size()));
  for (int i = 0; i < 5000 && events.lines.size() < want.size(); ++i)
    io.run_for(std::chrono::milliseconds(1));
  EXPECT_EQ(events.lines, want);
  t->close();
  ::close(sv[1]);
}

// read_ready() delivers what is there without the loop (a child that exited left it).
TEST(fd_transport_read, ReadReadyDeliversWhatWaitsAtOnce) {
  int in[2], out[2];
  ASSERT_EQ(::pipe(in), 0);
  ASSERT_EQ(::pipe(out), 0);
  boost::asio::io_context io;
  recording_events events;
  auto t = make_fd_transport(io, in[0], out[1], {});
  t->start(events);
  const std::string text = "{\"id\":1}\n{\"id\":2}\n" + std::string(3000, 'x') + "\n";
  ASSERT_EQ(::write(in[1], text.data(), text.size()), static_cast<ssize_t>(text.size()));
  t->read_ready();
  ASSERT_EQ(events.lines.size(), 3u);
  EXPECT_EQ(events.lines[1], "{\"id\":2}");
  EXPECT_EQ(events.lines[2].size(), 3000u);
  t->close();
  ::close(in[1]);
  ::close(out[0]);
}

TEST(spliced_text, JoinsIntoOneMessageByDefault) {
  struct recording : transport {
    std::string last;
    void start(transport_events&) override {}
    std::error_code send(std::string m) override {
      last = std::move(m);
      return {};
    }
    void close() override {}
    std::size_t queued_bytes() const override { return 0; }
  } t;
  EXPECT_FALSE(t.send_spliced({"<", std::make_shared<const std::string>("234"), ">"}));
  EXPECT_EQ(t.last, "<234>");
  auto shared = std::make_shared<const std::string>("0123456789");
  spliced_text s{"head", shared, "tail"};
  EXPECT_EQ(s.size(), 18u);
  EXPECT_EQ(std::move(s).joined(), "head0123456789tail");
}

}  // namespace
}  // namespace mcpmux
