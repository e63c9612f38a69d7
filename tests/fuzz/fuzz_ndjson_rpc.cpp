// Fuzzes NDJSON framing and JSON-RPC parsing: lines from a split feed match a reference split of
// the whole input, and every reply built for a parsed message parses back to what it answers.
#include <boost/json/serialize.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/json_rpc.hpp"
#include "protocol/ndjson.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace mcpmux;

constexpr std::size_t max_line = 4096;

// What the framer should report for `in` fed at once, computed the obvious way: one entry per
// '\n'-terminated line; a line of more than max_line bytes (CR included) is reported as its size.
struct framed {
  std::vector<std::string> lines;
  std::vector<std::size_t> oversize;  // in order, interleaved positions not tracked
  std::vector<int> order;             // 0 = line, 1 = oversize
  bool operator==(const framed&) const = default;
};

framed reference(std::string_view in) {
  framed out;
  for (std::size_t nl; (nl = in.find('\n')) != std::string_view::npos; in.remove_prefix(nl + 1)) {
    std::string_view line = in.substr(0, nl);
    if (line.size() > max_line) {
      out.oversize.push_back(line.size());
      out.order.push_back(1);
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    out.lines.emplace_back(line);
    out.order.push_back(0);
  }
  return out;
}

const json::value& id_of(const message& m) {
  return m.id();
}

// Known issue (reported, not yet fixed): Boost.JSON 1.81 parses 1e400 as an infinite double and
// serializes it as `Infinity`, which is not JSON, so a reply or forwarded request carrying one
// does not parse. The regression inputs keep failing until that is fixed; while fuzzing,
// scripts/fuzz sets MCPMUX_FUZZ_SKIP_KNOWN=1 so the campaign can look for other bugs.
bool has_nonfinite(const json::value& v) {
  if (const auto* d = v.if_double()) return !std::isfinite(*d);
  if (const auto* a = v.if_array()) {
    for (const auto& e : *a)
      if (has_nonfinite(e)) return true;
  } else if (const auto* o = v.if_object()) {
    for (const auto& e : *o)
      if (has_nonfinite(e.value())) return true;
  }
  return false;
}

bool skip_known_issue(const json::object& body) {
  static const bool skip = std::getenv("MCPMUX_FUZZ_SKIP_KNOWN") != nullptr;
  if (!skip) return false;
  for (const auto& e : body)
    if (has_nonfinite(e.value())) return true;
  return false;
}

// Parses `text` (built by us) and checks that it is a message of `kind` with id `id`.
const message& reparse(message_parser& p, std::optional<result<message>>& slot,
                       const std::string& text, message_kind kind, const json::value& id) {
  slot.emplace(p.parse(text));
  const auto* err = slot->if_error();
  FUZZ_CHECK(!err, "built message does not parse (%s): %s", err ? err->message.c_str() : "",
             text.c_str());
  const auto& m = slot->value();
  FUZZ_CHECK(m.kind == kind, "built message has kind %d, wanted %d: %s", static_cast<int>(m.kind),
             static_cast<int>(kind), text.c_str());
  FUZZ_CHECK(id_of(m) == id, "built message has id %s, wanted %s",
             json::serialize(id_of(m)).c_str(), json::serialize(id).c_str());
  return m;
}

void check_message(message_parser& again, const message& m) {
  if (skip_known_issue(m.body)) return;
  std::optional<result<message>> slot;
  const json::value& id = m.id();
  switch (m.kind) {
    case message_kind::request:
    case message_kind::notification: {
      FUZZ_CHECK(m.body.contains("method") && m.body.at("method").is_string(),
                 "request without a string method");
      if (m.kind == message_kind::request) FUZZ_CHECK(valid_id(id), "request with an invalid id");
      if (m.kind == message_kind::notification)
        FUZZ_CHECK(!m.body.contains("id"), "notification with an id");
      // Replies answer under the request's id; a request we forward carries the same params.
      const json::value params =
          m.body.contains("params") ? m.body.at("params") : json::value(nullptr);
      const json::value reply_id = m.kind == message_kind::request ? id : json::value(7);
      reparse(again, slot, make_result(reply_id, params), message_kind::response, reply_id);
      const json::value data = json::string(m.method());
      const auto& e =
          reparse(again, slot, make_error(reply_id, rpc_code::method_not_found, m.method(), &data),
                  message_kind::error_response, reply_id);
      FUZZ_CHECK(e.body.at("error").at("message").as_string() == m.method(),
                 "error message changed");
      const auto& r = reparse(again, slot, make_request(reply_id, m.method(), params),
                              message_kind::request, reply_id);
      FUZZ_CHECK(r.method() == m.method(), "method changed in make_request");
      FUZZ_CHECK(r.params() == m.params(), "params changed in make_request");
      const auto& n = reparse(again, slot, make_notification(m.method(), params),
                              message_kind::notification, json::value(nullptr));
      FUZZ_CHECK(n.method() == m.method(), "method changed in make_notification");
      break;
    }
    case message_kind::response:
      FUZZ_CHECK(m.body.contains("result") && !m.body.contains("error"), "response shape");
      reparse(again, slot, make_result(id, m.body.at("result")), message_kind::response, id);
      break;
    case message_kind::error_response: {
      const auto& err = m.body.at("error").as_object();
      const auto& c = err.at("code");
      const int code =
          c.is_int64() ? static_cast<int>(c.get_int64()) : static_cast<int>(c.get_uint64());
      reparse(again, slot, make_error(id, code, err.at("message").as_string()),
              message_kind::error_response, id);
      break;
    }
  }
}

// scan_response agrees with parse(): a span only for a success response with an integer id,
// pointing at that id; relaying the raw text under another id changes nothing else.
void check_scan(message_parser& again, std::string_view line,
                const std::optional<response_span>& span, const result<message>& parsed) {
  if (!span) return;
  const auto* m = parsed.if_value();
  FUZZ_CHECK(m && m->kind == message_kind::response, "scan found a response parse() refuses");
  FUZZ_CHECK(m->id().is_int64() && m->id().get_int64() == span->id, "scan found another id");
  FUZZ_CHECK(span->id_pos + span->id_len <= line.size(), "id span outside the line");
  if (skip_known_issue(m->body)) return;
  message raw{message_kind::response, {}};
  raw.raw.assign(line);
  raw.raw_id_pos = span->id_pos;
  raw.raw_id_len = span->id_len;
  const json::value new_id = "relayed";
  std::optional<result<message>> slot;
  const auto& back = reparse(again, slot, relay_reply(new_id, raw), message_kind::response, new_id);
  FUZZ_CHECK(back.body.at("result") == m->body.at("result"), "relay changed the result");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  const std::size_t split = static_cast<std::size_t>(data[0]) * in.size() / 255;

  static message_parser parser;  // reused across inputs, as a connection reuses it
  static message_parser again;
  ndjson_framer framer(max_line);
  framed got;
  auto on_line = [&](std::string_view line, std::string* whole) {
    FUZZ_CHECK(line.size() <= max_line, "line of %zu bytes over the cap", line.size());
    FUZZ_CHECK(line.find('\n') == std::string_view::npos, "line contains LF");
    FUZZ_CHECK(!whole || *whole == line, "the offered buffer is not the line");
    // Take the framer's buffer now and then, as rpc_peer does for a relayed answer.
    std::string taken;
    if (whole && (data[0] & 1)) {
      taken = std::move(*whole);
      line = taken;
    }
    got.lines.emplace_back(line);
    got.order.push_back(0);
    const auto span = parser.scan_response(line);
    auto parsed = parser.parse(line);
    check_scan(again, line, span, parsed);
    if (auto* err = parsed.if_error()) {
      FUZZ_CHECK(err->id.is_null() || valid_id(err->id), "rpc_error carries an invalid id");
      FUZZ_CHECK(err->code == rpc_code::parse_error || err->code == rpc_code::invalid_request,
                 "unexpected code %d", err->code);
      std::optional<result<message>> slot;
      reparse(again, slot, make_error(err->id, err->code, err->message),
              message_kind::error_response, err->id);
      return;
    }
    check_message(again, parsed.value());
  };
  auto on_oversize = [&](std::size_t bytes) {
    FUZZ_CHECK(bytes > max_line, "oversize report of %zu bytes", bytes);
    got.oversize.push_back(bytes);
    got.order.push_back(1);
  };
  framer.feed(in.substr(0, split), on_line, on_oversize);
  FUZZ_CHECK(framer.pending() <= max_line, "pending %zu over the cap", framer.pending());
  framer.feed(in.substr(split), on_line, on_oversize);
  FUZZ_CHECK(framer.pending() <= max_line, "pending %zu over the cap", framer.pending());

  const framed want = reference(in);
  FUZZ_CHECK(got == want,
             "framing differs from the reference (split at %zu): %zu/%zu lines, %zu/%zu oversize",
             split, got.lines.size(), want.lines.size(), got.oversize.size(), want.oversize.size());
  return 0;
}
