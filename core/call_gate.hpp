// The limits a call passes before it reaches its server: its profile's, then its server's
// `max_calls_per_minute` and `max_concurrent_calls` (core/call_limiter.hpp holds the rules; this
// is their Asio side: a timer per limit, the waiting calls, the places in flight given back).
// A call that may not start waits its turn; one that waits past its timeout ends with an error
// naming the limit and the key that sets it. Nothing is dropped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class call;

class call_gate {
 public:
  /// One set of limits: a server's or a profile's (0 = no such limit).
  struct limits {
    std::uint32_t per_minute = 0;
    std::uint32_t concurrent = 0;
    bool any() const { return per_minute || concurrent; }
    bool operator==(const limits&) const = default;
  };
  /// Where a call goes and what limits it.
  struct route {
    std::string server;
    limits server_limits;
    std::string profile;  ///< "" = none
    limits profile_limits;
    std::chrono::milliseconds timeout{0};  ///< the longest it may wait; 0 = no bound
  };
  /// Starts the call (its upstream's start_call).
  using start_fn = std::function<void(std::shared_ptr<call>)>;
  /// Told each limit that held a call back (`max_calls_per_minute`,
  /// `profile.max_concurrent_calls`…).
  using count_fn = std::function<void(std::string_view limit)>;

  explicit call_gate(boost::asio::io_context& io);
  ~call_gate();
  call_gate(const call_gate&) = delete;
  call_gate& operator=(const call_gate&) = delete;

  /// Passes `c` through the limits of `r` (at once when none holds it), then `start(c)`. The
  /// call holds its places in flight until it ends (call::hold).
  void admit(std::shared_ptr<call> c, const route& r, start_fn start, count_fn count);

  /// Calls waiting for a turn, over all limits (status, tests).
  std::size_t waiting() const;

 private:
  struct stage;
  /// The stage of `key` with these limits: a changed limit (a reload) gets a new one, the old
  /// one lives on while calls hold it.
  std::shared_ptr<stage> stage_for(const std::string& key, std::string scope, limits l);
  void pass(std::shared_ptr<call> c, std::shared_ptr<stage> s, std::function<void()> next,
            std::chrono::milliseconds timeout, const count_fn& count);

  boost::asio::io_context& io_;
  std::map<std::string, std::shared_ptr<stage>> stages_;
  /// Stages a reload replaced while calls waited in them: kept until they are empty.
  std::vector<std::shared_ptr<stage>> retired_;
};

}  // namespace mcpmux
