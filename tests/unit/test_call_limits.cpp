// Unit tests of core/call_limiter and core/call_backoff: the limits against runaway loops,
// stepped with a fake clock — the sliding window, concurrency, waiting in order, deadlines, and
// the calls' error back-off with its probe.
#include <gtest/gtest.h>

#include "core/call_backoff.hpp"
#include "core/call_limiter.hpp"

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using limit = call_limiter::limit;
using time_point = call_limiter::clock::time_point;
const time_point t0 = time_point{} + 1000h;

TEST(CallLimiter, NoLimitsLetEverythingStart) {
  call_limiter l(0, 0);
  for (std::uint64_t i = 0; i < 1000; ++i) EXPECT_EQ(l.arrive(i, t0, std::nullopt), limit::none);
  EXPECT_EQ(l.in_flight(), 1000u);
  EXPECT_FALSE(l.next_wake(t0));
}

TEST(CallLimiter, TheRateIsASlidingWindowOfAMinute) {
  call_limiter l(3, 0);
  EXPECT_EQ(l.arrive(1, t0, std::nullopt), limit::none);
  EXPECT_EQ(l.arrive(2, t0 + 10s, std::nullopt), limit::none);
  EXPECT_EQ(l.arrive(3, t0 + 20s, std::nullopt), limit::none);
  EXPECT_EQ(l.arrive(4, t0 + 30s, std::nullopt), limit::rate);
  EXPECT_EQ(l.arrive(5, t0 + 31s, std::nullopt), limit::rate);
  // The first start leaves the window at t0 + 60 s: one waiter starts then, the next 10 s later.
  EXPECT_EQ(l.next_wake(t0 + 31s), t0 + 60s);
  EXPECT_TRUE(l.resume(t0 + 59s).started.empty());
  EXPECT_EQ(l.resume(t0 + 60s).started, std::vector<std::uint64_t>{4});
  EXPECT_EQ(l.next_wake(t0 + 60s), t0 + 70s);
  EXPECT_EQ(l.resume(t0 + 70s).started, std::vector<std::uint64_t>{5});
  // Ends do not give back a start: the rate counts starts, not calls in flight.
  for (int i = 0; i < 5; ++i) l.ended();
  EXPECT_EQ(l.arrive(6, t0 + 71s, std::nullopt), limit::rate);
}

TEST(CallLimiter, ConcurrencyReleasesOnEveryEndInOrder) {
  call_limiter l(0, 2);
  EXPECT_EQ(l.arrive(1, t0, std::nullopt), limit::none);
  EXPECT_EQ(l.arrive(2, t0, std::nullopt), limit::none);
  EXPECT_EQ(l.arrive(3, t0, t0 + 5s), limit::concurrency);
  EXPECT_EQ(l.arrive(4, t0, t0 + 5s), limit::concurrency);
  EXPECT_EQ(l.next_wake(t0), t0 + 5s);  // only the deadlines: an end is told, not awaited
  l.ended();
  EXPECT_EQ(l.resume(t0 + 1s).started, std::vector<std::uint64_t>{3});
  EXPECT_EQ(l.in_flight(), 2u);
  // The other one runs out of time, saying what held it.
  auto s = l.resume(t0 + 5s);
  ASSERT_EQ(s.expired.size(), 1u);
  EXPECT_EQ(s.expired[0].token, 4u);
  EXPECT_EQ(s.expired[0].by, limit::concurrency);
  EXPECT_EQ(l.waiting(), 0u);
}

TEST(CallLimiter, ANewcomerNeverOvertakesAWaitingCall) {
  call_limiter l(0, 1);
  EXPECT_EQ(l.arrive(1, t0, std::nullopt), limit::none);
  EXPECT_EQ(l.arrive(2, t0, std::nullopt), limit::concurrency);
  l.ended();
  // Room now, but call 2 is first in line.
  EXPECT_EQ(l.arrive(3, t0, std::nullopt), limit::concurrency);
  EXPECT_EQ(l.resume(t0).started, std::vector<std::uint64_t>{2});
  EXPECT_EQ(l.waiting(), 1u);
}

TEST(CallLimiter, ACancelledWaiterLeavesItsPlace) {
  call_limiter l(1, 0);
  EXPECT_EQ(l.arrive(1, t0, std::nullopt), limit::none);
  EXPECT_EQ(l.arrive(2, t0, std::nullopt), limit::rate);
  EXPECT_EQ(l.arrive(3, t0, std::nullopt), limit::rate);
  EXPECT_TRUE(l.leave(2));
  EXPECT_FALSE(l.leave(2));
  EXPECT_EQ(l.resume(t0 + 60s).started, std::vector<std::uint64_t>{3});
  EXPECT_EQ(config_key(limit::rate), "max_calls_per_minute");
  EXPECT_EQ(config_key(limit::concurrency), "max_concurrent_calls");
}

TEST(CallBackoff, FailuresInARowPauseTheCallsThenOneProbeGoes) {
  call_backoff b;  // 5 failures, 1 s doubling to 60 s
  for (int i = 0; i < 4; ++i) b.failed(t0);
  EXPECT_TRUE(b.admit(t0).go);
  b.failed(t0);
  auto v = b.admit(t0 + 500ms);
  EXPECT_FALSE(v.go);
  EXPECT_EQ(v.until, t0 + 1s);
  // The pause is over: one probe, the others wait for its outcome.
  v = b.admit(t0 + 1s);
  EXPECT_TRUE(v.go);
  EXPECT_TRUE(v.probe);
  EXPECT_FALSE(b.admit(t0 + 1100ms).go);
  // It fails: a pause twice as long.
  b.failed(t0 + 1200ms);
  EXPECT_EQ(b.admit(t0 + 1300ms).until, t0 + 3200ms);
  EXPECT_TRUE(b.admit(t0 + 3200ms).probe);
  // It succeeds: calls go again, and it takes five failures to pause anew.
  b.succeeded();
  EXPECT_TRUE(b.admit(t0 + 3300ms).go);
  EXPECT_FALSE(b.admit(t0 + 3300ms).probe);
  b.failed(t0 + 4s);
  EXPECT_TRUE(b.admit(t0 + 4s).go);
}

TEST(CallBackoff, ThePauseDoublesUpToItsCapAndAProbeThatNeverEndsDoesNotStallTheRest) {
  call_backoff b({.failures = 1, .first_pause = 1000ms, .max_pause = 4000ms});
  auto now = t0;
  std::vector<std::chrono::milliseconds> pauses;
  for (int i = 0; i < 5; ++i) {
    b.failed(now);
    pauses.push_back(
        std::chrono::duration_cast<std::chrono::milliseconds>(*b.paused_until() - now));
    now = *b.paused_until();
    ASSERT_TRUE(b.admit(now).probe);
  }
  EXPECT_EQ(pauses,
            (std::vector<std::chrono::milliseconds>{1000ms, 2000ms, 4000ms, 4000ms, 4000ms}));
  // The last probe was cancelled (no outcome): after another pause the next call probes.
  EXPECT_FALSE(b.admit(now + 3s).go);
  EXPECT_TRUE(b.admit(now + 4s).probe);
}

}  // namespace
}  // namespace mcpmux
