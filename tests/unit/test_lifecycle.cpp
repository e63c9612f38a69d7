// Unit tests of core/lifecycle: state transitions, backoff schedule, jitter, stability reset, stop.
#include "core/lifecycle.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using action = lifecycle::action;
using time_point = lifecycle::clock::time_point;

const time_point t0 = time_point{} + 1000h;

// A lifecycle whose random source returns `*r` (0.5 = no jitter), and a clock the test advances.
struct harness {
  double r = 0.5;
  time_point now = t0;
  lifecycle lc;

  explicit harness(backoff_policy p = {}) : lc(p, [this] { return r; }) {}
  harness(const harness&) = delete;  // the random source points at `r`
  harness& operator=(const harness&) = delete;

  // The current attempt fails now.
  lifecycle::step fail(std::string error = "boom") { return lc.on_closed(now, std::move(error)); }
  // Fires the timer after the delay of `st`.
  lifecycle::step after(const lifecycle::step& st) {
    now += st.delay;
    return lc.on_timer(now);
  }
};

std::vector<std::int64_t> failure_delays(harness& h, int n) {
  std::vector<std::int64_t> out;
  EXPECT_EQ(h.lc.start(h.now, true).what, action::connect);
  for (int i = 0; i < n; ++i) {
    auto st = h.fail();
    EXPECT_EQ(st.what, action::wait);
    out.push_back(st.delay.count());
    EXPECT_EQ(h.after(st).what, action::connect);
  }
  return out;
}

TEST(Lifecycle, StatesHaveNames) {
  EXPECT_EQ(to_string(upstream_state::connecting), "connecting");
  EXPECT_EQ(to_string(upstream_state::ready), "ready");
  EXPECT_EQ(to_string(upstream_state::backoff), "backoff");
  EXPECT_EQ(to_string(upstream_state::stopped), "stopped");
  EXPECT_EQ(to_string(upstream_state::disabled), "disabled");
  EXPECT_EQ(to_string(upstream_state::needs_login), "needs_login");
}

TEST(Lifecycle, NeedsLoginWaitsWithoutRetriesUntilRestarted) {
  harness h;
  ASSERT_EQ(h.lc.start(h.now, true).what, action::connect);
  h.fail();  // one ordinary failure first: needs login starts the count afresh
  h.after({action::wait, std::chrono::milliseconds(500)});
  auto st = h.lc.on_needs_login("needs login: run `mcpmux auth login x`");
  EXPECT_EQ(st.what, action::none);  // no timer: only a login ends it
  EXPECT_EQ(h.lc.state(), upstream_state::needs_login);
  EXPECT_EQ(h.lc.attempt(), 0u);
  EXPECT_EQ(h.lc.last_error(), "needs login: run `mcpmux auth login x`");
  EXPECT_EQ(h.lc.on_timer(h.now).what, action::none);  // a stale timer changes nothing
  EXPECT_EQ(h.lc.on_closed(h.now, "late close").what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::needs_login);
  EXPECT_EQ(h.lc.restart(h.now).what, action::connect);  // the login arrived
  EXPECT_EQ(h.lc.state(), upstream_state::connecting);
}

TEST(Lifecycle, StartsStoppedAndStartConnects) {
  harness h;
  EXPECT_EQ(h.lc.state(), upstream_state::stopped);
  auto st = h.lc.start(h.now, true);
  EXPECT_EQ(st.what, action::connect);
  EXPECT_EQ(st.delay, 0ms);
  EXPECT_EQ(h.lc.state(), upstream_state::connecting);
  EXPECT_EQ(h.lc.attempt(), 0u);
  EXPECT_EQ(h.lc.last_error(), "");
}

TEST(Lifecycle, StartWhileConnectingOrReadyDoesNotConnectTwice) {
  harness h;
  ASSERT_EQ(h.lc.start(h.now, true).what, action::connect);
  EXPECT_EQ(h.lc.start(h.now, true).what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::connecting);
  h.lc.on_ready(h.now);
  EXPECT_EQ(h.lc.start(h.now, true).what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::ready);
}

