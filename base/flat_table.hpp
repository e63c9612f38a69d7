// A table of what is in flight at once (a session's calls, a connection's requests): a vector
// scanned in order while it holds at most `flat_limit` entries, hashed beyond that. These tables
// mostly hold one entry or a few: comparing a few keys costs less than hashing one, and a removed
// entry's slot (its key's buffer, its value's storage) is kept for the next, so a table that
// holds one entry at a time allocates nothing per entry. The hash is an index of slots with
// open addressing, its storage kept too: a busy table (64 calls in flight) allocates nothing per
// entry either. A removed value is moved out of its slot (and what is left there is a
// moved-from value: nothing an entry held outlives its removal for the values kept here,
// strings, std::function and shared_ptr).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
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
    if (!index_.empty() && 2 * size_ <= index_.size())
      index_[free_bucket(key)] = static_cast<std::uint32_t>(i + 1);
    else if (size_ > flat_limit)
      rehash();
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
    index_.clear();
    return out;
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  std::size_t position(const Key& key) const {
    if (!index_.empty()) {
      const auto b = bucket_of(key);
      return b == npos ? npos : index_[b] - 1;
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
      erase_bucket(bucket_of(slots_[i].first));
      if (i != last) index_[bucket_of(slots_[last].first)] = static_cast<std::uint32_t>(i + 1);
    }
    if (i != last) std::swap(slots_[i], slots_[last]);
    size_ = last;
    if (!index_.empty() && size_ <= flat_limit / 2) index_.clear();  // (its storage kept)
  }

  // The index: linear probing over a power of two of buckets, at least twice the entries, each
  // holding its entry's slot + 1, or 0 when free.
  std::size_t home(const Key& key) const { return std::hash<Key>{}(key) & (index_.size() - 1); }
  std::size_t next(std::size_t b) const { return (b + 1) & (index_.size() - 1); }

  std::size_t bucket_of(const Key& key) const {
    for (auto b = home(key); index_[b] != 0; b = next(b))
      if (same(slots_[index_[b] - 1].first, key)) return b;
    return npos;
  }

  std::size_t free_bucket(const Key& key) const {
    auto b = home(key);
    while (index_[b] != 0) b = next(b);
    return b;
  }

  void rehash() {
    std::size_t buckets = 4 * flat_limit;
    while (buckets < 2 * size_) buckets *= 2;
    index_.assign(buckets, 0);
    for (std::size_t j = 0; j < size_; ++j)
      index_[free_bucket(slots_[j].first)] = static_cast<std::uint32_t>(j + 1);
  }

  // Frees bucket `hole`, moving back the entries after it that could not take their home bucket
  // (so that a lookup's probe still reaches each without a mark left for the removed one).
  void erase_bucket(std::size_t hole) {
    for (auto b = next(hole); index_[b] != 0; b = next(b)) {
      const auto h = home(slots_[index_[b] - 1].first);
      // The entry at b stays when its home lies after the hole, up to b (cyclically).
      const bool stays = hole < b ? (h > hole && h <= b) : (h > hole || h <= b);
      if (stays) continue;
      index_[hole] = index_[b];
      hole = b;
    }
    index_[hole] = 0;
  }

  std::vector<entry> slots_;  ///< the first size_ are entries, the rest kept slots
  std::size_t size_ = 0;
  std::vector<std::uint32_t> index_;  ///< the buckets, while there are many entries; else empty
};

}  // namespace mcpmux
