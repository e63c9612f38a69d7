// The loop driver's write batch: what fd transports are sent while one read is being fed waits,
// and goes out in one write per destination when that read is done.
#pragma once

#include <memory>
#include <vector>

namespace mcpmux {

/// Created by whoever runs the loop (the daemon) and handed to the fd transports it makes; one
/// per loop thread. A transport that reads holds the batch while it feeds what it read to its
/// owner; a transport sent a message meanwhile joins the batch instead of writing, and writes
/// when the batch is flushed. Without it, the first message a read causes went out alone and
/// the rest after it.
class write_batch {
 public:
  /// A transport that can hold its writes for a batch.
  class member {
   public:
    virtual ~member() = default;
    /// Writes what was queued while the batch was held.
    virtual void flush_batched() = 0;
  };

  /// A read begins being fed (reads fed inside it nest: only the outermost flushes).
  void hold() { ++depth_; }
  /// That read is fed whole: at the outermost, every member writes its batch.
  void release() {
    if (--depth_ > 0) return;
    last_line_ = false;
    flush();
  }
  bool held() const { return depth_ > 0; }
  /// Called while the outermost read's last complete line is being handled: its first message
  /// takes the batch out (see fd_transport::send_spliced), so that what the owner does after
  /// sending (the audit, the histograms) overlaps the peer's reading instead of delaying it.
  void at_last_line() {
    if (depth_ == 1) last_line_ = true;
  }
  bool last_line() const { return last_line_; }

  /// Adds `m`, which writes at the next flush (the caller joins once per batch).
  void join(std::shared_ptr<member> m) { members_.push_back(std::move(m)); }
  /// Every member writes now. A flush adds no member (nothing holds the batch while it runs,
  /// so what a member's write causes is written at once).
  void flush();

 private:
  int depth_ = 0;
  bool last_line_ = false;
  std::vector<std::shared_ptr<member>> members_;
  std::vector<std::shared_ptr<member>> spare_;  ///< the last flush's list, emptied, for the next
};

}  // namespace mcpmux