TEST(Lifecycle, DisabledStartDoesNothing) {
  harness h;
  auto st = h.lc.start(h.now, false);
  EXPECT_EQ(st.what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::disabled);
  // Nothing else wakes a disabled upstream, restart included.
  EXPECT_EQ(h.lc.on_timer(h.now).what, action::none);
  EXPECT_EQ(h.lc.on_ready(h.now).what, action::none);
  EXPECT_EQ(h.lc.on_closed(h.now, "x").what, action::none);
  EXPECT_EQ(h.lc.restart(h.now).what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::disabled);
  EXPECT_EQ(h.lc.last_error(), "");
}

TEST(Lifecycle, ConnectingThenReady) {
  harness h;
  h.lc.start(h.now, true);
  h.now += 1234ms;
  auto st = h.lc.on_ready(h.now);
  EXPECT_EQ(st.what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::ready);
  EXPECT_EQ(h.lc.ready_since(), h.now);
}

TEST(Lifecycle, ReadyOutsideConnectingIsIgnored) {
  harness h;
  EXPECT_EQ(h.lc.on_ready(h.now).what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::stopped);
  h.lc.start(h.now, true);
  h.lc.on_closed(h.now, "x");
  EXPECT_EQ(h.lc.on_ready(h.now).what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::backoff);
}

TEST(Lifecycle, ClosedWaitsThenTimerConnects) {
  harness h;
  h.lc.start(h.now, true);
  h.lc.on_ready(h.now);
  h.now += 1s;
  auto st = h.lc.on_closed(h.now, "eof");
  EXPECT_EQ(st.what, action::wait);
  EXPECT_EQ(st.delay, 500ms);
  EXPECT_EQ(h.lc.state(), upstream_state::backoff);
  EXPECT_EQ(h.lc.attempt(), 1u);
  h.now += st.delay;
  auto t = h.lc.on_timer(h.now);
  EXPECT_EQ(t.what, action::connect);
  EXPECT_EQ(h.lc.state(), upstream_state::connecting);
  // A second timer (stale) does not connect again.
  EXPECT_EQ(h.lc.on_timer(h.now).what, action::none);
}

TEST(Lifecycle, DefaultScheduleDoublesUpToCap) {
  harness h;
  EXPECT_THAT(failure_delays(h, 10),
              ElementsAre(500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000));
  EXPECT_EQ(h.lc.attempt(), 10u);
}

TEST(Lifecycle, BaseDelayMatchesSchedule) {
  harness h;
  EXPECT_EQ(h.lc.base_delay(0), 0ms);
  EXPECT_EQ(h.lc.base_delay(1), 500ms);
  EXPECT_EQ(h.lc.base_delay(2), 1000ms);
  EXPECT_EQ(h.lc.base_delay(6), 16000ms);
  EXPECT_EQ(h.lc.base_delay(7), 30000ms);
  EXPECT_EQ(h.lc.base_delay(8), 30000ms);
  EXPECT_EQ(h.lc.base_delay(std::numeric_limits<unsigned>::max()), 30000ms);
}

TEST(Lifecycle, CustomMaxCapsSchedule) {
  backoff_policy p;
  p.max = 5000ms;
  harness h(p);
  EXPECT_THAT(failure_delays(h, 7), ElementsAre(500, 1000, 2000, 4000, 5000, 5000, 5000));
}

TEST(Lifecycle, CustomInitialAndMax) {
  backoff_policy p;
  p.initial = 100ms;
  p.max = 1000ms;
  harness h(p);
  EXPECT_THAT(failure_delays(h, 6), ElementsAre(100, 200, 400, 800, 1000, 1000));
}

TEST(Lifecycle, MaxBelowInitialCapsFirstDelay) {
  backoff_policy p;
  p.initial = 500ms;
  p.max = 300ms;
  harness h(p);
  EXPECT_THAT(failure_delays(h, 3), ElementsAre(300, 300, 300));
}

TEST(Lifecycle, JitterExtremes) {
  // 0.0 → −20 %, 0.999 → just under +20 %.
  harness lo;
  lo.r = 0.0;
  EXPECT_THAT(failure_delays(lo, 8), ElementsAre(400, 800, 1600, 3200, 6400, 12800, 24000, 24000));
  // 0.999 gives a factor of 1.1996, rounded to the nearest ms; the jittered cap may exceed `max`.
  harness hi;
  hi.r = 0.999;
  EXPECT_THAT(failure_delays(hi, 8), ElementsAre(600, 1200, 2399, 4798, 9597, 19194, 35988, 35988));
}

