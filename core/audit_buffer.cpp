#include "core/audit_buffer.hpp"

#include <boost/asio/io_context.hpp>

#include "base/clock.hpp"
#include "config/config.hpp"
#include "core/audit_writer.hpp"
#include "core/timer.hpp"

namespace mcpmux {

constexpr auto audit_flush_interval = std::chrono::milliseconds(200);

namespace {
// A batch of a record's rows or more that fills its vector: it goes to the writer rather than
// grow (every row moved), and the next batch gets more room.
bool fills(std::size_t rows, std::size_t capacity) {
  return rows == capacity && rows >= audit_writer::chunk_rows;
}
}  // namespace

// The first entry of a batch arms the timer; the batch goes to the writer's thread.
struct audit_buffer::batching {
  batching(boost::asio::io_context& io, state_store& store) : timer(io), writer(store) {}
  steady_timer timer;
  audit_writer writer;
  bool armed = false;
};

audit_buffer::audit_buffer(boost::asio::io_context& io, state_store* store, const daemon_config& d)
    : store_(store) {
  configure(d);
  if (store_) batching_ = std::make_shared<batching>(io, *store_);
}

audit_buffer::~audit_buffer() {
  flush();  // (the writer's destructor writes what it was handed)
}

void audit_buffer::configure(const daemon_config& d) {
  enabled_ = d.audit;
  retention_ = {d.audit_retention_days, d.audit_max_rows};
}

void audit_buffer::audit(audit_entry&& e) {
  if (auto* row = next_row()) *row = std::move(e);
}

void audit_buffer::audit(const audit_fields& f) {
  if (auto* row = next_row()) f.write_to(*row);
}

audit_entry* audit_buffer::next_row() {
  if (!auditing()) return nullptr;
  if (fills(used_, buffer_.capacity())) flush();  // (the flush hands back a spare to fill)
  if (used_ == buffer_.size()) buffer_.emplace_back();
  auto* row = &buffer_[used_++];
  if (batching_->armed) return row;
  batching_->armed = true;
  batching_->timer.expires_after(audit_flush_interval);
  // (A wait that ended just before the buffer was destroyed finds its batching gone.)
  batching_->timer.async_wait(
      [this, alive = std::weak_ptr<batching>(batching_)](boost::system::error_code ec) {
        if (ec || alive.expired()) return;
        batching_->armed = false;
        flush();
      });
  return row;
}

void audit_buffer::flush() {
  if (!batching_) return;
  auto& writer = batching_->writer;
  if (auto error = writer.take_error(); !error.empty()) log_.warn("audit log: {}", error);
  if (used_ == 0) return;
  const auto rows = std::exchange(used_, 0);
  // A batch that filled its vector was cut short (next_row): more came in the interval.
  const bool cut_short = fills(rows, buffer_.capacity());
  // (The slots after them go along, kept: not the writer's to write.)
  writer.write(std::exchange(buffer_, writer.take_spare()), rows);
  // The next batch likely holds about as many, or, after one cut short, more. A spare with room
  // for it is filled again, its slots' strings reused. Otherwise (none, the writer still holds
  // it; or too small) a new vector gets twice the room now: not grown as rows come, every row
  // moved at each growth, nor handed over again and again in small batches, each needing a new
  // vector while the writer catches up (a busy daemon's 200 ms bring tens of thousands).
  const std::size_t enough = cut_short ? rows + 1 : rows + rows / 4;
  if (buffer_.capacity() < enough) {
    std::vector<audit_entry> fresh;
    fresh.reserve(2 * rows);
    buffer_ = std::move(fresh);
  }
  // Retention now and then, not at every batch.
  if (flushes_++ % 64 == 0) writer.trim(retention_, unix_now_ms());
}

void audit_buffer::drain() {
  flush();
  if (batching_) batching_->writer.drain();
}

std::vector<audit_entry> audit_buffer::history(const audit_query& q) {
  if (!auditing()) return {};
  drain();
  return store_->history(q);
}

}  // namespace mcpmux
