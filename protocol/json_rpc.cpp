// JSON-RPC 2.0 parsing, classification and serialization.
#include "protocol/json_rpc.hpp"

#include "base/text.hpp"
#include "protocol/json_scan.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/parser.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/serializer.hpp>

namespace mcpmux {
namespace {

const json::value null_value;
const json::object empty_object;

rpc_error invalid(std::string msg, json::value id = nullptr) {
  return {rpc_code::invalid_request, std::move(msg), std::move(id)};
}

// Appends serialized JSON of `v` to `out` without an intermediate string. A small value (every
// id, most params) is serialized into a scratch buffer and appended: `out` is never grown past
// what it holds, so no 16 KiB block is zeroed, allocated and freed per message. A big value is
// measured first, so that `out` grows once, to its final size (growing a 10 MiB string step by
// step would hold it twice at each step).
void append_json(std::string& out, const json::value& v) {
  constexpr std::size_t first = 16 * 1024;
  // The first part, and the measuring pass's; allocated at the thread's first use (as a
  // thread-local array, every thread's start zeroed it).
  static thread_local std::unique_ptr<char[]> scratch;
  if (!scratch) scratch.reset(new char[2 * first]);
  json::serializer sr;
  sr.reset(&v);
  const std::string_view head = sr.read(scratch.get(), first);
  if (sr.done()) {
    out.append(head);
    return;
  }
  std::size_t total = 0;
  {
    json::serializer counter;
    counter.reset(&v);
    while (!counter.done()) total += counter.read(scratch.get() + first, first).size();
  }
  const auto base = out.size();
  out.reserve(base + total + 64);  // and room for what the caller closes the message with
  out.append(head);
  std::size_t filled = head.size();
  out.resize(base + total);
  while (!sr.done()) filled += sr.read(out.data() + base + filled, total - filled).size();
  out.resize(base + filled);
}

// A message's text beginning with `head`, with room for one of the usual size: one allocation
// for a typical message, not one per part.
std::string begin_message(std::string_view head) {
  std::string out;
  out.reserve(512);
  out.append(head);
  return out;
}

// True when `s` written as a JSON string would need an escape (or is beyond ASCII, which the
// serializer checks).
bool needs_escape(std::string_view s) {
  return json_scan::plain_prefix(s) != s.size();
}

// Appends the serialized `id`: an integer without the serializer.
void append_id(std::string& out, const json::value& id) {
  if (!id.is_int64()) return append_json(out, id);
  char buf[24];
  const auto end = std::to_chars(buf, buf + sizeof buf, id.get_int64()).ptr;
  out.append(buf, static_cast<std::size_t>(end - buf));  // (a pointer pair would take _M_replace)
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  if (needs_escape(s)) return append_json(out, json::string(s));
  out += '"';
  out += s;
  out += '"';
}

const json::value& message::id() const {
  if (scanned) return scanned_id;
  auto* p = body.if_contains("id");
  return p ? *p : null_value;
}

std::string_view message::method() const {
  if (scanned) return "tools/call";
  auto* p = body.if_contains("method");
  return p && p->is_string() ? std::string_view(p->get_string()) : std::string_view();
}

const json::object& message::params() const {
  auto* p = body.if_contains("params");
  return p && p->is_object() ? p->get_object() : empty_object;
}

bool message::parse_raw() {
  if (raw.empty()) return true;
  boost::system::error_code ec;
  auto v = json::parse(raw, ec);
  if (ec || !v.is_object()) return false;
  body = std::move(v.as_object());
  raw.clear();
  return true;
}

bool valid_id(const json::value& v) {
  return v.is_string() || v.is_int64() || v.is_uint64();
}

result<message> classify(json::value v) {
  if (v.is_array()) return invalid("Invalid Request: JSON-RPC batches are not supported");
  if (!v.is_object()) return invalid("Invalid Request: a JSON-RPC message must be an object");
  auto& obj = v.get_object();
  json::value id = nullptr;
  const auto* idp = obj.if_contains("id");
  if (idp && valid_id(*idp)) id = *idp;

  const auto* ver = obj.if_contains("jsonrpc");
  if (!ver || !ver->is_string() || ver->get_string() != "2.0")
    return invalid("Invalid Request: \"jsonrpc\" must be \"2.0\"", id);

  if (const auto* m = obj.if_contains("method")) {
    if (!m->is_string()) return invalid("Invalid Request: \"method\" must be a string", id);
    if (const auto* p = obj.if_contains("params"); p && !p->is_object() && !p->is_array())
      return invalid("Invalid Request: \"params\" must be an object", id);
    if (!idp) return message{message_kind::notification, std::move(obj)};
    if (!valid_id(*idp)) return invalid("Invalid Request: \"id\" must be a string or an integer");
    return message{message_kind::request, std::move(obj)};
  }
  if (!idp) return invalid("Invalid Request: neither a request, a notification nor a response", id);
  if (!valid_id(*idp) && !idp->is_null())
    return invalid("Invalid Request: \"id\" must be a string or an integer");
  const bool has_result = obj.contains("result");
  const auto* e = obj.if_contains("error");
  if (has_result && e)
    return invalid("Invalid Request: a response has \"result\" or \"error\", not both", id);
  if (has_result) return message{message_kind::response, std::move(obj)};
  if (e) {
    const auto* eo = e->if_object();
    const auto* code = eo ? eo->if_contains("code") : nullptr;
    const auto* msg = eo ? eo->if_contains("message") : nullptr;
    if (!code || !(code->is_int64() || code->is_uint64()) || !msg || !msg->is_string())
      return invalid("Invalid Request: \"error\" needs an integer code and a string message", id);
    return message{message_kind::error_response, std::move(obj)};
  }
  return invalid("Invalid Request: a response needs \"result\" or \"error\"", id);
}

namespace {

// The sizes a basic_parser asks its handler to bound: none (parse_limits bounds the depth).
struct unbounded_sizes {
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
};

// The first N bytes of a key or a value read in parts: enough to tell the few names
// head_reader compares against. (A std::string paid a call, a strlen and a memcmp per
// comparison.)
template <std::size_t N>
class short_text {
 public:
  void append(json::string_view s) {
    const std::size_t k = std::min(s.size(), N - n_);
    std::memcpy(buf_ + n_, s.data(), k);
    n_ += k;
  }
  void clear() { n_ = 0; }
  bool operator==(std::string_view s) const {
    return s.size() == n_ && std::memcmp(buf_, s.data(), n_) == 0;
  }