TEST(Lifecycle, JitterStaysWithinTwentyPercent) {
  for (int k = 0; k < 100; ++k) {
    harness h;
    h.r = k / 100.0;
    h.lc.start(h.now, true);
    for (unsigned n = 1; n <= 9; ++n) {
      auto st = h.fail();
      const auto base = h.lc.base_delay(n).count();
      EXPECT_GE(st.delay.count() * 5, base * 4) << "r=" << h.r << " attempt " << n;
      EXPECT_LE(st.delay.count() * 5, base * 6) << "r=" << h.r << " attempt " << n;
      h.after(st);
    }
  }
}

TEST(Lifecycle, ZeroJitterPolicyIgnoresRandom) {
  backoff_policy p;
  p.jitter = 0;
  harness h(p);
  h.r = 0.0;
  EXPECT_THAT(failure_delays(h, 3), ElementsAre(500, 1000, 2000));
}

TEST(Lifecycle, NeverGivesUp) {
  harness h;
  h.lc.start(h.now, true);
  for (unsigned n = 1; n <= 1000; ++n) {
    auto st = h.fail();
    ASSERT_EQ(st.what, action::wait) << "attempt " << n;
    if (n >= 7) {
      ASSERT_EQ(st.delay, 30000ms) << "attempt " << n;
    }
    ASSERT_EQ(h.after(st).what, action::connect) << "attempt " << n;
  }
  EXPECT_EQ(h.lc.attempt(), 1000u);
  EXPECT_EQ(h.lc.state(), upstream_state::connecting);
}

TEST(Lifecycle, NeverGivesUpWithLargeCapAtMaxJitter) {
  // A cap of a day, reached after ~18 doublings; 1000 failures neither overflow nor go negative.
  backoff_policy p;
  p.max = 24h;
  harness h(p);
  h.r = 0.999;
  h.lc.start(h.now, true);
  lifecycle::step st;
  for (unsigned n = 1; n <= 1000; ++n) {
    st = h.fail();
    ASSERT_EQ(st.what, action::wait);
    ASSERT_GT(st.delay, 0ms);
    ASSERT_LE(st.delay, std::chrono::milliseconds(24h) * 6 / 5);
    h.after(st);
  }
  EXPECT_GE(st.delay, std::chrono::milliseconds(24h));
}

TEST(Lifecycle, StableConnectionResetsNextDelay) {
  harness h;
  failure_delays(h, 4);  // 500, 1000, 2000, 4000
  ASSERT_EQ(h.lc.attempt(), 4u);
  h.lc.on_ready(h.now);
  h.now += 60s;  // exactly stable_after counts as stable
  auto st = h.lc.on_closed(h.now, "eof");
  EXPECT_EQ(st.what, action::wait);
  EXPECT_EQ(st.delay, 500ms);
  EXPECT_EQ(h.lc.attempt(), 1u);
}

TEST(Lifecycle, ShortConnectionDoesNotReset) {
  harness h;
  failure_delays(h, 4);  // 500, 1000, 2000, 4000
  h.lc.on_ready(h.now);
  h.now += 59999ms;
  auto st = h.lc.on_closed(h.now, "eof");
  EXPECT_EQ(st.delay, 8000ms);
  EXPECT_EQ(h.lc.attempt(), 5u);
}

TEST(Lifecycle, StabilityIsMeasuredFromTheLatestReady) {
  harness h;
  failure_delays(h, 2);
  h.lc.on_ready(h.now);
  h.now += 10s;
  EXPECT_EQ(h.lc.on_closed(h.now, "eof").delay, 2000ms);  // short: no reset
  h.now += 2000ms;
  h.lc.on_timer(h.now);
  h.now += 100s;  // a slow handshake does not count as ready time
  h.lc.on_ready(h.now);
  h.now += 30s;
  EXPECT_EQ(h.lc.on_closed(h.now, "eof").delay, 4000ms);
}

TEST(Lifecycle, CustomStableAfter) {
  backoff_policy p;
  p.stable_after = 5s;
  harness h(p);
  failure_delays(h, 3);
  h.lc.on_ready(h.now);
  h.now += 5s;
  EXPECT_EQ(h.lc.on_closed(h.now, "eof").delay, 500ms);
}

