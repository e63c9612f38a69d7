// Request correlation table.
#include "protocol/pending_table.hpp"

namespace mcpmux {

std::int64_t pending_table::add(std::string method, steady_clock::time_point now,
                                std::optional<steady_clock::duration> timeout,
                                response_handler handler, bool raw_reply, request_tag* tag) {
  const auto id = next_id_++;
  const auto deadline = timeout ? now + *timeout : steady_clock::time_point::max();
  entries_.emplace(id, entry{std::move(method), now, deadline, std::move(handler), raw_reply, tag});
  if (timeout) deadlines_.emplace(deadline, id);
  return id;
}

std::optional<pending_table::entry> pending_table::take(std::int64_t id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  entry e = std::move(it->second);
  entries_.erase(it);
  if (e.deadline != steady_clock::time_point::max()) deadlines_.erase({e.deadline, id});
  return e;
}

bool pending_table::set_deadline(std::int64_t id, steady_clock::time_point deadline) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  if (it->second.deadline != steady_clock::time_point::max())
    deadlines_.erase({it->second.deadline, id});
  it->second.deadline = deadline;
  if (deadline != steady_clock::time_point::max()) deadlines_.emplace(deadline, id);
  return true;
}

std::vector<std::pair<std::int64_t, pending_table::entry>> pending_table::take_expired(
    steady_clock::time_point now) {
  std::vector<std::pair<std::int64_t, entry>> out;
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    const auto id = deadlines_.begin()->second;
    if (auto e = take(id)) out.emplace_back(id, std::move(*e));
  }
  return out;
}

std::vector<std::pair<std::int64_t, pending_table::entry>> pending_table::take_all() {
  std::vector<std::pair<std::int64_t, entry>> out;
  out.reserve(entries_.size());
  for (auto& [id, e] : entries_) out.emplace_back(id, std::move(e));
  entries_.clear();
  deadlines_.clear();
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

std::optional<steady_clock::time_point> pending_table::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

}  // namespace mcpmux
