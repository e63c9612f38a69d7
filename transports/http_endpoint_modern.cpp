// /mcp in the 2026-07-28 era: stateless POSTs. Each request is checked at the HTTP level
// (MCP-Protocol-Version equal to the body's _meta version, Mcp-Method, Mcp-Name, a tool's
// Mcp-Param-* headers equal to its arguments), then served by
// a session of its own that lives as long as the request: a JSON answer, an SSE stream when
// progress comes first, or — for subscriptions/listen — a stream open until the client closes
// it. No Mcp-Session-Id, no GET stream; closing the stream cancels the request.
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "protocol/error.hpp"
#include "protocol/modern.hpp"
#include "protocol/param_headers.hpp"
#include "protocol/versions.hpp"
#include "transports/http_endpoint_detail.hpp"
#include "transports/http_text.hpp"

namespace mcpmux::http_server {

http::status modern_status(std::string_view json_reply) {
  if (json_reply.find("\"error\"") == std::string_view::npos) return http::status::ok;
  error_code ec;
  const auto v = json::parse(json_reply, ec);
  const auto* e = !ec && v.is_object() ? v.get_object().if_contains("error") : nullptr;
  const auto* code = e && e->is_object() ? e->get_object().if_contains("code") : nullptr;
  if (!code || !code->is_int64()) return http::status::ok;
  switch (code->get_int64()) {
    case rpc_code::method_not_found:
      return http::status::not_found;
    case rpc_code::header_mismatch:
    case rpc_code::missing_capability:
    case rpc_code::unsupported_version:
      return http::status::bad_request;
    default:
      return http::status::ok;
  }
}

bool endpoint_impl::modern_post(const request& req, const message& msg) {
  if (mcp::is_modern_version(sv(req["MCP-Protocol-Version"]))) return true;
  return msg.kind == message_kind::request && mcp::has_modern_meta(msg.params());
}

// The HTTP-level checks of a modern request, or its refusal. (A plain function: GCC 12 destroys
// temporaries of conditional expressions inside co_await twice.)
static std::optional<response> check_modern_request(const request& req, const message& msg,
                                                    const http_endpoint_options& opt) {
  const bool ka = req.keep_alive();
  const auto refuse = [&](int code, const std::string& text, const json::value& id) {
    return make_response(
        code == rpc_code::method_not_found ? http::status::not_found : http::status::bad_request,
        ka, make_error(id, code, text));
  };
  if (msg.kind == message_kind::notification)  // only notifications/cancelled, a stdio matter
    return make_response(http::status::accepted, ka);
  if (msg.kind != message_kind::request)
    return refuse(rpc_code::invalid_request,
                  "Invalid Request: 2026-07-28 clients send no responses", nullptr);
  const json::value& id = msg.id();
  // The header first: one that disagrees with the body is -32020 whatever the body says.
  const auto hv = sv(req["MCP-Protocol-Version"]);
  if (const auto* m = msg.params().if_contains("_meta"); m && m->is_object())
    if (const auto* v = m->get_object().if_contains(mcp::meta_key::protocol_version);
        v && v->is_string() && !hv.empty() && hv != std::string_view(v->get_string()))
      return refuse(rpc_code::header_mismatch,
                    "Header mismatch: MCP-Protocol-Version header '" + clip(hv, 40) +
                        "' does not match _meta '" + clip(v->get_string(), 40) + "'",
                    id);
  auto meta = mcp::read_request_meta(msg.params());
  if (const auto* err = meta.if_error())
    return make_response(http::status::bad_request, ka,
                         make_error(id, err->code, err->message, &err->data));
  const auto& version = meta->version;
  if (hv.empty())
    return refuse(rpc_code::header_mismatch,
                  "Header mismatch: the MCP-Protocol-Version header is required", id);
  if (hv != version)
    return refuse(rpc_code::header_mismatch,
                  "Header mismatch: MCP-Protocol-Version header '" + clip(hv, 40) +
                      "' does not match _meta '" + version + "'",
                  id);
  const auto hm = sv(req["Mcp-Method"]);
  if (hm.empty())
    return refuse(rpc_code::header_mismatch, "Header mismatch: the Mcp-Method header is required",
                  id);
  if (hm != msg.method())
    return refuse(rpc_code::header_mismatch,
                  "Header mismatch: Mcp-Method header '" + clip(hm, 60) +
                      "' does not match body method '" + std::string(msg.method()) + "'",
                  id);
  if (auto want = mcp::named_target(msg)) {
    const auto raw = sv(req["Mcp-Name"]);
    if (raw.empty())
      return refuse(
          rpc_code::header_mismatch,
          "Header mismatch: the Mcp-Name header is required for " + std::string(msg.method()), id);
    auto got = mcp::decode_header_value(raw);
    if (!got || *got != *want)
      return refuse(rpc_code::header_mismatch,
                    "Header mismatch: Mcp-Name header value '" + clip(raw, 60) +
                        "' does not match body value '" + clip(*want, 60) + "'",
                    id);
    // The arguments a tool mirrors into Mcp-Param-* headers must say what the body says.
    if (msg.method() == "tools/call" && opt.tool_param_headers) {
      const auto* args = msg.params().if_contains("arguments");
      if (auto headers = opt.tool_param_headers(*want); headers && args && args->is_object()) {
        auto text = mcp::check_param_headers(
            *headers, args->get_object(),
            [&](std::string_view name) -> std::optional<std::string_view> {
              auto it = req.find(std::string(mcp::param_header_prefix) + std::string(name));
              if (it == req.end()) return std::nullopt;
              return sv(it->value());
            });
        if (!text.empty()) return refuse(rpc_code::header_mismatch, text, id);
      }
    }
  }
  return std::nullopt;
}

awaitable<bool> endpoint_impl::handle_modern_post(conn_ptr c, request& req, message msg) {
  const bool ka = req.keep_alive();
  if (auto refusal = check_modern_request(req, msg, opt_))
    co_return co_await reply(*c, std::move(*refusal));
  // A session for this request alone (no Mcp-Session-Id: the era is stateless).
  auto s = std::make_shared<http_session>(io_, "modern", opt_, [](const std::string&) {});
  s->set_profile(profile_of(req));
  on_session_(s, s->profile(), access_.token_name(sv(req[http::field::authorization])));
  if (!s->started())
    co_return co_await reply(*c,
                             error_response(http::status::service_unavailable, ka, http_error_code,
                                            "Service Unavailable: cannot serve the request"));
  auto st = s->open_post(msg, json::serialize(msg.id()), false, c->id);
  st->modern = true;
  const std::string body = std::move(req.body());
  s->receive(std::move(msg), body, st);
  const bool again = co_await run_stream(c, s, st, {}, ka);
  s->terminate(
      "request over");  // ends its session: a listen stream, or the call if the client left
  co_return again;
}

}  // namespace mcpmux::http_server
