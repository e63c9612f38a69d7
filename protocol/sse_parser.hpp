// Sans-io Server-Sent Events parser (WHATWG event-stream rules): bytes in, events out, with a cap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace mcpmux {

/// One dispatched event.
struct sse_event {
  std::string id;                      ///< the last event id in force when dispatched (persists)
  std::string event;                   ///< `event:` field; empty means "message"
  std::string data;                    ///< `data:` lines joined by '\n'
  std::optional<std::uint64_t> retry;  ///< `retry:` given in this event's block, in ms
};

/// Splits an event stream into events. Lines end with CRLF, LF or CR (also when a CRLF pair is
/// split across feeds); a leading UTF-8 BOM is skipped; comments (`:`) and unknown fields are
/// ignored. An event whose data would exceed `max_event` bytes is discarded up to its blank line
/// and reported once with its size; a line is never held beyond the cap either.
class sse_parser {
 public:
  using event_handler = std::function<void(sse_event&)>;
  using oversize_handler = std::function<void(std::size_t bytes)>;

  explicit sse_parser(std::size_t max_event) : max_event_(max_event) {}

  /// Feeds bytes; calls `on_event` per complete event, `on_oversize` per discarded event.
  void feed(std::string_view data, const event_handler& on_event,
            const oversize_handler& on_oversize);

  /// The id to send as Last-Event-ID on reconnection; empty when none was seen.
  const std::string& last_event_id() const { return last_id_; }
  /// The most recent `retry:` value (reconnection delay in ms), if any.
  std::optional<std::uint64_t> retry() const { return retry_; }
  /// True once any `id:` field was seen (even an empty one).
  bool saw_id() const { return saw_id_; }
  /// Drops a partial line and event (the connection broke) but keeps the last event id and
  /// retry, so that one parser serves a stream and its resumptions.
  void reset();
  /// Bytes of the unterminated line and undispatched data held (for tests and accounting).
  std::size_t pending() const { return line_.size() + data_.size(); }

 private:
  void on_line(std::string_view line, const event_handler& on_event,
               const oversize_handler& on_oversize);
  void field(std::string_view name, std::string_view value);
  void over_cap(std::size_t bytes);

  std::size_t max_event_;
  std::string line_;
  std::string data_;
  std::string event_;
  std::string last_id_;
  std::optional<std::uint64_t> retry_;
  std::optional<std::uint64_t> block_retry_;
  std::size_t discarded_ = 0;  // > 0 while the rest of an oversize event is skipped
  bool has_data_ = false;
  bool after_cr_ = false;
  bool started_ = false;
  bool line_too_long_ = false;
  bool saw_id_ = false;
};

}  // namespace mcpmux
