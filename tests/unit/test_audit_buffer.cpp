// Unit tests of core/audit_buffer: entries batched on a timer, history reads what is still
// buffered, the audit setting (off, and changed by a reload), and a buffer without a store.
#include "core/audit_buffer.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "base/clock.hpp"
#include "config/config.hpp"

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
