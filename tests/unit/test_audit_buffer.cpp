// Unit tests of core/audit_buffer: entries batched on a timer, history reads what is still
// buffered, the audit setting (off, and changed by a reload), and a buffer without a store.
#include "core/audit_buffer.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "base/clock.hpp"
#include "config/config.hpp"
#include "core/audit_writer.hpp"

namespace mcpmux {
namespace {

audit_entry call(std::string server, std::string tool) {
  audit_entry e;
  e.time_ms = unix_now_ms();  // (retention drops what is older than its days)
  e.kind = "call";
  e.client = "test";
  e.server = std::move(server);
  e.name = std::move(tool);
  e.outcome = "ok";
  return e;
}

struct audit_buffer_test : ::testing::Test {
  boost::asio::io_context io;
  std::unique_ptr<state_store> store;
  daemon_config d;
  void SetUp() override {
    auto opened = state_store::open(":memory:");
    ASSERT_TRUE(opened) << opened.error().message;
    store = std::move(*opened);
  }
};

TEST_F(audit_buffer_test, BatchesUntilTheTimerThenWrites) {
  audit_buffer b(io, store.get(), d);
  ASSERT_TRUE(b.auditing());
  b.audit(call("files", "read"));
  b.audit(call("files", "write"));
  EXPECT_EQ(b.buffered(), 2u);  // one timer for the batch, nothing written yet
  io.run_one();                 // the flush timer
  EXPECT_EQ(b.buffered(), 0u);
  b.drain();
  const auto rows = store->history({});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "read");
  EXPECT_EQ(rows[1].name, "write");
}

// A buffer full of a record's rows or more is not grown (every row moved): it goes to the
// writer at once, the timer's batch going on in the spare.
TEST_F(audit_buffer_test, AFullBufferGoesToTheWriterRatherThanGrow) {
  audit_buffer b(io, store.get(), d);
  const auto rows = audit_writer::chunk_rows;  // (the buffer grows by doubling up to it)
  for (std::size_t i = 0; i < rows; ++i) b.audit(call("files", "r" + std::to_string(i)));
  EXPECT_EQ(b.buffered(), rows);
  b.audit(call("files", "next"));
  EXPECT_EQ(b.buffered(), 1u);  // the first `rows` handed over, without the timer
  io.run_one();                 // the timer, armed by the first row, flushes the rest
  EXPECT_EQ(b.buffered(), 0u);
  b.drain();
  const auto got = store->history({"", "", 0, rows + 10});
  ASSERT_EQ(got.size(), rows + 1);
  EXPECT_EQ(got.front().name, "r0");
  EXPECT_EQ(got[rows - 1].name, "r" + std::to_string(rows - 1));
  EXPECT_EQ(got.back().name, "next");
}

// A busy daemon's batch grows to what one interval brings: the batch after one cut short gets
// twice the room, not handed over again at the same size (each time in a new vector while the
// writer still holds the last).
TEST_F(audit_buffer_test, TheBatchAfterOneCutShortHasTwiceTheRoom) {
  audit_buffer b(io, store.get(), d);
  std::size_t sent = 0;
  const auto add = [&](std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) b.audit(call("files", "r" + std::to_string(sent++)));
  };
  std::size_t room = audit_writer::chunk_rows;
  add(room);
  for (int round = 0; round < 4; ++round) {
    add(1);  // the full buffer goes; this row starts the next batch
    EXPECT_EQ(b.buffered(), 1u) << round;
    room *= 2;
    add(room - 1);
    EXPECT_EQ(b.buffered(), room) << round;  // all in one batch: none handed over before
  }
  b.drain();
  const auto got = store->history({"", "", 0, sent + 10});
  ASSERT_EQ(got.size(), sent);
  EXPECT_EQ(got.front().name, "r0");
  EXPECT_EQ(got.back().name, "r" + std::to_string(sent - 1));
}

TEST_F(audit_buffer_test, HistoryIncludesWhatIsStillBuffered) {
  audit_buffer b(io, store.get(), d);
  b.audit(call("files", "read"));
  b.audit(call("git", "log"));
  audit_query q;
  q.server = "git";
  const auto rows = b.history(q);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "log");
  EXPECT_EQ(b.buffered(), 0u);
}

// The rows of a written batch come back as the slots of a later one: a row written in place
// there has every field its own, nothing of the row the slot held before.
TEST_F(audit_buffer_test, ARowWrittenInAReusedSlotKeepsNothingOfTheOldOne) {
  audit_buffer b(io, store.get(), d);
  constexpr int rows = 100;  // (the writer keeps the storage of a batch this big)
  for (int i = 0; i < rows; ++i) {
    auto e = call("files", "read" + std::to_string(i));
    e.client = "socket uid 1000 pid 4242 /usr/bin/node a long label";
    e.detail = R"({"path":"/etc/hosts"})";
    e.redacted = "github-token 1";
    e.run = "r0001";
    e.duration_us = 7;
    e.response_bytes = 99;
    b.audit(std::move(e));
  }
  b.drain();
  for (int i = 0; i < rows; ++i) {
    const auto name = "log" + std::to_string(i);  // (the fields are views: it outlives them)
    audit_fields f;
    f.time_ms = unix_now_ms();
    f.kind = "tools/call";
    f.client = "http";
    f.server = "git";
    f.name = name;
    f.outcome = "error";
    f.request_bytes = 3;
    b.audit(f);
  }
  EXPECT_EQ(b.buffered(), static_cast<std::size_t>(rows));
  audit_query q;
  q.server = "git";
  q.limit = rows;
  const auto later = b.history(q);
  ASSERT_EQ(later.size(), static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) {
    const auto& e = later[i];
    EXPECT_EQ(e.name, "log" + std::to_string(i));
    EXPECT_EQ(e.kind, "tools/call");
    EXPECT_EQ(e.client, "http");
    EXPECT_EQ(e.outcome, "error");
    EXPECT_EQ(e.request_bytes, 3);
    EXPECT_EQ(e.duration_us, 0);
    EXPECT_EQ(e.response_bytes, 0);
    EXPECT_EQ(e.detail, "");
    EXPECT_EQ(e.redacted, "");
    EXPECT_EQ(e.run, "");
  }
}

TEST_F(audit_buffer_test, OffKeepsNothingAndAReloadTurnsItOn) {
  d.audit = false;
  audit_buffer b(io, store.get(), d);
  EXPECT_FALSE(b.auditing());
  b.audit(call("files", "read"));
  EXPECT_EQ(b.buffered(), 0u);
  EXPECT_TRUE(b.history({}).empty());
  d.audit = true;
  b.configure(d);
  b.audit(call("files", "write"));
  const auto rows = b.history({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].name, "write");
}

TEST_F(audit_buffer_test, WithoutAStoreNothingIsKept) {
  audit_buffer b(io, nullptr, d);
  EXPECT_FALSE(b.auditing());
  b.audit(call("files", "read"));
  b.drain();
  EXPECT_EQ(b.buffered(), 0u);
  EXPECT_TRUE(b.history({}).empty());
}

TEST_F(audit_buffer_test, DestroyedWithEntriesBufferedWritesThem) {
  {
    audit_buffer b(io, store.get(), d);
    b.audit(call("files", "read"));
  }
  io.run();  // the cancelled timer's wait ends without touching the buffer
  EXPECT_EQ(store->history({}).size(), 1u);
}

}  // namespace
}  // namespace mcpmux