 private:
  char buf_[N];
  std::size_t n_ = 0;
};

// basic_parser events of a message's first bytes: the top-level keys until one tells what the
// message is (line_head). Stops as soon as it knows.
class head_reader : public unbounded_sizes {
 public:
  line_head verdict;
  bool decided = false;

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code& ec) { return decide(line_head::kind::other, ec); }
  bool on_object_begin(boost::system::error_code& ec) { return open(ec); }
  bool on_object_end(std::size_t, boost::system::error_code&) { return close(); }
  bool on_array_begin(boost::system::error_code& ec) {
    if (depth_ == 0) return decide(line_head::kind::unknown, ec);  // a batch
    return open(ec);
  }
  bool on_array_end(std::size_t, boost::system::error_code&) { return close(); }
  bool on_key_part(json::string_view s, std::size_t, boost::system::error_code&) {
    if (depth_ == 1) key_.append(s);
    return true;
  }
  bool on_key(json::string_view s, std::size_t n, boost::system::error_code& ec) {
    if (depth_ != 1) return true;
    on_key_part(s, n, ec);
    if (key_ == "method") return decide(line_head::kind::other, ec);  // a request, a notification
    if (key_ == "result" || key_ == "error") {
      // An answer; whose, only an id before it tells (a server's own request numbers its ids too,
      // so an id alone says nothing until "result" or "error" follows it).
      if (!verdict.id) return true;
      return decide(line_head::kind::answer, ec);
    }
    if (key_ != "id" && key_ != "jsonrpc")
      return decide(line_head::kind::other, ec);  // not JSON-RPC
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, boost::system::error_code& ec) {
    return scalar(ec);
  }
  bool on_string(json::string_view, std::size_t, boost::system::error_code& ec) {
    return scalar(ec) && after_value();
  }
  bool on_number_part(json::string_view, boost::system::error_code&) { return true; }
  bool on_int64(std::int64_t i, json::string_view, boost::system::error_code& ec) {
    if (depth_ == 1 && key_ == "id") {
      verdict.id = i;
      return after_value();
    }
    return scalar(ec) && after_value();
  }
  bool on_uint64(std::uint64_t, json::string_view, boost::system::error_code& ec) {
    return scalar(ec) && after_value();
  }
  bool on_double(double, json::string_view, boost::system::error_code& ec) {
    return scalar(ec) && after_value();
  }
  bool on_bool(bool, boost::system::error_code& ec) { return scalar(ec) && after_value(); }
  bool on_null(boost::system::error_code& ec) { return scalar(ec) && after_value(); }
  bool on_comment_part(json::string_view, boost::system::error_code&) { return true; }
  bool on_comment(json::string_view, boost::system::error_code&) { return true; }

