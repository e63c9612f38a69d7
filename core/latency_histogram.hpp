// Call latencies as a fixed-bucket histogram (Prometheus style): counts that sum across time and
// across daemons, unlike percentile gauges. Pure; the upstream records, /metrics prints.
#pragma once

#include <array>
#include <cstdint>

namespace mcpmux {

class latency_histogram {
 public:
  /// Upper bounds of the buckets in microseconds (le): 100 µs … 60 s; one more bucket is +Inf.
  static constexpr std::array<std::uint64_t, 18> bounds_us = {
      100,    250,    500,    1000,    2500,    5000,    10000,    25000,    50000,
      100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000, 60000000};

  void record(std::uint64_t us) {
    std::size_t i = 0;
    while (i < bounds_us.size() && us > bounds_us[i]) ++i;
    ++counts_[i];
    sum_us_ += us;
    ++count_;
  }
  /// Calls in bucket i alone (not cumulative); i == bounds_us.size() is the +Inf bucket.
  std::uint64_t bucket(std::size_t i) const { return counts_[i]; }
  std::uint64_t count() const { return count_; }
  std::uint64_t sum_us() const { return sum_us_; }

 private:
  std::array<std::uint64_t, bounds_us.size() + 1> counts_{};
  std::uint64_t sum_us_ = 0;
  std::uint64_t count_ = 0;
};

}  // namespace mcpmux
