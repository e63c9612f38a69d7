// Fuzzes the SSE parser: the events of a stream fed in data-derived pieces (and a byte at a time)
// are those of the stream fed at once, and no event or held line outgrows the cap.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/sse_parser.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace mcpmux;

struct outcome {
  std::vector<std::string> log;  // events and oversize reports, in order
  std::size_t oversize = 0;
  std::string last_id;
  std::optional<std::uint64_t> retry;
  bool saw_id = false;
  bool operator==(const outcome&) const = default;
};

std::string describe(const sse_event& ev) {
  std::string s = "event id=" + ev.id + " event=" + ev.event + " retry=";
  s += ev.retry ? std::to_string(*ev.retry) : "-";
  return s + " data=" + ev.data;
}

outcome run(std::string_view in, std::size_t cap, const std::vector<std::size_t>& cuts) {
  sse_parser p(cap);
  outcome out;
  const sse_parser::event_handler on_event = [&](sse_event& ev) {
    FUZZ_CHECK(ev.data.size() <= cap, "event data of %zu bytes over the cap %zu", ev.data.size(),
               cap);
    FUZZ_CHECK(ev.data.find('\r') == std::string::npos, "CR in event data");
    FUZZ_CHECK(ev.event.find_first_of("\r\n") == std::string::npos, "line break in event type");
    FUZZ_CHECK(ev.id.find_first_of("\r\n") == std::string::npos, "line break in event id");
    FUZZ_CHECK(ev.id.find('\0') == std::string::npos, "NUL in event id");
    out.log.push_back(describe(ev));
  };
  const sse_parser::oversize_handler on_oversize = [&](std::size_t bytes) {
    FUZZ_CHECK(bytes > cap, "oversize report of %zu bytes, cap %zu", bytes, cap);
    out.log.emplace_back("oversize");
    ++out.oversize;
  };
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    p.feed(in.substr(at, cut - at), on_event, on_oversize);
    FUZZ_CHECK(p.pending() <= 2 * cap + 64, "pending %zu bytes, cap %zu", p.pending(), cap);
    at = cut;
  }
  p.feed(in.substr(at), on_event, on_oversize);
  FUZZ_CHECK(p.pending() <= 2 * cap + 64, "pending %zu bytes, cap %zu", p.pending(), cap);
  out.last_id = p.last_event_id();
  out.retry = p.retry();
  out.saw_id = p.saw_id();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  // Small caps so that oversize events and lines are reachable within max_len.
  const std::size_t cap = 1 + data[0];
  const std::string_view in(reinterpret_cast<const char*>(data) + 3, size - 3);
  std::size_t a = data[1] * in.size() / 255, b = data[2] * in.size() / 255;
  if (a > b) std::swap(a, b);

  const outcome whole = run(in, cap, {});
  const outcome split = run(in, cap, {a, b});
  FUZZ_CHECK(split == whole, "split at %zu,%zu: %zu events vs %zu at once", a, b, split.log.size(),
             whole.log.size());
  std::vector<std::size_t> bytes(in.size() > 0 ? in.size() - 1 : 0);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = i + 1;
  const outcome single = run(in, cap, bytes);
  FUZZ_CHECK(single == whole, "byte at a time: %zu events vs %zu at once", single.log.size(),
             whole.log.size());
  return 0;
}
