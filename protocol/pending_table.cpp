// Request correlation table.
#include "protocol/pending_table.hpp"

namespace mcpmux {

namespace {
// The heap's order: std::*_heap keep the greatest on top, and with this the earliest.
constexpr auto later = std::greater<>();
}  // namespace

void pending_table::prune_top() const {
  while (!deadlines_.empty() && stale(deadlines_.front())) {
    std::pop_heap(deadlines_.begin(), deadlines_.end(), later);
    deadlines_.pop_back();
  }
}

void pending_table::push_deadline(steady_clock::time_point deadline, std::int64_t id) {
  if (deadlines_.size() >= 2 * entries_.size() + 64) {
    std::erase_if(deadlines_, [this](const deadline_of& d) { return stale(d); });
    std::make_heap(deadlines_.begin(), deadlines_.end(), later);
  }
  deadlines_.emplace_back(deadline, id);
  std::push_heap(deadlines_.begin(), deadlines_.end(), later);
}

std::int64_t pending_table::add(std::string method, steady_clock::time_point now,
                                std::optional<steady_clock::duration> timeout,
                                response_handler handler, bool raw_reply,
                                std::shared_ptr<request_tag> tag) {
  const auto id = next_id_++;
  const auto deadline = timeout ? now + *timeout : steady_clock::time_point::max();
  auto& e = entries_.add_new(id);  // (its ids are never reused; set in place, not moved in)
  e.method = std::move(method);
  e.started = now;
  e.deadline = deadline;
  e.handler = std::move(handler);
  e.raw_reply = raw_reply;
  e.tag = std::move(tag);
  if (timeout) push_deadline(deadline, id);
  return id;
}

std::optional<pending_table::entry> pending_table::take(std::int64_t id) {
  // (Its deadline, if any, goes when it reaches the top.)
  return entries_.take(id);
}

bool pending_table::set_deadline(std::int64_t id, steady_clock::time_point deadline) {
  auto* e = entries_.find(id);
  if (!e) return false;
  e->deadline = deadline;  // (the old one is stale now)
  if (deadline != steady_clock::time_point::max()) push_deadline(deadline, id);
  return true;
}

std::vector<std::pair<std::int64_t, pending_table::entry>> pending_table::take_expired(
    steady_clock::time_point now) {
  std::vector<std::pair<std::int64_t, entry>> out;
  for (prune_top(); !deadlines_.empty() && deadlines_.front().first <= now; prune_top()) {
    const auto id = deadlines_.front().second;
    std::pop_heap(deadlines_.begin(), deadlines_.end(), later);
    deadlines_.pop_back();
    if (auto e = take(id)) out.emplace_back(id, std::move(*e));
  }
  return out;
}

std::vector<std::pair<std::int64_t, pending_table::entry>> pending_table::take_all() {
  auto out = entries_.take_all();
  deadlines_.clear();
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::optional<steady_clock::time_point> pending_table::next_deadline() const {
  prune_top();
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.front().first;
}

}  // namespace mcpmux
