// Sans-io NDJSON framing: bytes in, complete lines out, with a cap on line length.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>

namespace mcpmux {

/// Splits a byte stream into lines. CR before LF is stripped and blank lines are skipped. A line
/// longer than `max_line` bytes is discarded up to its newline and reported once, with its size.
class ndjson_framer {
 public:
  explicit ndjson_framer(std::size_t max_line) : max_line_(max_line) {}

  /// Feeds bytes; calls `on_line(std::string_view)` per complete line and
  /// `on_oversize(std::size_t bytes)` per discarded line. Views are valid during the call only.
  /// An `on_line(std::string_view, std::string* whole)` is also given, for a line assembled
  /// across reads, the buffer holding exactly that line, which it may move from (no copy of a
  /// big message); `whole` is null for a line still in the caller's data.
  template <class OnLine, class OnOversize>
  void feed(std::string_view data, OnLine&& on_line, OnOversize&& on_oversize);

  /// During `on_line`: true when no newline follows that line's in the data being fed, so no
  /// other line of this feed comes after it (a send made now is the feed's last).
  bool at_last_line() const { return at_last_line_; }
  /// Bytes of an unterminated line held so far (for tests and accounting).
  std::size_t pending() const { return partial_.size(); }
  /// True while the rest of an oversize line is being skipped.
  bool discarding() const { return discarding_; }
  /// Bytes of the oversize line skipped so far.
  std::size_t discarded() const { return discarded_; }
  /// The first bytes (up to head_bytes) of the last oversize line, kept from when it went over
  /// the cap: enough for a receiver to tell whose answer it was, if it was one.
  std::string_view discarded_head() const { return head_; }
  static constexpr std::size_t head_bytes = 1024;

 private:
  // Returns the line without a trailing CR.
  static std::string_view trim_cr(std::string_view s) {
    return !s.empty() && s.back() == '\r' ? s.substr(0, s.size() - 1) : s;
  }
  static bool blank(std::string_view s) {
    return s.find_first_not_of(" \t\r") == std::string_view::npos;
  }
  template <class OnLine>
  static void emit(OnLine& on_line, std::string_view line, std::string* whole) {
    if constexpr (std::is_invocable_v<OnLine&, std::string_view, std::string*>)
      on_line(line, whole);
    else
      on_line(line);
  }

  static constexpr std::size_t keep_capacity = 64 * 1024;
  std::size_t max_line_;
  std::string partial_;
  bool discarding_ = false;
  std::size_t discarded_ = 0;
  std::string head_;
  bool at_last_line_ = false;
};

template <class OnLine, class OnOversize>
void ndjson_framer::feed(std::string_view data, OnLine&& on_line, OnOversize&& on_oversize) {
  const auto last_nl = data.rfind('\n');  // where the feed's last whole line ends
  for (std::size_t at = 0; !data.empty();) {
    const auto nl = data.find('\n');
    at_last_line_ = nl != std::string_view::npos && at + nl == last_nl;
    const std::string_view chunk = data.substr(0, nl);  // whole rest when no newline
    // The CR of a CRLF (or a last CR that a LF may follow) is not part of the line's length.
    const bool ends_cr =
        chunk.empty() ? !partial_.empty() && partial_.back() == '\r' : chunk.back() == '\r';
    if (discarding_) {
      discarded_ += chunk.size();
    } else if (partial_.size() + chunk.size() - (ends_cr ? 1 : 0) > max_line_) {
      // Too long: skip everything up to the newline, keeping nothing of it in memory.
      discarding_ = true;
      discarded_ = partial_.size() + chunk.size();
      head_.assign(partial_, 0, std::min(partial_.size(), head_bytes));
      head_.append(chunk.substr(0, head_bytes - head_.size()));
      partial_.clear();
      partial_.shrink_to_fit();
    } else if (nl != std::string_view::npos && partial_.empty()) {
      // Fast path: the whole line is in this read; no copy.
      if (auto line = trim_cr(chunk); !blank(line)) emit(on_line, line, nullptr);
    } else {
      partial_.append(chunk);
      if (nl != std::string_view::npos) {
        if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
        // The receiver may take partial_ (moved from: empty) instead of copying it.
        if (!blank(partial_)) emit(on_line, std::string_view(partial_), &partial_);
        // A big message's buffer is given back: an idle connection should hold next to nothing.
        if (partial_.capacity() > keep_capacity)
          std::string().swap(partial_);
        else
          partial_.clear();
      }
    }
    if (nl == std::string_view::npos) return;
    if (discarding_) {
      discarding_ = false;
      on_oversize(discarded_);
      discarded_ = 0;
    }
    data.remove_prefix(nl + 1);
    at += nl + 1;
  }
  at_last_line_ = false;
}

}  // namespace mcpmux
