// Sans-io Server-Sent Events parser: line splitting, fields, dispatch and the event size cap.
#include "protocol/sse_parser.hpp"

#include <algorithm>
#include <utility>

namespace mcpmux {
namespace {

constexpr std::string_view bom = "\xEF\xBB\xBF";
// Room for a field name and its colon on top of the data cap.
constexpr std::size_t line_slack = 64;

}  // namespace

void sse_parser::feed(std::string_view data, const event_handler& on_event,
                      const oversize_handler& on_oversize) {
  // A BOM may only open the stream; it can arrive a byte at a time.
  while (!started_ && !data.empty()) {
    line_.push_back(data.front());
    data.remove_prefix(1);
    if (line_ == bom) {
      line_.clear();
      started_ = true;
    } else if (bom.substr(0, line_.size()) != line_) {
      started_ = true;
      std::string held = std::exchange(line_, {});
      feed(held, on_event, on_oversize);
    }
  }
  const std::size_t line_cap = max_event_ + line_slack;
  while (!data.empty()) {
    if (after_cr_) {
      after_cr_ = false;
      if (data.front() == '\n') {
        data.remove_prefix(1);
        continue;
      }
    }
    const auto end = data.find_first_of("\r\n");
    const std::string_view chunk = data.substr(0, end);
    if (line_too_long_) {
      discarded_ += chunk.size();
    } else if (line_.size() + chunk.size() > line_cap) {
      // A line beyond the cap is never held: the event it belongs to is discarded.
      line_too_long_ = true;
      over_cap(data_.size() + line_.size() + chunk.size());
      line_.clear();
      line_.shrink_to_fit();
    } else {
      line_.append(chunk);
    }
    if (end == std::string_view::npos) return;
    after_cr_ = data[end] == '\r';
    data.remove_prefix(end + 1);
    if (line_too_long_) {
      line_too_long_ = false;
    } else {
      std::string line = std::move(line_);
      line_.clear();
      on_line(line, on_event, on_oversize);
    }
  }
}

void sse_parser::reset() {
  line_.clear();
  data_.clear();
  event_.clear();
  block_retry_.reset();
  discarded_ = 0;
  has_data_ = false;
  after_cr_ = false;
  started_ = false;
  line_too_long_ = false;
}

void sse_parser::over_cap(std::size_t bytes) {
  discarded_ = std::max(discarded_, std::max<std::size_t>(bytes, 1));
  data_.clear();
  data_.shrink_to_fit();
  has_data_ = false;
}

void sse_parser::on_line(std::string_view line, const event_handler& on_event,
                         const oversize_handler& on_oversize) {
  if (line.empty()) {
    // Blank line: dispatch.
    if (discarded_ > 0) {
      const auto bytes = std::exchange(discarded_, 0);
      if (on_oversize) on_oversize(bytes);
    } else if (has_data_) {
      sse_event ev{last_id_, std::move(event_), std::move(data_), block_retry_};
      if (on_event) on_event(ev);
    }
    data_.clear();
    event_.clear();
    has_data_ = false;
    block_retry_.reset();
    return;
  }
  if (line.front() == ':') return;  // comment (keep-alive)
  const auto colon = line.find(':');
  std::string_view name = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  field(name, value);
}

void sse_parser::field(std::string_view name, std::string_view value) {
  if (name == "data") {
    if (discarded_ > 0) {
      discarded_ += value.size() + 1;
      return;
    }
    const std::size_t grown = data_.size() + value.size() + (has_data_ ? 1 : 0);
    if (grown > max_event_) return over_cap(grown);
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (name == "event") {
    event_.assign(value);
  } else if (name == "id") {
    if (value.find('\0') != std::string_view::npos) return;  // ignored, as the standard says
    last_id_.assign(value);
    saw_id_ = true;
  } else if (name == "retry") {
    if (value.empty() || value.size() > 18 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return;
    std::uint64_t ms = 0;
    for (char c : value) ms = ms * 10 + static_cast<std::uint64_t>(c - '0');
    retry_ = ms;
    block_retry_ = ms;
  }
}

}  // namespace mcpmux
