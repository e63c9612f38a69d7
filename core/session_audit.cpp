// A session's part of the audit log: each tools/call, prompts/get and resources/read begins a
// row when it starts (when, the profile, the server, the request's size, its arguments when
// audit_arguments is on); the call completes it when it ends (core/call.cpp) and the session,
// saying who asked, writes it into the audit buffer in place.
#include <boost/json/serialize.hpp>

#include "base/redact.hpp"
#include "core/session.hpp"
#include "protocol/error.hpp"

namespace mcpmux {
namespace {

constexpr std::size_t max_audited_arguments = 4096;

bool audited(std::string_view method) {
  return method == "tools/call" || method == "prompts/get" || method == "resources/read";
}

}  // namespace

bool session::audit_open(std::optional<audit_start>& a, std::string_view method,
                         const std::string& server) {
  if (!manager_.auditing() || !audited(method)) return false;
  a.emplace();
  a->time_ms = unix_now_ms();
  a->request_bytes = static_cast<std::int64_t>(message_bytes_);
  a->profile = profile_;
  a->server = server;
  return manager_.current_config().daemon.audit_arguments;
}

void session::audit_begin(std::optional<audit_start>& a, std::string_view method,
                          const std::string& server, const json::object& params) {
  if (audit_open(a, method, server))
    if (const auto* args = params.if_contains("arguments"))
      a->detail = redact(clip(json::serialize(*args), max_audited_arguments));
}

void session::audit_begin(std::optional<audit_start>& a, std::string_view method,
                          const std::string& server, const unparsed_params& params) {
  // The arguments' text as the client wrote it.
  if (audit_open(a, method, server) && params.arguments_len)
    a->detail = redact(clip(std::string(params.arguments()), max_audited_arguments));
}

const std::string& session::client_label() {
  if (client_label_.empty()) {
    client_label_ = who_.transport;
    if (!who_.token.empty()) client_label_ += " token " + who_.token;
    if (who_.uid >= 0) client_label_ += " uid " + std::to_string(who_.uid);
    if (who_.pid) client_label_ += " pid " + std::to_string(who_.pid);
    if (!who_.agent_program.empty()) client_label_ += " " + who_.agent_program;
  }
  return client_label_;
}

void session::audit_write(audit_fields& row) {
  row.client = client_label();
  manager_.audit(row);
}

void session::audit_refused(std::string_view method, std::string_view name,
                            const json::object& params) {
  std::optional<audit_start> a;
  audit_begin(a, method, {}, params);
  audit_refused(a, method, name);
}

void session::audit_refused(std::string_view method, std::string_view name,
                            const unparsed_params& params) {
  std::optional<audit_start> a;
  audit_begin(a, method, {}, params);
  audit_refused(a, method, name);
}

void session::audit_refused(const std::optional<audit_start>& a, std::string_view method,
                            std::string_view name) {
  if (!a) return;
  auto f = a->fields(method, name);
  f.outcome = "refused";
  audit_write(f);
}

}  // namespace mcpmux
