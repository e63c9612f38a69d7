// Unit tests of base/flat_table: the table against a std::map doing the same, below and above
// the size where it starts hashing, and what a removed entry leaves behind.
#include "base/flat_table.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace mcpmux {
namespace {

using table = flat_table<std::string, int>;

// The table's entries, sorted, to compare with a map's.
std::map<std::string, int> contents(const table& t) {
  std::map<std::string, int> out;
  for (const auto& [k, v] : t.entries()) EXPECT_TRUE(out.emplace(k, v).second) << k;
  return out;
}

TEST(FlatTable, PutFindTake) {
  table t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.find("1"), nullptr);
  EXPECT_EQ(t.put("1", 10), 10);
  t.put("\"a\"", 20);
  ASSERT_NE(t.find("1"), nullptr);
  EXPECT_EQ(*t.find("1"), 10);
  EXPECT_TRUE(t.contains("\"a\""));
  EXPECT_FALSE(t.contains("a"));
  // A key put again keeps one entry, with the newer value.
  t.put("1", 11);
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(*t.find("1"), 11);
  EXPECT_EQ(t.take("1"), 11);
  EXPECT_EQ(t.take("1"), std::nullopt);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(*t.find("\"a\""), 20);
}

// Random puts and takes of up to ~100 keys, so the table crosses the size where it hashes, and
// back, many times: after each step it holds what a std::map holds.
TEST(FlatTable, AgreesWithAMapAcrossTheHashedSize) {
  std::mt19937 rng(44);
  table t;
  std::map<std::string, int> model;
  bool hashed_once = false;
  for (int step = 0; step < 20000; ++step) {
    // Phases of growth and of shrinking.
    const bool grow = (step / 500) % 2 == 0;
    // (Keys of one length that end alike, and that do not: both ways of telling keys apart.)
    const auto n = rng() % 100;
    const auto key =
        n % 3 ? std::to_string(n) : std::to_string(n % 10) + "x" + std::to_string(n / 10 % 2);
    if (rng() % 4 < (grow ? 3u : 1u)) {
      t.put(key, step);
      model[key] = step;
    } else {
      const auto it = model.find(key);
      const auto taken = t.take(key);
      ASSERT_EQ(taken.has_value(), it != model.end()) << key;
      if (taken) {
        EXPECT_EQ(*taken, it->second);
        model.erase(it);
      }
    }
    ASSERT_EQ(t.size(), model.size());
    hashed_once |= t.size() > table::flat_limit;
    if (step % 97 == 0) ASSERT_EQ(contents(t), model) << "step " << step;
    for (const auto& probe : {key, std::string("x")}) {
      const auto* v = t.find(probe);
      const auto it = model.find(probe);
      ASSERT_EQ(v != nullptr, it != model.end()) << probe;
      if (v) EXPECT_EQ(*v, it->second);
    }
  }
  EXPECT_TRUE(hashed_once);
}

// Ids handed out in order, answered out of order, up to ~300 in flight (a connection's
// requests): the index grows more than once, and entries that share a run of buckets across its
// end are removed and found again.
TEST(FlatTable, IdsInFlightAgreeWithAMap) {
  std::mt19937 rng(7);
  flat_table<std::int64_t, std::int64_t> t;
  std::map<std::int64_t, std::int64_t> model;
  std::int64_t next_id = 1;
  for (int step = 0; step < 30000; ++step) {
    const auto target = (step / 3000) % 2 == 0 ? 300u : 5u;
    if (model.size() < target && rng() % 3 != 0) {
      t.add_new(next_id) = next_id * 7;
      model[next_id] = next_id * 7;
      ++next_id;
    } else if (!model.empty()) {
      auto it = model.begin();
      std::advance(it, rng() % model.size());
      ASSERT_EQ(t.take(it->first), it->second);
      model.erase(it);
    }
    ASSERT_EQ(t.size(), model.size());
    const auto probe = next_id > 1 ? 1 + static_cast<std::int64_t>(rng() % next_id) : 1;
    const auto* v = t.find(probe);
    ASSERT_EQ(v != nullptr, model.count(probe) == 1) << probe;
    if (v) {
      EXPECT_EQ(*v, probe * 7);
    }
  }
}

TEST(FlatTable, TakeAllEmptiesIt) {
  flat_table<std::int64_t, std::string> t;
  for (std::int64_t i = 1; i <= 40; ++i) t.put(i, std::to_string(i));
  auto all = t.take_all();
  EXPECT_EQ(all.size(), 40u);
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.find(7), nullptr);
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all.front(), (std::pair<std::int64_t, std::string>(1, "1")));
  EXPECT_EQ(all.back(), (std::pair<std::int64_t, std::string>(40, "40")));
  // And it fills again, from its kept slots.
  t.put(3, "three");
  EXPECT_EQ(*t.find(3), "three");
}

// A removed value is moved out: what it held is not kept alive by the slot kept for the next
// entry, and the next entry in that slot starts from its own value.
TEST(FlatTable, ARemovedValueIsNotKept) {
  flat_table<std::int64_t, std::shared_ptr<int>> t;
  auto held = std::make_shared<int>(5);
  std::weak_ptr<int> watch = held;
  t.put(1, std::move(held));
  t.put(2, std::make_shared<int>(6));
  auto taken = t.take(1);
  ASSERT_TRUE(taken.has_value());
  taken.reset();
  EXPECT_TRUE(watch.expired());
  t.put(3, nullptr);
  EXPECT_EQ(*t.find(3), nullptr);
  EXPECT_EQ(**t.find(2), 6);
  // A fresh key's entry made in a kept slot starts empty.
  ASSERT_TRUE(t.take(2).has_value());
  auto& fresh = t.add_new(4);
  EXPECT_EQ(fresh, nullptr);
  fresh = std::make_shared<int>(8);
  EXPECT_EQ(**t.find(4), 8);
  EXPECT_EQ(t.size(), 2u);
}

}  // namespace
}  // namespace mcpmux
