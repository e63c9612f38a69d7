#include "core/call_policy.hpp"

#include <algorithm>

namespace mcpmux {

std::optional<call_policy::ms> call_policy::send_timeout(clock::time_point started,
                                                         clock::time_point now) const {
  if (timeout_.count() == 0) return std::nullopt;
  const auto spent = std::chrono::duration_cast<ms>(now - started);
  return std::max(ms(1), timeout_ - spent);
}

std::optional<call_policy::ms> call_policy::on_progress(clock::time_point started,
                                                        clock::time_point now) const {
  if (!extend_ || timeout_.count() == 0) return std::nullopt;
  if (ceiling_.count() == 0) return timeout_;
  const auto left = std::chrono::duration_cast<ms>(started + ceiling_ - now);
  return std::max(ms(1), std::min(timeout_, left));
}

}  // namespace mcpmux
