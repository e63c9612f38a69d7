// The audit buffer: audited events kept in memory on the loop and handed to the audit writer's
// thread in batches (the first entry arms a short timer; mcpmux/history and stop flush at once,
// and so does a full buffer of a record's rows or more, rather than grow).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/log.hpp"
#include "core/state_store.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

struct daemon_config;

class audit_buffer {
 public:
  /// Nothing is kept without a `store` (null), or while the configuration has `audit` off.
  audit_buffer(boost::asio::io_context& io, state_store* store, const daemon_config& d);
  /// Flushes and waits for the writer: nothing handed over is lost.
  ~audit_buffer();
  audit_buffer(const audit_buffer&) = delete;
  audit_buffer& operator=(const audit_buffer&) = delete;

  /// The audit setting and retention (at start and after a reload).
  void configure(const daemon_config& d);
  bool auditing() const { return store_ && enabled_; }
  /// Records an audited event: kept until the next batch. Nothing when the audit log is off.
  void audit(audit_entry&& e);
  /// The same, written in place: `f` goes into the next batch's next row (a slot of a batch
  /// written before, its strings' storage reused).
  void audit(const audit_fields& f);
  /// Hands what is buffered to the writer now, and logs what the writer could not keep.
  void flush();
  /// Flushes and waits until everything handed over is in the store (stop).
  void drain();
  /// The audit log's entries, all buffered ones included; empty when it is off.
  std::vector<audit_entry> history(const audit_query& q);
  /// Entries waiting for the next batch.
  std::size_t buffered() const { return used_; }

 private:
  /// The next row, to be set in whole; null when the audit log is off.
  audit_entry* next_row();

  state_store* store_;
  bool enabled_ = false;
  audit_retention retention_;
  logger log_{"manager"};  ///< (the name its lines had before it was a unit)
  /// The next batch: its first used_ rows; those after them are slots of an older batch.
  std::vector<audit_entry> buffer_;
  std::size_t used_ = 0;
  std::uint64_t flushes_ = 0;
  struct batching;  ///< the timer and the writer (Asio and threads stay out of this header)
  std::shared_ptr<batching> batching_;
};

}  // namespace mcpmux
