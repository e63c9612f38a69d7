#include "core/mrtr.hpp"

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <vector>

#include "base/random.hpp"
#include "core/call.hpp"

namespace mcpmux {
namespace {

constexpr std::string_view state_prefix = "mcpmux-mrtr.";

std::string random_state() {
  auto id = random_hex(16);
  if (!id) throw std::system_error(errno, std::generic_category(), "getrandom");
  return std::string(state_prefix) + *id;
}

}  // namespace

std::string mrtr_registry::park(std::shared_ptr<call> c, clock::time_point now) {
  sweep(now);
  if (parked_.size() >= max_parked) {  // bounded: the call parked longest gives way
    auto oldest = std::min_element(
        parked_.begin(), parked_.end(),
        [](const auto& a, const auto& b) { return a.second.expires < b.second.expires; });
    auto gone = std::move(oldest->second.held);
    parked_.erase(oldest);
    gone->cancel("too many calls waiting for their client's input");
  }
  auto state = random_state();
  parked_[state] = entry{std::move(c), now + ttl_};
  return state;
}

std::shared_ptr<call> mrtr_registry::take(std::string_view state, clock::time_point now) {
  sweep(now);
  auto it = parked_.find(std::string(state));
  if (it == parked_.end()) return nullptr;
  auto c = std::move(it->second.held);
  parked_.erase(it);
  return c;
}

bool mrtr_registry::ours(std::string_view state) {
  return state.substr(0, state_prefix.size()) == state_prefix;
}

void mrtr_registry::sweep(clock::time_point now) {
  std::vector<std::shared_ptr<call>> expired;
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (it->second.expires <= now) {
      expired.push_back(std::move(it->second.held));
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& c : expired) c->cancel("the client did not come back with the input it was asked");
}

void mrtr_registry::clear() {
  auto all = std::exchange(parked_, {});
  for (auto& [state, e] : all) e.held->cancel("daemon stopping");
}

}  // namespace mcpmux
