// A table of what is in flight at once (a session's calls, a connection's requests): a vector
// scanned in order while it holds at most `flat_limit` entries, hashed beyond that. These tables
// mostly hold one entry or a few: comparing a few keys costs less than hashing one, and a removed
// entry's slot (its key's buffer, its value's storage) is kept for the next, so a table that
// holds one entry at a time allocates nothing per entry. A removed value is moved out of its
// slot (and what is left there is a moved-from value: nothing an entry held outlives its
// removal for the values kept here, strings, std::function and shared_ptr).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace mcpmux {

template <class Key, class Value>
class flat_table {
 public:
  using entry = std::pair<Key, Value>;
  /// At most this many entries are found by a scan; more are hashed (and the hash is dropped
  /// when they fall back to half as many).
  static constexpr std::size_t flat_limit = 16;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool contains(const Key& key) const { return position(key) != npos; }

  Value* find(const Key& key) {
    const auto i = position(key);
    return i == npos ? nullptr : &slots_[i].second;
  }
  const Value* find(const Key& key) const {
    const auto i = position(key);
    return i == npos ? nullptr : &slots_[i].second;
  }

  /// The entries, in no particular order.
  std::span<entry> entries() { return {slots_.data(), size_}; }
  std::span<const entry> entries() const { return {slots_.data(), size_}; }

  /// Sets `key`'s value, adding the entry when the key is new; returns the value in the table.
  Value& put(const Key& key, Value value) {
    if (const auto i = position(key); i != npos) return slots_[i].second = std::move(value);
    return add_new(key) = std::move(value);
  }

  /// Adds an entry for `key`, which its caller knows is not in the table (a fresh id), and
  /// returns its value to be set whole, in place: a kept slot's value, moved from (for the
  /// values kept here, empty), or a new one.
  Value& add_new(const Key& key) {
    if (size_ == slots_.size())
      slots_.emplace_back(key, Value());
    else
      slots_[size_].first = key;  // (a kept slot: its key's buffer is reused)
    const auto i = size_++;
    if (!index_.empty())
      index_.emplace(key, i);
    else if (size_ > flat_limit)
      for (std::size_t j = 0; j < size_; ++j) index_.emplace(slots_[j].first, j);
    return slots_[i].second;
  }

  /// Removes `key`'s entry and returns its value; nothing when the key is not in the table.
  std::optional<Value> take(const Key& key) {
    const auto i = position(key);
    if (i == npos) return std::nullopt;
    std::optional<Value> value(std::move(slots_[i].second));
    remove_at(i);
    return value;
  }

  /// Removes every entry and returns them.
  std::vector<entry> take_all() {
    std::vector<entry> out;
    out.reserve(size_);
    for (std::size_t i = 0; i < size_; ++i) out.emplace_back(std::move(slots_[i]));
    size_ = 0;
    index_ = {};
    return out;
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::size_t position(const Key& key) const {
    if (!index_.empty()) {
      const auto it = index_.find(key);
      return it == index_.end() ? npos : it->second;
    }
    for (std::size_t i = 0; i < size_; ++i)
      if (same(slots_[i].first, key)) return i;
    return npos;
  }

  // (Text keys of one length, such as ids 10 to 99 in flight together, are mostly told apart by
  // their last character, an id's fastest changing one, without a call to memcmp each.)
  static bool same(const Key& a, const Key& b) {
    if constexpr (std::is_same_v<Key, std::string>)
      return a.size() == b.size() && (a.empty() || (a.back() == b.back() && a == b));
    else
      return a == b;
  }

  // The last entry takes the removed one's place, and the removed slot becomes the first spare.
  void remove_at(std::size_t i) {
    const auto last = size_ - 1;
    if (!index_.empty()) {
      index_.erase(slots_[i].first);
      if (i != last) index_[slots_[last].first] = i;
    }
    if (i != last) std::swap(slots_[i], slots_[last]);
    size_ = last;
    if (!index_.empty() && size_ <= flat_limit / 2) index_ = {};
  }

  std::vector<entry> slots_;  ///< the first size_ are entries, the rest kept slots
  std::size_t size_ = 0;
  std::unordered_map<Key, std::size_t> index_;  ///< key → slot, while there are many
};

}  // namespace mcpmux
