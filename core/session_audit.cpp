// A session's part of the audit log: each tools/call, prompts/get and resources/read gets an
// entry when it starts (who, profile, server, name, the request's size, its arguments when
// audit_arguments is on), which the call completes when it ends (core/call.cpp) and the session
// hands to the manager.
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

void session::audit_begin(std::optional<audit_entry>& e, std::string_view method,
                          std::string_view exposed, const std::string& server,
                          const json::object& params) {
  audit_row(e, method, exposed, server);
  if (e && manager_.current_config().daemon.audit_arguments)
    if (const auto* a = params.if_contains("arguments"))
      e->detail = redact(clip(json::serialize(*a), max_audited_arguments));
}

void session::audit_begin(std::optional<audit_entry>& e, std::string_view method,
                          std::string_view exposed, const std::string& server,
                          const unparsed_params& params) {
  audit_row(e, method, exposed, server);
  // The arguments' text as the client wrote it.
  if (e && manager_.current_config().daemon.audit_arguments && params.arguments_len)
    e->detail = redact(clip(std::string(params.arguments()), max_audited_arguments));
}

void session::audit_row(std::optional<audit_entry>& e, std::string_view method,
                        std::string_view exposed, const std::string& server) {
  if (!manager_.auditing() || !audited(method)) return;
  if (client_label_.empty()) {
    client_label_ = who_.transport;
    if (!who_.token.empty()) client_label_ += " token " + who_.token;
    if (who_.uid >= 0) client_label_ += " uid " + std::to_string(who_.uid);
    if (who_.pid) client_label_ += " pid " + std::to_string(who_.pid);
    if (!who_.agent_program.empty()) client_label_ += " " + who_.agent_program;
  }
  e.emplace();
  e->time_ms = unix_now_ms();
  e->kind = method;
  e->client = client_label_;
  e->profile = profile_;
  e->server = server;
  e->name = exposed;
  e->request_bytes = static_cast<std::int64_t>(message_bytes_);
}

void session::audit_refused(std::string_view method, std::string_view name,
                            const json::object& params) {
  std::optional<audit_entry> e;
  audit_begin(e, method, name, {}, params);
  audit_refused(std::move(e));
}

void session::audit_refused(std::string_view method, std::string_view name,
                            const unparsed_params& params) {
  std::optional<audit_entry> e;
  audit_begin(e, method, name, {}, params);
  audit_refused(std::move(e));
}

void session::audit_refused(std::optional<audit_entry> e) {
  if (!e) return;
  e->outcome = "refused";
  manager_.audit(std::move(*e));
}

}  // namespace mcpmux
