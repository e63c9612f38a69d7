// JSON-RPC 2.0 parsing, classification and serialization.
#include "core/json_rpc.hpp"

#include <algorithm>
#include <cmath>

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

// Appends serialized JSON of `v` to `out` without an intermediate string (a 10 MiB result
// is then held twice at most, not three times).
void append_json(std::string& out, const json::value& v) {
  json::serializer sr;
  sr.reset(&v);
  while (!sr.done()) {
    const auto old = out.size();
    out.resize(old + std::max<std::size_t>(4096, old / 2));
    const auto written = sr.read(out.data() + old, out.size() - old);
    out.resize(old + written.size());
  }
}

}  // namespace

const json::value& message::id() const {
  auto* p = body.if_contains("id");
  return p ? *p : null_value;
}

std::string_view message::method() const {
  auto* p = body.if_contains("method");
  return p && p->is_string() ? std::string_view(p->get_string()) : std::string_view();
}

const json::object& message::params() const {
  auto* p = body.if_contains("params");
  return p && p->is_object() ? p->get_object() : empty_object;
}

bool valid_id(const json::value& v) {
  return v.is_string() || v.is_int64() || v.is_uint64();
}

std::variant<message, rpc_error> classify(json::value v) {
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

struct message_parser::impl {
  json::parser parser;
  static json::parse_options options() {
    json::parse_options o;
    o.max_depth = 256;  // deep enough for real payloads, shallow enough to bound the stack
    return o;
  }
  impl() : parser(json::storage_ptr(), options()) {}
};

message_parser::message_parser() : impl_(std::make_unique<impl>()) {}
message_parser::~message_parser() = default;

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

std::variant<message, rpc_error> message_parser::parse(std::string_view line) {
  auto& p = impl_->parser;
  p.reset();
  boost::system::error_code ec;
  p.write(line.data(), line.size(), ec);
  if (ec) return rpc_error{rpc_code::parse_error, "Parse error: " + ec.message(), nullptr};
  auto v = p.release();
  if (!all_finite(v))
    return rpc_error{rpc_code::parse_error, "Parse error: number out of range", nullptr};
  return classify(std::move(v));
}

std::string make_result(const json::value& id, const json::value& result) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  append_json(out, id);
  out += R"(,"result":)";
  append_json(out, result);
  out += '}';
  return out;
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
  return out;
}

std::string make_request(const json::value& id, std::string_view method,
                         const json::value& params) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  append_json(out, id);
  out += R"(,"method":)";
  out += json::serialize(json::string(method));
  if (!params.is_null()) {
    out += R"(,"params":)";
    append_json(out, params);
  }
  out += '}';
  return out;
}

std::string make_notification(std::string_view method, const json::value& params) {
  std::string out = R"({"jsonrpc":"2.0","method":)";
  out += json::serialize(json::string(method));
  if (!params.is_null()) {
    out += R"(,"params":)";
    append_json(out, params);
  }
  out += '}';
  return out;
}

}  // namespace mcpmux