TEST(Lifecycle, RestartResetsAttemptsAndConnects) {
  harness h;
  failure_delays(h, 5);
  auto st = h.fail();  // now in backoff, 16 s timer armed
  ASSERT_EQ(st.delay, 16000ms);
  auto r = h.lc.restart(h.now);
  EXPECT_EQ(r.what, action::connect);
  EXPECT_EQ(h.lc.state(), upstream_state::connecting);
  EXPECT_EQ(h.lc.attempt(), 0u);
  // The timer armed before the restart fires into a connecting upstream: no second connect.
  EXPECT_EQ(h.lc.on_timer(h.now + st.delay).what, action::none);
  EXPECT_EQ(h.lc.on_closed(h.now, "again").delay, 500ms);
}

TEST(Lifecycle, RestartFromReady) {
  harness h;
  failure_delays(h, 3);
  h.lc.on_ready(h.now);
  EXPECT_EQ(h.lc.restart(h.now).what, action::connect);
  EXPECT_EQ(h.lc.state(), upstream_state::connecting);
  EXPECT_EQ(h.lc.attempt(), 0u);
}

TEST(Lifecycle, StopIgnoresLaterEvents) {
  harness h;
  h.lc.start(h.now, true);
  auto st = h.fail();
  ASSERT_EQ(h.lc.state(), upstream_state::backoff);
  EXPECT_EQ(h.lc.stop().what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::stopped);
  h.now += st.delay;
  EXPECT_EQ(h.lc.on_timer(h.now).what, action::none);
  EXPECT_EQ(h.lc.on_closed(h.now, "late").what, action::none);
  EXPECT_EQ(h.lc.on_ready(h.now).what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::stopped);
  EXPECT_EQ(h.lc.last_error(), "boom");  // the late close did not overwrite it
}

TEST(Lifecycle, StopWhileReadyIgnoresTheClose) {
  harness h;
  h.lc.start(h.now, true);
  h.lc.on_ready(h.now);
  h.lc.stop();
  EXPECT_EQ(h.lc.on_closed(h.now, "eof").what, action::none);
  EXPECT_EQ(h.lc.state(), upstream_state::stopped);
  EXPECT_EQ(h.lc.attempt(), 0u);
}

TEST(Lifecycle, LastErrorKeptAndClearedOnReady) {
  harness h;
  h.lc.start(h.now, true);
  auto st = h.fail("spawn failed: ENOENT");
  EXPECT_EQ(h.lc.last_error(), "spawn failed: ENOENT");
  h.after(st);
  EXPECT_EQ(h.lc.last_error(), "spawn failed: ENOENT");  // still shown while reconnecting
  st = h.fail("initialize timed out");
  EXPECT_EQ(h.lc.last_error(), "initialize timed out");
  h.after(st);
  h.lc.on_ready(h.now);
  EXPECT_EQ(h.lc.last_error(), "");
}

TEST(Lifecycle, NextTryIsNowPlusDelay) {
  for (double r : {0.0, 0.25, 0.5, 0.999}) {
    harness h;
    h.r = r;
    h.lc.start(h.now, true);
    for (int n = 0; n < 9; ++n) {
      h.now += 37ms;
      auto st = h.fail();
      EXPECT_EQ(h.lc.next_try(), h.now + st.delay) << "r=" << r << " n=" << n;
      h.after(st);
    }
  }
}

TEST(Lifecycle, ServerFailingAtOnceForTenSeconds) {
  // Every attempt fails immediately; count attempts started within 10 s at zero jitter.
  harness h;
  const auto end = t0 + 10s;
  std::vector<std::int64_t> attempt_ms;
  auto st = h.lc.start(h.now, true);
  while (h.now < end) {
    if (st.what == action::connect) {
      attempt_ms.push_back((h.now - t0) / 1ms);
      st = h.lc.on_closed(h.now, "exited with status 1");
    } else {
      ASSERT_EQ(st.what, action::wait);
      h.now += st.delay;
      if (h.now >= end) break;
      st = h.lc.on_timer(h.now);
    }
  }
  EXPECT_THAT(attempt_ms, ElementsAreArray({0, 500, 1500, 3500, 7500}));
  EXPECT_EQ(h.lc.state(), upstream_state::backoff);
  EXPECT_EQ(h.lc.next_try(), t0 + 15500ms);
}

}  // namespace
}  // namespace mcpmux