 private:
  bool decide(line_head::kind k, boost::system::error_code& ec) {
    verdict.what = k;
    decided = true;
    ec = json::error::extra_data;  // any error: the parse ends here
    return false;
  }
  // A scalar at the top is not a message; an id that is not an integer is not one of ours.
  bool scalar(boost::system::error_code& ec) {
    if (depth_ == 0 || (depth_ == 1 && key_ == "id")) return decide(line_head::kind::other, ec);
    return true;
  }
  bool open(boost::system::error_code& ec) {
    if (depth_ == 1 && key_ == "id") return decide(line_head::kind::other, ec);
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return after_value();
  }
  bool after_value() {
    if (depth_ == 1) key_.clear();
    return true;
  }

  std::size_t depth_ = 0;
  short_text<16> key_;  ///< the current top-level key (first 16 bytes)
};

// The memory of one short message's DOM: a block of its own (then the heap), shared by its values
// and freed with the last of them (a request's params live on in its call). A request's DOM is
// ~10 allocations (each object's table, each key): one malloc/free pair instead of ten.
class message_memory final : public json::memory_resource {
 public:
  static constexpr std::size_t block_size = 1024;

 private:
  void* do_allocate(std::size_t n, std::size_t align) override { return rest_.allocate(n, align); }
  void do_deallocate(void*, std::size_t, std::size_t) override {}
  bool do_is_equal(const json::memory_resource& other) const noexcept override {
    return this == &other;
  }

  alignas(std::max_align_t) unsigned char block_[block_size];
  json::monotonic_resource rest_{block_, sizeof block_};
};

json::parse_options parse_limits() {
  json::parse_options o;
  o.max_depth = 256;  // deep enough for real payloads, shallow enough to bound the stack
  return o;
}

}  // namespace

struct message_parser::impl {
  static constexpr std::size_t keep_buffers_up_to = 1 << 20;
  std::optional<json::parser> parser{std::in_place, json::storage_ptr(), parse_limits()};
  json_scan scan;
};

message_parser::message_parser() : impl_(std::make_unique<impl>()) {}
message_parser::~message_parser() = default;

namespace {

// Takes `m` as the one member named `key` (false: named so twice).
bool take(const json_scan::member*& slot, const json_scan::member& m) {
  if (slot) return false;
  slot = &m;
  return true;
}

}  // namespace

std::optional<response_span> message_parser::scan_response(std::string_view line) {
  auto& s = impl_->scan;
  if (!s.scan(line, "result")) return std::nullopt;
  const json_scan::member *version = nullptr, *id = nullptr, *result = nullptr, *is_error = nullptr;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto& m = s[i];
    if (m.parent >= 0) {  // the result's own
      if (m.key == "isError" && !take(is_error, m)) return std::nullopt;
      continue;
    }
    bool once = true;
    if (m.key == "jsonrpc")
      once = take(version, m);
    else if (m.key == "id")
      once = take(id, m);
    else if (m.key == "result")
      once = take(result, m);
    else if (m.key == "method" || m.key == "error")
      return std::nullopt;  // a request, a notification or an error: parsed in full
    if (!once) return std::nullopt;
  }
  if (!version || version->value != R"("2.0")" || !id || !result) return std::nullopt;
  const auto n = json_scan::integer(id->value);
  if (!n) return std::nullopt;
  return response_span{*n, static_cast<std::size_t>(id->value.data() - line.data()),
                       id->value.size(), is_error && is_error->value == "true"};
}

line_head read_line_head(std::string_view head) {
  json::basic_parser<head_reader> p{parse_limits()};
  boost::system::error_code ec;
  p.write_some(true, head.data(), head.size(), ec);
  if (p.handler().decided) return p.handler().verdict;
  // Not JSON cannot be anyone's answer; JSON cut before its keys told may be.
  line_head undecided;
  undecided.what = ec ? line_head::kind::other : line_head::kind::unknown;
  return undecided;
}

