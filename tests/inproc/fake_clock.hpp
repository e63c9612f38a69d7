// Moving core's clock forward in a test (base/clock.hpp): deadlines computed from now()
// pass at once, and the timers they armed fire on the loop's next poll().
#pragma once

#include <boost/asio/io_context.hpp>

#include "base/clock.hpp"
#include "core/timer.hpp"

namespace mcpmux::test {

/// Advances core's clock by `d`. Asio's epoll reactor waits on a timerfd armed for the real
/// duration of the earliest timer, and looks at its timers only when that fires: a timer due
/// before every other one (the clock's epoch) re-arms the timerfd to fire at once, so the next
/// poll() runs every handler whose deadline the advance passed.
inline void advance(boost::asio::io_context& io, steady_clock::duration d) {
  steady_clock::advance(d);
  auto kick = std::make_shared<steady_timer>(io, steady_clock::time_point{});
  kick->async_wait([kick](const boost::system::error_code&) {});
}

}  // namespace mcpmux::test
