#include "core/subscriptions.hpp"

namespace mcpmux {

subscription_table::next subscription_table::subscribe(const key& k, std::uint64_t session,
                                                       done_fn done) {
  if (auto it = subscribed_.find(k); it != subscribed_.end() && !it->second.empty()) {
    it->second.insert(session);
    done(0, {});
    return next::done;
  }
  auto& waiting = asking_[k];
  waiting.emplace_back(session, std::move(done));
  return waiting.size() == 1 ? next::ask_server : next::wait;
}

void subscription_table::answered(const key& k, int code, const std::string& message,
                                  const std::function<bool(std::uint64_t)>& alive) {
  auto node = asking_.extract(k);
  if (node.empty()) return;
  for (auto& [session, done] : node.mapped()) {
    if (code == 0 && alive(session)) subscribed_[k].insert(session);
    done(code, message);
  }
}

bool subscription_table::unsubscribe(const key& k, std::uint64_t session) {
  auto it = subscribed_.find(k);
  if (it == subscribed_.end() || !it->second.erase(session) || !it->second.empty()) return false;
  subscribed_.erase(it);
  return true;
}

std::vector<subscription_table::key> subscription_table::of_session(std::uint64_t session) const {
  std::vector<key> out;
  for (const auto& [k, ids] : subscribed_)
    if (ids.count(session)) out.push_back(k);
  return out;
}

std::vector<std::uint64_t> subscription_table::subscribers(const key& k) const {
  auto it = subscribed_.find(k);
  if (it == subscribed_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::vector<std::string> subscription_table::uris_of(const std::string& server) const {
  std::vector<std::string> out;
  for (const auto& [k, ids] : subscribed_)
    if (k.first == server && !ids.empty()) out.push_back(k.second);
  return out;
}

}  // namespace mcpmux
