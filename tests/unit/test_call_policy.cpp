// Unit tests of core/call_policy: call deadlines, resend once, progress extension up to the
// ceiling, and ping liveness — with a fake clock.
#include "core/call_policy.hpp"

#include <gtest/gtest.h>

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using time_point = call_policy::clock::time_point;
const time_point t0 = time_point{} + 1000h;

TEST(CallPolicy, AQueuedCallKeepsWhatIsLeftOfItsTimeout) {
  call_policy p(10s, retry_mode::always, true, 60s);
  EXPECT_EQ(p.deadline(t0), t0 + 10s);
  EXPECT_EQ(p.send_timeout(t0, t0), 10s);
  EXPECT_EQ(p.send_timeout(t0, t0 + 4s), 6s);
  EXPECT_EQ(p.send_timeout(t0, t0 + 12s), 1ms);  // late: still sent, failing at once
  EXPECT_FALSE(p.expired(t0, t0 + 9999ms));
  EXPECT_TRUE(p.expired(t0, t0 + 10s));
}

TEST(CallPolicy, NoTimeoutMeansNoDeadline) {
  call_policy p(0ms, retry_mode::always, true, 60s);
  EXPECT_FALSE(p.deadline(t0));
  EXPECT_FALSE(p.send_timeout(t0, t0 + 1h));
  EXPECT_FALSE(p.expired(t0, t0 + 1h));
  EXPECT_FALSE(p.on_progress(t0, t0 + 1s));
}

TEST(CallPolicy, ADroppedCallIsResentAtMostOnceAndNeverAfterAStop) {
  using drop = call_policy::dropped_call;
  for (auto mode : {retry_mode::safe, retry_mode::always, retry_mode::never}) {
    const call_policy p(1s, mode, true, 0ms);
    EXPECT_FALSE(p.resend_after_drop(drop{true, false, false, true})) << to_string(mode);
    EXPECT_FALSE(p.resend_after_drop(drop{false, true, false, true})) << to_string(mode);
  }
}

TEST(CallPolicy, RetryAlwaysResendsAndNeverDoesNot) {
  using drop = call_policy::dropped_call;
  const drop tool_that_may_have_run{false, false, true, false};
  EXPECT_TRUE(
      call_policy(1s, retry_mode::always, true, 0ms).resend_after_drop(tool_that_may_have_run));
  EXPECT_FALSE(call_policy(1s, retry_mode::never, true, 0ms)
                   .resend_after_drop(drop{false, false, false, true}));
}

TEST(CallPolicy, RetrySafeResendsOnlyWhatCannotHaveRunOrCannotHarmTwice) {
  using drop = call_policy::dropped_call;
  const call_policy p(1s, retry_mode::safe, true, 0ms);
  EXPECT_TRUE(p.resend_after_drop(drop{false, false, false, false}));  // never reached the server
  EXPECT_TRUE(p.resend_after_drop(drop{false, false, true, true}));    // read-only or idempotent
  EXPECT_FALSE(p.resend_after_drop(drop{false, false, true, false}));  // may have run: not twice
}

TEST(CallPolicy, ProgressRestartsTheTimeoutUpToTheCeiling) {
  call_policy p(10s, retry_mode::always, true, 25s);
  EXPECT_EQ(p.on_progress(t0, t0 + 5s), 10s);
  EXPECT_EQ(p.on_progress(t0, t0 + 20s), 5s);   // 25 s after the start at most
  EXPECT_EQ(p.on_progress(t0, t0 + 30s), 1ms);  // past the ceiling: ends now
  EXPECT_EQ(call_policy(10s, retry_mode::always, true, 0ms).on_progress(t0, t0 + 1h),
            10s);  // no ceiling
  EXPECT_FALSE(call_policy(10s, retry_mode::always, false, 25s).on_progress(t0, t0 + 5s));  // off
}

TEST(Liveness, TwoMissedPingsInARowAreAHungServer) {
  liveness l(5s, 2s);
  EXPECT_EQ(l.next_ping(), 5s);
  EXPECT_EQ(l.ping_timeout(), 2s);
  EXPECT_EQ(l.on_no_answer(), liveness::verdict::missed);
  EXPECT_EQ(l.on_answer(), liveness::verdict::alive);  // an answer in between clears it
  EXPECT_EQ(l.on_no_answer(), liveness::verdict::missed);
  EXPECT_EQ(l.on_no_answer(), liveness::verdict::hung);
  l.reset();
  EXPECT_EQ(l.misses(), 0u);
  EXPECT_EQ(liveness(5s, 0ms).ping_timeout(), 5s);
  EXPECT_FALSE(liveness(0ms, 2s).next_ping());
}

}  // namespace
}  // namespace mcpmux
