// Core's steady clock and its timers under a test's advance (tests/inproc/fake_clock.hpp).
#include <gtest/gtest.h>

#include <chrono>

#include "tests/inproc/fake_clock.hpp"

namespace mcpmux {
namespace {

using namespace std::chrono_literals;

TEST(SteadyClock, AdvanceMovesNowForward) {
  const auto before = steady_clock::now();
  steady_clock::advance(1h);
  EXPECT_GE(steady_clock::now() - before, 1h);
}

// A timer an hour away fires on the next poll after an advance of an hour, not before.
TEST(SteadyClock, TimerFiresAfterAdvance) {
  boost::asio::io_context io;
  steady_timer far(io, 1h), near(io, 10min);
  int fired = 0;
  far.async_wait([&](const boost::system::error_code& ec) { fired += ec ? 0 : 10; });
  near.async_wait([&](const boost::system::error_code& ec) { fired += ec ? 0 : 1; });
  io.poll();
  EXPECT_EQ(fired, 0);
  test::advance(io, 30min);
  io.poll();
  EXPECT_EQ(fired, 1);
  test::advance(io, 31min);
  io.poll();
  EXPECT_EQ(fired, 11);
}

}  // namespace
}  // namespace mcpmux
