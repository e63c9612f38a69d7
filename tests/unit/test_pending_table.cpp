// Unit tests of core/pending_table: ids, take-once, deadlines, expiry order and take_all.
#include "protocol/pending_table.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;

const steady_clock::time_point t0 = steady_clock::time_point{} + 1000h;

// A handler that counts its calls in `*calls`.
response_handler counting(int* calls) {
  return [calls](rpc_outcome) { ++*calls; };
}

std::vector<std::int64_t> ids_of(
    const std::vector<std::pair<std::int64_t, pending_table::entry>>& v) {
  std::vector<std::int64_t> out;
  for (const auto& [id, e] : v) out.push_back(id);
  return out;
}

TEST(PendingTable, IdsIncreaseFromOne) {
  pending_table t;
  EXPECT_EQ(t.add("a", t0, std::nullopt, nullptr), 1);
  EXPECT_EQ(t.add("b", t0, 5s, nullptr), 2);
  EXPECT_EQ(t.add("c", t0, std::nullopt, nullptr), 3);
  EXPECT_EQ(t.size(), 3u);
  // Ids are never reused, even after entries leave.
  ASSERT_TRUE(t.take(3));
  ASSERT_TRUE(t.take(2));
  EXPECT_EQ(t.add("d", t0, std::nullopt, nullptr), 4);
  t.take_all();
  EXPECT_EQ(t.add("e", t0, std::nullopt, nullptr), 5);
}

TEST(PendingTable, EntryKeepsMethodTimesAndHandler) {
  pending_table t;
  int calls = 0;
  const auto id = t.add("tools/call", t0, 30s, counting(&calls));
  EXPECT_TRUE(t.contains(id));
  auto e = t.take(id);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->method, "tools/call");
  EXPECT_EQ(e->started, t0);
  EXPECT_EQ(e->deadline, t0 + 30s);
  ASSERT_TRUE(e->handler);
  e->handler(rpc_outcome{});
  EXPECT_EQ(calls, 1);
}

TEST(PendingTable, NoTimeoutMeansNoDeadline) {
  pending_table t;
  const auto id = t.add("m", t0, std::nullopt, nullptr);
  EXPECT_FALSE(t.next_deadline());
  EXPECT_TRUE(t.take_expired(steady_clock::time_point::max() - 1h).empty());
  EXPECT_TRUE(t.contains(id));
  EXPECT_EQ(t.take(id)->deadline, steady_clock::time_point::max());
}

TEST(PendingTable, TakeResolvesOnce) {
  pending_table t;
  int calls = 0;
  const auto id = t.add("m", t0, 1s, counting(&calls));
  auto first = t.take(id);
  ASSERT_TRUE(first);
  EXPECT_FALSE(t.take(id));
  EXPECT_FALSE(t.contains(id));
  EXPECT_EQ(t.size(), 0u);
  // A taken entry does not expire later, nor keeps a deadline.
  EXPECT_FALSE(t.next_deadline());
  EXPECT_TRUE(t.take_expired(t0 + 1h).empty());
  EXPECT_EQ(calls, 0);  // the table never calls handlers itself
}

// A taken entry's slot is kept for the next request: what the handler held must go with the
// entry taken, not stay in the table; the next request's entry is all its own.
TEST(PendingTable, ATakenEntryLeavesNothingOfItsOwnBehind) {
  pending_table t;
  auto held = std::make_shared<int>(1);
  const auto first = t.add(
      "first", t0, 1s, [held](rpc_outcome) {}, true, nullptr);
  std::optional<pending_table::entry> taken = t.take(first);
  ASSERT_TRUE(taken);
  EXPECT_EQ(held.use_count(), 2);  // the taken entry's handler
  taken.reset();
  EXPECT_EQ(held.use_count(), 1);  // and nothing else
  int calls = 0;
  const auto second = t.add("second", t0 + 1s, std::nullopt, counting(&calls));
  EXPECT_NE(second, first);
  EXPECT_FALSE(t.wants_raw(second));
  auto e = t.take(second);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->method, "second");
  EXPECT_EQ(e->started, t0 + 1s);
  EXPECT_EQ(e->deadline, steady_clock::time_point::max());
  e->handler({});
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(t.next_deadline());  // the first one's deadline went with it
}

