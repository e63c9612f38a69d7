// Core's timer: an Asio timer on core's steady clock (base/clock.hpp), so that tests
// that advance the clock see core's deadlines pass.
#pragma once

#include <boost/asio/basic_waitable_timer.hpp>

#include "base/clock.hpp"

namespace mcpmux {

using steady_timer = boost::asio::basic_waitable_timer<steady_clock>;

}  // namespace mcpmux
