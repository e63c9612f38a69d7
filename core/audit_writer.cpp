#include "core/audit_writer.hpp"

#include <pthread.h>
#include <signal.h>

#include <fmt/format.h>
#include <algorithm>
#include <span>
#include <utility>

namespace mcpmux {

audit_writer::~audit_writer() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void audit_writer::write(std::vector<audit_entry> batch, std::size_t rows) {
  rows = std::min(rows, batch.size());
  if (rows == 0) return;
  std::unique_lock lock(m_);
  room_.wait(lock, [&] { return waiting_ == 0 || waiting_ + rows <= max_backlog_; });
  job j;
  j.batch = std::move(batch);
  j.rows = rows;
  push(lock, std::move(j));
}

void audit_writer::trim(audit_retention r, std::int64_t now_ms) {
  job j;
  j.trim = true;
  j.retention = r;
  j.now_ms = now_ms;
  std::unique_lock lock(m_);
  push(lock, std::move(j));
}

void audit_writer::push(std::unique_lock<std::mutex>& lock, job j) {
  waiting_ += j.rows;
  jobs_.push_back(std::move(j));
  if (!thread_.joinable()) {
    // Signals stay with the event loop's thread: the new one starts with all of them blocked.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    thread_ = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  lock.unlock();
  wake_.notify_one();
}

void audit_writer::drain() {
  std::unique_lock lock(m_);
  idle_.wait(lock, [&] { return jobs_.empty() && !busy_; });
}

std::vector<audit_entry> audit_writer::take_spare() {
  std::lock_guard lock(m_);
  return std::exchange(spare_, {});
}

std::string audit_writer::take_error() {
  std::lock_guard lock(m_);
  if (error_.empty()) return {};
  std::string out = lost_ ? fmt::format("{} ({} entries not kept)", error_, lost_) : error_;
  error_.clear();
  lost_ = 0;
  return out;
}

void audit_writer::run() {
  std::unique_lock lock(m_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and everything is written
    job j = std::move(jobs_.front());
    jobs_.pop_front();
    waiting_ -= j.rows;
    busy_ = true;
    lock.unlock();
    room_.notify_all();
    if (before_job_) before_job_();
    perform(j);
    // Keep the storage of a batch that filled most of it; a quieter daemon lets it go.
    // Its rows stay, as slots for the next batch's (their strings' storage reused: a client's
    // label is longer than a string holds in place), but not a long argument text's storage.
    const bool keep = j.rows * 4 >= j.batch.capacity() && j.rows >= 64;
    if (keep)
      for (auto& e : j.batch)
        if (e.detail.capacity() > max_kept_detail) std::string().swap(e.detail);
    std::vector<audit_entry> gone;
    lock.lock();
    if (keep && j.batch.capacity() > spare_.capacity())
      gone = std::exchange(spare_, std::move(j.batch));
    busy_ = false;
    if (jobs_.empty()) idle_.notify_all();
    lock.unlock();
    gone.clear();
    j.batch.clear();
    lock.lock();
  }
}

void audit_writer::perform(job& j) {
  if (j.trim) {
    // In steps, as the batches are written: a first retention over a big log may drop many.
    while (store_.trim(j.retention, j.now_ms, static_cast<std::int64_t>(chunk_rows) * 8) > 0) {
    }
    return;
  }
  const auto all = std::span<const audit_entry>(j.batch).first(j.rows);
  for (std::size_t at = 0; at < all.size(); at += chunk_rows) {
    const auto part = all.subspan(at, std::min(chunk_rows, all.size() - at));
    if (auto written = store_.append(part); !written) {
      std::lock_guard lock(m_);
      error_ = std::move(written.error().message);
      lost_ += part.size();
    }
  }
}

}  // namespace mcpmux