TEST(PendingTable, TakeUnknownId) {
  pending_table t;
  EXPECT_FALSE(t.take(1));
  EXPECT_FALSE(t.take(-1));
  t.add("m", t0, std::nullopt, nullptr);
  EXPECT_FALSE(t.take(2));
  EXPECT_EQ(t.size(), 1u);
}

TEST(PendingTable, TakeExpiredReturnsOnlyExpiredInDeadlineOrder) {
  pending_table t;
  const auto a = t.add("a", t0, 30s, nullptr);
  const auto b = t.add("b", t0, 10s, nullptr);
  const auto c = t.add("c", t0, std::nullopt, nullptr);
  const auto d = t.add("d", t0, 20s, nullptr);
  const auto e = t.add("e", t0 + 5s, 5s, nullptr);  // deadline t0 + 10s, same as b

  EXPECT_TRUE(t.take_expired(t0 + 9s).empty());
  EXPECT_EQ(t.size(), 5u);

  // At exactly the deadline an entry is expired; equal deadlines come out by id.
  auto first = t.take_expired(t0 + 10s);
  EXPECT_THAT(ids_of(first), ElementsAre(b, e));
  EXPECT_EQ(first[0].second.method, "b");
  EXPECT_EQ(first[1].second.method, "e");

  auto rest = t.take_expired(t0 + 1h);
  EXPECT_THAT(ids_of(rest), ElementsAre(d, a));
  EXPECT_EQ(t.size(), 1u);
  EXPECT_TRUE(t.contains(c));
  EXPECT_TRUE(t.take_expired(t0 + 2h).empty());
}

// Deadlines are dropped lazily (a heap): many answered requests and moved deadlines leave the
// next deadline and the expiry exactly as if each had been removed at once.
TEST(PendingTable, AnsweredAndMovedDeadlinesNeverExpire) {
  pending_table t;
  const auto kept = t.add("kept", t0, 500s, nullptr);
  for (int i = 0; i < 1000; ++i) {
    const auto id = t.add("answered", t0, std::chrono::seconds(1 + i % 7), nullptr);
    ASSERT_TRUE(t.take(id));
  }
  const auto moved = t.add("moved", t0, 1s, nullptr);
  for (int i = 2; i <= 300; ++i) ASSERT_TRUE(t.set_deadline(moved, t0 + std::chrono::seconds(i)));
  EXPECT_EQ(t.next_deadline(), t0 + 300s);
  EXPECT_TRUE(t.take_expired(t0 + 299s).empty());
  EXPECT_THAT(ids_of(t.take_expired(t0 + 400s)), ElementsAre(moved));
  EXPECT_EQ(t.next_deadline(), t0 + 500s);
  EXPECT_THAT(ids_of(t.take_expired(t0 + 1h)), ElementsAre(kept));
  EXPECT_FALSE(t.next_deadline());
  EXPECT_EQ(t.size(), 0u);
}

TEST(PendingTable, SetDeadlineMovesEntry) {
  pending_table t;
  const auto a = t.add("a", t0, 10s, nullptr);
  const auto b = t.add("b", t0, 20s, nullptr);
  EXPECT_EQ(t.next_deadline(), t0 + 10s);

  // Progress extends a past b.
  EXPECT_TRUE(t.set_deadline(a, t0 + 30s));
  EXPECT_EQ(t.next_deadline(), t0 + 20s);
  EXPECT_TRUE(t.take_expired(t0 + 15s).empty());
  EXPECT_THAT(ids_of(t.take_expired(t0 + 25s)), ElementsAre(b));
  EXPECT_THAT(ids_of(t.take_expired(t0 + 30s)), ElementsAre(a));
  EXPECT_EQ(t.size(), 0u);
}

