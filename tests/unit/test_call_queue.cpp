// Unit tests of core/call_queue: the calls waiting for a server, stepped with a fake clock —
// order by start time, resent calls back at their place, deadlines, cancellation.
#include "core/call_queue.hpp"

#include <gtest/gtest.h>

#include <string>

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using time_point = call_policy::clock::time_point;
const time_point t0 = time_point{} + 1000h;
const call_policy ten_seconds(10s, retry_mode::safe, true, 0ms);

std::vector<std::uint64_t> tokens(std::vector<call_queue<std::string>::entry> v) {
  std::vector<std::uint64_t> out;
  for (auto& e : v) out.push_back(e.token);
  return out;
}

TEST(CallQueue, CallsLeaveInTheOrderTheyStarted) {
  call_queue<std::string> q;
  q.push(1, t0, "a");
  q.push(2, t0 + 1s, "b");
  q.push(3, t0 + 1s, "c");  // same start: after the earlier push
  ASSERT_EQ(q.size(), 3u);
  EXPECT_EQ(q.pop()->call, "a");
  EXPECT_EQ(q.pop()->call, "b");
  EXPECT_EQ(q.pop()->call, "c");
  EXPECT_FALSE(q.pop());
  EXPECT_TRUE(q.empty());
}

TEST(CallQueue, AResentCallGoesBackToItsPlaceSoTheFrontHoldsTheNearestDeadline) {
  call_queue<std::string> q;
  q.push(2, t0 + 2s, "later");
  q.push(3, t0 + 3s, "latest");
  q.push(1, t0, "resent");  // started first, dropped with the connection, queued again
  EXPECT_EQ(q.next_deadline(ten_seconds), t0 + 10s);
  EXPECT_EQ(q.pop()->token, 1u);
}

TEST(CallQueue, ExpireTakesOnlyTheCallsWhoseDeadlinePassed) {
  call_queue<std::string> q;
  q.push(1, t0, "a");
  q.push(2, t0 + 5s, "b");
  q.push(3, t0 + 8s, "c");
  EXPECT_TRUE(q.expire(ten_seconds, t0 + 9s).empty());
  EXPECT_EQ(tokens(q.expire(ten_seconds, t0 + 15s)), (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(q.next_deadline(ten_seconds), t0 + 18s);
  EXPECT_EQ(tokens(q.expire(ten_seconds, t0 + 18s)), (std::vector<std::uint64_t>{3}));
  EXPECT_FALSE(q.next_deadline(ten_seconds));
}

TEST(CallQueue, WithoutATimeoutNothingExpires) {
  call_queue<std::string> q;
  const call_policy none(0ms, retry_mode::safe, true, 0ms);
  q.push(1, t0, "a");
  EXPECT_FALSE(q.next_deadline(none));
  EXPECT_TRUE(q.expire(none, t0 + 24h).empty());
  EXPECT_EQ(q.size(), 1u);
}

TEST(CallQueue, ACancelledCallIsTakenOutAndAnUnknownTokenIsNothing) {
  call_queue<std::string> q;
  q.push(1, t0, "a");
  q.push(2, t0 + 1s, "b");
  EXPECT_EQ(q.remove(1), "a");
  EXPECT_FALSE(q.remove(1));
  EXPECT_FALSE(q.remove(99));
  EXPECT_EQ(q.next_deadline(ten_seconds), t0 + 11s);
}

TEST(CallQueue, TakeAllEmptiesTheQueueInOrder) {
  call_queue<std::string> q;
  q.push(2, t0 + 1s, "b");
  q.push(1, t0, "a");
  auto all = q.take_all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].call, "a");
  EXPECT_EQ(all[1].call, "b");
  EXPECT_TRUE(q.empty());
}

}  // namespace
}  // namespace mcpmux