namespace {

// Boost.JSON reads 1e999 as an infinite double and would write it back as `Infinity`, which is
// not JSON: such a message is refused here, once, rather than passed on broken.
bool all_finite(const json::value& v) {
  switch (v.kind()) {
    case json::kind::double_:
      return std::isfinite(v.get_double());
    case json::kind::array:
      for (const auto& e : v.get_array())
        if (!all_finite(e)) return false;
      return true;
    case json::kind::object:
      for (const auto& kv : v.get_object())
        if (!all_finite(kv.value())) return false;
      return true;
    default:
      return true;
  }
}

}  // namespace

result<message> message_parser::parse(std::string_view line) {
  auto& p = *impl_->parser;
  // A long message's DOM on the heap: freed as its parts are (a 10 MiB argument is not held
  // twice while it is edited).
  if (line.size() <= message_memory::block_size / 2)
    p.reset(json::make_shared_resource<message_memory>());
  else
    p.reset();
  boost::system::error_code ec;
  p.write(line.data(), line.size(), ec);
  // (Initialized, not assigned: an assignment would copy the DOM into the default memory.)
  json::value v = ec ? json::value() : p.release();
  // The parser keeps its buffers for the next message, but not a long message's.
  if (line.size() > impl::keep_buffers_up_to)
    impl_->parser.emplace(json::storage_ptr(), parse_limits());
  if (ec) return rpc_error{rpc_code::parse_error, "Parse error: " + ec.message(), nullptr};
  if (!all_finite(v))
    return rpc_error{rpc_code::parse_error, "Parse error: number out of range", nullptr};
  return classify(std::move(v));
}

result<message> message_parser::parse_call(std::string_view line) {
  // One result, returned by name (GCC elides its move only so): the scanned call's, or the full
  // parser's when the line is not one (~200 instructions a call less than a move and a reset).
  result<message> out(std::in_place, message_kind::request, json::object());
  if (!scan_call(line, *out)) out = parse(line);
  return out;
}

// The scanned call of parse_call into `m` (a request with an empty body); false when `line` is
// not one it reads.
bool message_parser::scan_call(std::string_view line, message& m) {
  auto& s = impl_->scan;
  if (!s.scan(line, "params")) return false;
  // The keys jsonrpc, id, method and params, once each, and no other; the params an object of a
  // name and maybe arguments.
  const json_scan::member *version = nullptr, *id = nullptr, *method = nullptr, *params = nullptr,
                          *name = nullptr, *arguments = nullptr;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto& mb = s[i];
    bool once = false;
    if (mb.parent >= 0) {
      if (mb.key == "name")
        once = take(name, mb);
      else if (mb.key == "arguments")
        once = take(arguments, mb);
    } else if (mb.key == "jsonrpc") {
      once = take(version, mb);
    } else if (mb.key == "id") {
      once = take(id, mb);
    } else if (mb.key == "method") {
      once = take(method, mb);
    } else if (mb.key == "params") {
      once = take(params, mb);
    }
    if (!once) return false;
  }
  if (!version || !id || !method || !params || !name || version->value != R"("2.0")" ||
      method->value != R"("tools/call")" || params->value.front() != '{')
    return false;
  // The name written plain (no escapes), not one of mcpmux's own tools.
  const auto tool = name->value.substr(1, name->value.size() - 2);
  if (name->value.front() != '"' || tool.empty() || tool.find('\\') != std::string_view::npos ||
      tool.starts_with("mcpmux"))
    return false;
  if (const auto n = json_scan::integer(id->value)) {
    m.scanned_id = *n;
  } else if (id->value.front() == '"' && id->value.find('\\') == std::string_view::npos) {
    m.scanned_id = id->value.substr(1, id->value.size() - 2);
  } else {
    return false;
  }
  const auto at = [&](std::string_view part) {
    return static_cast<std::size_t>(part.data() - params->value.data());
  };
  // No DOM at all: the id and method are the message's own fields.
  auto& u = m.unparsed.emplace();
  u.text = params->value;
  u.tool = tool;
  u.tool_pos = at(name->value);
  u.tool_len = name->value.size();
  if (arguments) {
    u.arguments_pos = at(arguments->value);
    u.arguments_len = arguments->value.size();
  }
  m.scanned = true;
  return true;
}

