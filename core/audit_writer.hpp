// Writes the audit log on a thread of its own. An entry costs ~1,200 instructions (its share
// of a batch's one record), so a busy second's batch (thousands of calls) written on the event
// loop would hold every client for milliseconds; here the loop only hands the batch over. The
// thread starts with the first batch (an idle daemon has none) and writes in transactions of at
// most `chunk_rows`, so the loop's own reads and writes of the store (pins, the tool cache,
// history) wait for at most one of them. If the store falls behind by more than `max_backlog`
// entries (a disk that does not keep up), the next hand-over waits for room: calls slow down rather
// than the audit log losing entries or the daemon holding them in memory without end.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/state_store.hpp"

namespace mcpmux {

class audit_writer {
 public:
  static constexpr std::size_t chunk_rows = 256;
  /// A kept slot's argument text keeps at most this much storage.
  static constexpr std::size_t max_kept_detail = 256;

  /// `before_job` (for tests) runs on the writer's thread before each job.
  explicit audit_writer(state_store& store, std::size_t max_backlog = 50000,
                        std::function<void()> before_job = {})
      : store_(store), max_backlog_(max_backlog), before_job_(std::move(before_job)) {}
  /// Writes everything handed over, then stops the thread.
  ~audit_writer();
  audit_writer(const audit_writer&) = delete;
  audit_writer& operator=(const audit_writer&) = delete;

  /// Hands a batch over, its first `rows` entries to write (those after them are slots kept for
  /// a later batch); returns at once unless the entries waiting would exceed the backlog, then
  /// once the writer has made room.
  void write(std::vector<audit_entry> batch, std::size_t rows = SIZE_MAX);
  /// Applies the retention after the batches handed over before it.
  void trim(audit_retention r, std::int64_t now_ms);
  /// Waits until everything handed over is in the store (before reading it back).
  void drain();
  /// A vector to fill with the next batch: a batch already written, so a busy daemon does not
  /// grow a new vector of thousands of entries every flush (moving each entry at every doubling
  /// and faulting in fresh pages), nor allocate its rows' strings again. Its entries are slots
  /// to overwrite in whole (written rows, and the slots after them). Empty, without storage,
  /// when none.
  std::vector<audit_entry> take_spare();
  /// What went wrong since the last call ("" when nothing): the last error and how many
  /// entries were not kept.
  std::string take_error();

 private:
  struct job {
    std::vector<audit_entry> batch;
    std::size_t rows = 0;  ///< of batch, to write
    bool trim = false;
    audit_retention retention;
    std::int64_t now_ms = 0;
  };
  void push(std::unique_lock<std::mutex>& lock, job j);
  void run();
  void perform(job& j);

  state_store& store_;
  const std::size_t max_backlog_;
  const std::function<void()> before_job_;
  std::mutex m_;
  std::condition_variable wake_;  ///< jobs to do, or stop
  std::condition_variable idle_;  ///< the queue is empty and nothing is being written
  std::condition_variable room_;  ///< a job was taken: entries waiting went down
  std::deque<job> jobs_;
  std::size_t waiting_ = 0;  ///< entries in jobs_
  bool busy_ = false;
  bool stop_ = false;
  std::vector<audit_entry> spare_;  ///< a written batch (its rows slots to reuse)
  std::string error_;
  std::size_t lost_ = 0;
  std::thread thread_;
};

}  // namespace mcpmux
