// The call: its ends (finish, cancel), the answer's text for either era, its audit row, and a
// modern caller's bridge to a legacy server's questions (input_required and the retry).
#include "core/call.hpp"

#include <boost/json/parse.hpp>

#include <cerrno>
#include <utility>

#include "core/mrtr.hpp"
#include "core/redaction.hpp"
#include "core/tool_error.hpp"
#include "core/upstream.hpp"
#include "protocol/error.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {
namespace {

std::string key_of(std::int64_t n) {
  std::string key(1, 'q');  // (not "q" + …: GCC 12 warns a false -Wrestrict there)
  key += std::to_string(n);
  return key;
}

std::optional<std::int64_t> number_of(std::string_view key) {
  if (key.size() < 2 || key[0] != 'q') return std::nullopt;
  std::int64_t n = 0;
  for (char c : key.substr(1)) {
    if (c < '0' || c > '9' || n > (INT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

// The caller's progress token in the request (the server is given the wire id instead).
std::optional<json::value> progress_token_of(const json::value& params) {
  const auto* p = params.if_object();
  const auto* meta = p ? p->if_contains("_meta") : nullptr;
  const auto* m = meta ? meta->if_object() : nullptr;
  const auto* tok = m ? m->if_contains("progressToken") : nullptr;
  if (!tok) return std::nullopt;
  return *tok;
}

// Whose fault a failure is: an error the request brought on itself says nothing of the server.
call_end end_of(const rpc_outcome& out) {
  if (!out.ec && out.reply->kind != message_kind::error_response) return call_end::answered;
  const auto* e = out.reply ? out.reply->body.if_contains("error") : nullptr;
  const auto* code = e && e->is_object() ? e->get_object().if_contains("code") : nullptr;
  if (code && code->is_int64()) switch (code->get_int64()) {
      case rpc_code::invalid_params:
      case rpc_code::method_not_found:
      case rpc_code::invalid_request:
        return call_end::caller_error;
    }
  return call_end::server_error;
}

}  // namespace

rpc_outcome refusal(std::string_view method, std::string text) {
  json::object body{{"jsonrpc", "2.0"}, {"id", nullptr}};
  if (method != "tools/call") {
    body["error"] = json::object{{"code", rpc_code::internal_error}, {"message", std::move(text)}};
    return {{}, message{message_kind::error_response, std::move(body)}};
  }
  body["result"] = tool_error(std::move(text));
  return {{}, message{message_kind::response, std::move(body)}};
}

call::call(request r, std::weak_ptr<call_caller> caller, mrtr_registry* mrtr)
    : caller_(std::move(caller)), r_(std::move(r)), mrtr_(mrtr) {
  begin();
}

void call::begin() {
  progress_token_ = progress_token_of(r_.params);
  started_ = steady_clock::now();
}

call::call(std::string method, json::value params, response_handler done)
    : done_(std::move(done)), r_(std::move(params)) {
  r_.method = std::move(method);
  begin();
}

const json::value& call::params() const {
  if (r_.unparsed) {
    r_.params = boost::json::parse(r_.unparsed->text);  // validated when read: only memory can fail
    r_.unparsed.reset();
  }
  return r_.params;
}

std::string_view call::tool() const {
  if (r_.method != "tools/call") return {};
  if (r_.unparsed) return r_.unparsed->tool;
  const auto* p = r_.params.if_object();
  const auto* name = p ? p->if_contains("name") : nullptr;
  return name && name->is_string() ? std::string_view(name->get_string()) : std::string_view();
}

void call::finish(rpc_outcome&& out) {
  if (finished_) return;
  drop_questions();  // the server's questions no longer matter once the call has ended
  if (!out.reply) {  // every end the caller hears of is an answer
    message msg{message_kind::error_response, {}};
    msg.body = json::object{
        {"error", {{"code", rpc_code::internal_error}, {"message", out.ec.message()}}}};
    out.reply = std::move(msg);
  }
  // Parked: the retry gets it, on whichever connection it comes (its first may be gone).
  if (r_.era == mcp::era::modern && r_.client_id.is_null() && !done_) {
    modern_bridge().held = std::move(out);
    return;
  }
  auto caller = caller_.lock();
  finished_ = true;
  const auto end = end_of(out);
  const auto now = steady_clock::now();  // its end, for the stats and the audit row
  // The answer first: the stats and the audit need not delay it.
  if (done_) {
    std::exchange(done_, {})(std::move(out));
  } else {
    // The stages first: a result they refuse is audited as the error it becomes.
    run_stages(*out.reply);
    // (before the reply's text is taken)
    const auto outcome = refused_.empty() ? outcome_of(out) : refused_;
    auto text = reply_text(out);
    const auto bytes = text.size();
    if (caller) caller->call_replied(*this, std::move(text));
    end_audit(outcome, bytes, now);
  }
  if (auto up = up_.lock()) up->record(*this, end, now);
  holds_.clear();
}

void call::cancel(std::string_view why) {
  if (finished_) return;
  finished_ = true;
  drop_questions();
  if (bridge_) bridge_->held.reset();
  if (auto undo = std::exchange(on_cancel_, {})) undo(*this);
  if (auto up = up_.lock()) up->cancel(*this, why);
  end_audit("cancelled", 0, steady_clock::now());
  holds_.clear();
}

void call::refuse(std::string text, std::string_view outcome) {
  refused_ = outcome;
  finish(refusal(r_.method, std::move(text)));
}

std::string call::reply_text(rpc_outcome& out) {
  auto& reply = *out.reply;
  if (r_.era != mcp::era::modern) return relay_reply(r_.client_id, reply);
  if (reply.kind == message_kind::error_response) {
    // 2026-07-28 names a missing resource -32602, where 2025-11-25 servers say -32002.
    if (auto* e = reply.body["error"].if_object())
      if (auto* code = e->if_contains("code");
          code && code->is_int64() && code->get_int64() == -32002)
        *code = rpc_code::invalid_params;
    return relay_reply(r_.client_id, reply);
  }
  // A success kept as text gets resultType spliced in; a parsed one on its object.
  const bool raw = !reply.raw.empty();
  if (!raw)
    if (auto* result = reply.body["result"].if_object()) mcp::mark_complete(*result);
  auto text = relay_reply(r_.client_id, reply);
  if (raw) mcp::mark_complete(text);
  return text;
}

void call::run_stages(message& reply) {
  if (reply.kind == message_kind::error_response) {
    if (auto* error = r_.redact ? reply.body.if_contains("error") : nullptr)
      redacted_ += mcp::redact_error(*error, *r_.redact);
    return;
  }
  // A raw answer is parsed only when a stage needs it: it may hold a secret, or it may be over
  // the page's cap (its text as received is never shorter than the text it holds).
  if (!reply.raw.empty()) {
    const bool long_one = r_.page_above && reply.raw.size() > *r_.page_above;
    const bool secret = r_.redact && mcp::may_hold_secret(reply.raw, *r_.redact);
    if ((!long_one && !secret) || !reply.parse_raw()) return;  // relayed as received
  }
  auto* value = reply.body.if_contains("result");
  auto* result = value ? value->if_object() : nullptr;
  if (!result) return;
  // Redacted first: what paging keeps for later reads holds no secret either.
  if (r_.redact) redacted_ += mcp::redact_result(*value, *r_.redact);
  if (r_.after) r_.after(*result);
  auto caller = r_.page_above ? caller_.lock() : nullptr;
  if (!caller) return;  // not paged, or nobody to answer
  if (auto refused = caller->page_result(*this, *result)) {
    reply.kind = message_kind::error_response;
    reply.body.erase("result");
    reply.body["error"] =
        json::object{{"code", refused->code}, {"message", std::move(refused->message)}};
  }
}

void call::end_audit(std::string_view outcome, std::size_t response_bytes,
                     steady_clock::time_point now) {
  if (!r_.audit) return;
  auto f = r_.audit->fields(r_.method, r_.exposed);
  f.duration_us = std::chrono::duration_cast<std::chrono::microseconds>(now - started_).count();
  f.outcome = outcome;
  f.response_bytes = static_cast<std::int64_t>(response_bytes);
  const auto redacted = redacted_.empty() ? std::string() : describe(redacted_);
  f.redacted = redacted;
  if (auto caller = caller_.lock()) caller->call_audited(f);
  r_.audit.reset();
}

void call::drop_questions() {
  if (!bridge_) return;
  for (auto& [n, q] : std::exchange(bridge_->questions, {}))
    q.done({errc::cancelled, std::nullopt});
}

void call::attach(std::weak_ptr<call_caller> caller, json::value client_id, std::string key) {
  caller_ = std::move(caller);
  r_.client_id = std::move(client_id);
  r_.key = std::move(key);
}

void call::resume(const json::object* responses) {
  auto& b = modern_bridge();
  if (responses)
    for (const auto& [key, value] : *responses) {
      const auto n = number_of(key);
      auto it = n ? b.questions.find(*n) : b.questions.end();
      // An answer is a result object; anything else leaves the question open (asked again).
      if (it == b.questions.end() || !value.is_object()) continue;
      auto done = std::move(it->second.done);
      b.questions.erase(it);
      message answer;
      answer.kind = message_kind::response;
      answer.body["result"] = value;
      done({{}, std::move(answer)});
    }
  if (b.held) {
    auto out = std::move(*b.held);
    b.held.reset();
    return finish(std::move(out));
  }
  if (!b.questions.empty()) ask_caller();
}

void call::on_progress(const json::object& params) {
  if (r_.client_id.is_null() || !progress_token_) return;  // parked, or nobody asked for it
  auto caller = caller_.lock();
  if (!caller) return;
  json::object p = params;
  p["progressToken"] = *progress_token_;
  if (r_.redact) {
    json::value v(std::move(p));
    redacted_ += mcp::redact_notification("notifications/progress", v, *r_.redact);
    p = std::move(v.as_object());
  }
  caller->on_progress(p);
}

bool call::client_supports(std::string_view capability) const {
  if (r_.era == mcp::era::modern)
    return r_.capabilities.contains(capability) || mcp::has_extension(r_.capabilities, capability);
  auto caller = caller_.lock();
  return caller && caller->client_supports(capability);
}

std::int64_t call::ask_client(std::string_view method, const json::value& params,
                              response_handler done) {
  if (r_.era != mcp::era::modern) {  // a legacy caller is asked with a real request
    auto caller = caller_.lock();
    if (!caller) {
      done({errc::cancelled, std::nullopt});
      return 0;
    }
    return caller->ask_client(method, params, std::move(done));
  }
  auto& b = modern_bridge();
  const auto n = b.next_key++;
  json::value p = params.is_object() ? params : json::value(json::object{});
  // An input request carries no _meta and no task of its own (2026-07-28 schema).
  p.as_object().erase("_meta");
  p.as_object().erase("task");
  b.questions[n] = question{std::string(method), std::move(p), std::move(done)};
  if (!r_.client_id.is_null()) ask_caller();
  return n;
}

std::int64_t call::ask_before_forwarding(std::string_view method, const json::value& params,
                                         response_handler done) {
  modern_bridge().asking_first = true;
  const auto id = ask_client(method, params, std::move(done));
  bridge_->asking_first = false;
  return id;
}

void call::cancel_ask(std::int64_t id, std::string_view reason) {
  if (r_.era != mcp::era::modern) {
    if (auto caller = caller_.lock()) caller->cancel_ask(id, reason);
    return;
  }
  if (bridge_) bridge_->questions.erase(id);
}

void call::ask_caller() {
  auto caller = caller_.lock();
  if (!caller || !mrtr_) return cancel("client disconnected");
  json::object requests;
  for (const auto& [n, q] : modern_bridge().questions)
    requests[key_of(n)] = json::object{{"method", q.method}, {"params", q.params}};
  json::object result;
  result["resultType"] = "input_required";
  result["inputRequests"] = std::move(requests);
  result["requestState"] = mrtr_->park(shared_from_this(), mrtr_registry::clock::now());
  auto text = make_result(std::exchange(r_.client_id, nullptr), result);
  const auto bytes = text.size();
  caller->call_replied(*this, std::move(text));
  // A question from mcpmux itself (a confirmation, before the call reached a server) keeps the
  // row open: its outcome is what the answer leads to (declined, or the server's answer).
  if (!bridge_->asking_first) end_audit("input_required", bytes, steady_clock::now());
}

std::string_view outcome_of(const rpc_outcome& out) {
  if (out.ec == errc::cancelled) return "cancelled";
  if (!out.reply) return "error";
  const auto& r = *out.reply;
  if (r.kind == message_kind::error_response) {
    const auto* e = r.body.if_contains("error");
    const auto* code = e && e->is_object() ? e->get_object().if_contains("code") : nullptr;
    return code && code->is_int64() && code->get_int64() == rpc_code::request_timeout ? "timeout"
                                                                                      : "error";
  }
  // A tool's own error: isError in its result (noted while the raw reply was scanned, or
  // parsed).
  if (!r.raw.empty()) return r.raw_is_error ? "tool_error" : "ok";
  const auto* result = r.body.if_contains("result");
  const auto* is_error =
      result && result->is_object() ? result->get_object().if_contains("isError") : nullptr;
  return is_error && is_error->is_bool() && is_error->get_bool() ? "tool_error" : "ok";
}

}  // namespace mcpmux
