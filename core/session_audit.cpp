// A session's part of the audit log: each tools/call, prompts/get and resources/read gets an
// entry when it starts (who, profile, server, name, the request's size, its arguments when
// audit_arguments is on) that is completed and handed to the manager when it ends.
#include <boost/json/serialize.hpp>

#include "core/protocol/error.hpp"
#include "core/protocol/redact.hpp"
#include "core/session.hpp"

namespace mcpmux {
namespace {

constexpr std::size_t max_audited_arguments = 4096;

bool audited(std::string_view method) {
  return method == "tools/call" || method == "prompts/get" || method == "resources/read";
}

}  // namespace

void session::audit_begin(in_flight& f, std::string_view method, std::string_view exposed,
                          const std::string& server, const json::object& params) {
  if (!manager_.auditing() || !audited(method)) return;
  if (client_label_.empty()) {
    client_label_ = who_.transport;
    if (!who_.token.empty()) client_label_ += " token " + who_.token;
    if (who_.uid >= 0) client_label_ += " uid " + std::to_string(who_.uid);
    if (who_.pid) client_label_ += " pid " + std::to_string(who_.pid);
    if (!who_.agent_program.empty()) client_label_ += " " + who_.agent_program;
  }
  auto e = std::make_shared<audit_entry>();
  e->time_ms = unix_now_ms();
  e->kind = method;
  e->client = client_label_;
  e->profile = profile_;
  e->server = server;
  e->name = exposed;
  e->request_bytes = static_cast<std::int64_t>(message_bytes_);
  if (manager_.current_config().daemon.audit_arguments)
    if (const auto* a = params.if_contains("arguments"))
      e->detail = redact(clip(json::serialize(*a), max_audited_arguments));
  f.audit = std::move(e);
  f.started = steady_clock::now();
}

void session::audit_end(in_flight& f, std::string_view outcome, std::size_t response_bytes) {
  if (!f.audit) return;
  auto e = std::move(f.audit);
  e->duration_us =
      std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - f.started)
          .count();
  e->outcome = outcome;
  e->response_bytes = static_cast<std::int64_t>(response_bytes);
  manager_.audit(std::move(*e));
}

void session::audit_refused(std::string_view method, std::string_view name,
                            const json::object& params) {
  in_flight f{};
  audit_begin(f, method, name, {}, params);
  audit_end(f, "refused");
}

std::string_view session::outcome_of(const rpc_outcome& out) {
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