void unparsed_params::rename(std::string_view name) {
  // A plain name (the usual one) goes between the quotes in place, without a quoted copy.
  std::string quoted;
  if (needs_escape(name)) append_json_string(quoted, name);
  const auto written = quoted.empty() ? name.size() + 2 : quoted.size();
  if (quoted.empty())
    text.replace(tool_pos + 1, tool_len - 2, name);
  else
    text.replace(tool_pos, tool_len, quoted);
  if (arguments_pos > tool_pos) arguments_pos = arguments_pos - tool_len + written;
  tool_len = written;
  tool.assign(name);
}

// (A scanned call's id and method are fields of their own: views of them stay good.)
void message::parse_params() {
  if (!unparsed) return;
  body["params"] = json::parse(unparsed->text, json::storage_ptr(), parse_limits());
  unparsed.reset();
}

std::string serialize_id(const json::value& id) {
  std::string out;
  append_id(out, id);
  return out;
}

std::string relay_reply(const json::value& id, message& reply) {
  if (!reply.raw.empty()) {
    std::string out = std::move(reply.raw);
    std::string text;
    append_id(text, id);
    out.replace(reply.raw_id_pos, reply.raw_id_len, text);
    return out;
  }
  if (reply.kind == message_kind::response) return make_result(id, reply.body["result"]);
  std::string out = R"({"jsonrpc":"2.0","id":)";
  append_json(out, id);
  out += R"(,"error":)";
  append_json(out, reply.body["error"]);
  out += '}';
  return out;
}

// Boost.JSON serializes strings byte for byte: a value built from bytes that are not UTF-8 (a
// child's stderr, a path) would make a line that strict peers, and our own parser, refuse. Such
// bytes only ever sit inside strings, where U+FFFD may replace them.
namespace {
std::string well_formed(std::string out) {
  // Not `valid ? out : repaired`: a conditional copies `out` (10 MiB for a 10 MiB argument).
  if (is_valid_utf8(out)) return out;
  return valid_utf8(out);
}
}  // namespace

std::string string_member(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

std::int64_t int_member(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_int64() ? v->get_int64() : 0;
}

std::string make_result(const json::value& id, const json::value& result) {
  std::string out = begin_message(R"({"jsonrpc":"2.0","id":)");
  append_id(out, id);
  out += R"(,"result":)";
  append_json(out, result);
  out += '}';
  return well_formed(std::move(out));
}

std::string make_error(const json::value& id, int code, std::string_view msg,
                       const json::value* data) {
  json::object err;
  err["code"] = code;
  err["message"] = msg;
  if (data && !data->is_null()) err["data"] = *data;
  std::string out = R"({"jsonrpc":"2.0","id":)";
  append_json(out, id);
  out += R"(,"error":)";
  out += json::serialize(err);
  out += '}';
  return well_formed(std::move(out));
}

namespace {
// `"method":...,"params":...}` closing a request or a notification.
std::string finish_call(std::string out, std::string_view method, const json::value& params) {
  out += R"("method":)";
  append_json_string(out, method);
  if (!params.is_null()) {
    out += R"(,"params":)";
    append_json(out, params);
  }
  out += '}';
  return well_formed(std::move(out));
}
}  // namespace

std::string make_request(const json::value& id, std::string_view method,
                         const json::value& params) {
  std::string out = begin_message(R"({"jsonrpc":"2.0","id":)");
  append_id(out, id);
  out += ',';
  return finish_call(std::move(out), method, params);
}

std::string make_request_text(const json::value& id, std::string_view method,
                              std::string_view params_text) {
  std::string out;
  append_request_text(out, id, method, params_text);
  return out;
}

void append_request_text(std::string& out, const json::value& id, std::string_view method,
                         std::string_view params_text) {
  // Sized once, its parts appended with their lengths known.
  static constexpr std::string_view head = R"({"jsonrpc":"2.0","id":)",
                                    method_key = R"(,"method":)", params_key = R"(,"params":)";
  out.reserve(out.size() + head.size() + 24 + method_key.size() + method.size() + 2 +
              params_key.size() + params_text.size() + 1);
  out.append(head);
  append_id(out, id);
  out.append(method_key);
  append_json_string(out, method);
  out.append(params_key);
  out.append(params_text);
  out.push_back('}');
}

std::string make_notification(std::string_view method, const json::value& params) {
  return finish_call(begin_message(R"({"jsonrpc":"2.0",)"), method, params);
}

}  // namespace mcpmux
