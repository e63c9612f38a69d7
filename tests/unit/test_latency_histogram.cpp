// Unit tests of core/latency_histogram: bucket boundaries (le is inclusive), +Inf, sum, count.
#include "core/latency_histogram.hpp"

#include <gtest/gtest.h>

namespace mcpmux {
namespace {

TEST(LatencyHistogram, AValueLandsInTheFirstBucketWhoseBoundIsNotBelowIt) {
  latency_histogram h;
  h.record(0);           // 100 µs bucket
  h.record(100);         // le is inclusive: still the 100 µs bucket
  h.record(101);         // 250 µs
  h.record(30'000);      // 50 ms
  h.record(90'000'000);  // beyond 60 s: +Inf
  EXPECT_EQ(h.bucket(0), 2u);
  EXPECT_EQ(h.bucket(1), 1u);
  EXPECT_EQ(h.bucket(8), 1u);
  EXPECT_EQ(latency_histogram::bounds_us[8], 50'000u);
  EXPECT_EQ(h.bucket(latency_histogram::bounds_us.size()), 1u);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.sum_us(), 0u + 100 + 101 + 30'000 + 90'000'000);
  std::uint64_t total = 0;
  for (std::size_t i = 0; i <= latency_histogram::bounds_us.size(); ++i) total += h.bucket(i);
  EXPECT_EQ(total, h.count());
}

}  // namespace
}  // namespace mcpmux