TEST(PendingTable, SetDeadlineEarlierAndTakeReportsNewDeadline) {
  pending_table t;
  const auto a = t.add("a", t0, 60s, nullptr);
  EXPECT_TRUE(t.set_deadline(a, t0 + 1s));
  EXPECT_EQ(t.next_deadline(), t0 + 1s);
  auto e = t.take(a);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->deadline, t0 + 1s);
  EXPECT_FALSE(t.next_deadline());
}

TEST(PendingTable, SetDeadlineAddsAndRemovesTimeout) {
  pending_table t;
  const auto a = t.add("a", t0, std::nullopt, nullptr);
  EXPECT_FALSE(t.next_deadline());
  EXPECT_TRUE(t.set_deadline(a, t0 + 5s));
  EXPECT_EQ(t.next_deadline(), t0 + 5s);
  EXPECT_TRUE(t.set_deadline(a, steady_clock::time_point::max()));
  EXPECT_FALSE(t.next_deadline());
  EXPECT_TRUE(t.take_expired(t0 + 1h).empty());
  EXPECT_TRUE(t.contains(a));
}

TEST(PendingTable, SetDeadlineUnknownIdIsFalse) {
  pending_table t;
  EXPECT_FALSE(t.set_deadline(1, t0));
  const auto a = t.add("a", t0, 1s, nullptr);
  ASSERT_TRUE(t.take(a));
  EXPECT_FALSE(t.set_deadline(a, t0 + 5s));
  EXPECT_FALSE(t.next_deadline());
}

TEST(PendingTable, TakeAllEmptiesInIdOrder) {
  pending_table t;
  int calls = 0;
  for (int i = 0; i < 50; ++i)
    t.add(
        "m" + std::to_string(i), t0,
        i % 2 ? std::optional<steady_clock::duration>(std::chrono::seconds(100 - i)) : std::nullopt,
        counting(&calls));
  ASSERT_TRUE(t.take(10));
  auto all = t.take_all();
  ASSERT_EQ(all.size(), 49u);
  for (std::size_t i = 1; i < all.size(); ++i) EXPECT_LT(all[i - 1].first, all[i].first);
  EXPECT_EQ(all.front().first, 1);
  EXPECT_EQ(all.front().second.method, "m0");
  EXPECT_EQ(all.back().first, 50);
  for (auto& [id, e] : all) e.handler(rpc_outcome{});
  EXPECT_EQ(calls, 49);

  EXPECT_EQ(t.size(), 0u);
  EXPECT_FALSE(t.next_deadline());
  EXPECT_TRUE(t.take_expired(t0 + 1000h).empty());
  EXPECT_TRUE(t.take_all().empty());
  EXPECT_FALSE(t.contains(1));
}

TEST(PendingTable, NextDeadlineTracksEarliest) {
  pending_table t;
  EXPECT_FALSE(t.next_deadline());
  const auto a = t.add("a", t0, 30s, nullptr);
  EXPECT_EQ(t.next_deadline(), t0 + 30s);
  const auto b = t.add("b", t0, 10s, nullptr);
  EXPECT_EQ(t.next_deadline(), t0 + 10s);
  t.add("c", t0, std::nullopt, nullptr);
  EXPECT_EQ(t.next_deadline(), t0 + 10s);
  ASSERT_TRUE(t.take(b));
  EXPECT_EQ(t.next_deadline(), t0 + 30s);
  ASSERT_TRUE(t.take(a));
  EXPECT_FALSE(t.next_deadline());
  EXPECT_EQ(t.size(), 1u);
}

TEST(PendingTable, ZeroTimeoutExpiresAtOnce) {
  pending_table t;
  const auto a = t.add("a", t0, 0s, nullptr);
  EXPECT_EQ(t.next_deadline(), t0);
  EXPECT_THAT(ids_of(t.take_expired(t0)), ElementsAre(a));
}

}  // namespace
}  // namespace mcpmux
