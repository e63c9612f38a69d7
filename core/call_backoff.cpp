// The calls' error back-off: failures counted, pauses doubled, one probe after each.
#include "core/call_backoff.hpp"

#include <algorithm>

namespace mcpmux {

call_backoff::verdict call_backoff::admit(clock::time_point now) {
  if (!until_) return {};
  if (now < *until_) return {.go = false, .until = *until_};
  if (probe_since_ && now < *probe_since_ + pause_)
    return {.go = false, .until = *probe_since_ + pause_};
  probe_since_ = now;
  return {.go = true, .probe = true};
}

void call_backoff::succeeded() {
  failures_ = 0;
  pause_ = std::chrono::milliseconds(0);
  until_.reset();
  probe_since_.reset();
}

void call_backoff::failed(clock::time_point now) {
  ++failures_;
  // A failed probe pauses again, longer; before the first pause, only enough failures do.
  if (!until_ && failures_ < policy_.failures) return;
  pause_ = pause_.count() == 0 ? policy_.first_pause : std::min(pause_ * 2, policy_.max_pause);
  until_ = now + pause_;
  probe_since_.reset();
}

}  // namespace mcpmux
