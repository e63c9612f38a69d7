// A session's code mode (docs/code-mode.md): mcpmux__run_code starts the client's program in a
// fresh runner (core/code_run.hpp), each tool call the program makes is started here as an
// ordinary call of this client's — its profile, trust, confirmation, limits, redaction and
// audit — with the run as its caller, and the program's answer is capped by max_result_bytes
// like any result. `format: "typescript"` of the search tool is answered here too.
#include <boost/json/serialize.hpp>

#include <fmt/format.h>

#include "base/random.hpp"
#include "core/session.hpp"
#include "core/tool_error.hpp"
#include "core/upstream.hpp"
#include "protocol/modern.hpp"
#include "protocol/tool_declarations.hpp"

namespace mcpmux {
namespace {

// An exposed name split the way a program writes it: tools.SERVER.TOOL.
code_tool split_exposed(std::string name, std::string_view separator) {
  code_tool t;
  const auto at = name.find(separator);
  if (at != std::string::npos && at > 0 && at + separator.size() < name.size()) {
    t.server = name.substr(0, at);
    t.tool = name.substr(at + separator.size());
  } else {
    t.server = t.tool = name;
  }
  t.name = std::move(name);
  return t;
}

}  // namespace

bool session::run_code_call(message& msg, const mcp::request_meta* meta) {
  if (profile_.empty()) return false;
  const auto& params = msg.params();
  const auto* n = params.if_contains("name");
  // The name first: every tools/call of a profile's client passes here.
  if (!n || !n->is_string() || !n->get_string().ends_with("run_code")) return false;
  const auto* v = manager_.profile(profile_);
  if (!v || v->code_tool.empty() || n->get_string() != v->code_tool) return false;
  const auto& id = msg.id();
  const auto answer = [&](json::object result) {
    if (meta) mcp::mark_complete(result);
    send(make_result(id, result));
    return true;
  };
  const auto* a = params.if_contains("arguments");
  const auto* code = a && a->is_object() ? a->get_object().if_contains("code") : nullptr;
  if (!code || !code->is_string() || code->get_string().empty())
    return answer(tool_error(v->code_tool + " needs the program as a string \"code\""));
  code_limits limits;
  limits.wall = v->settings.code_timeout;
  limits.cpu = std::min(limits.cpu, limits.wall);
  limits.calls = v->settings.code_max_calls;
  if (code->get_string().size() > limits.program_bytes)
    return answer(tool_error(fmt::format("The program is longer than {} bytes; write a shorter one",
                                         limits.program_bytes)));
  const auto key = serialize_id(id);
  if (programs_.count(key) || calls_.contains(key))
    return answer(tool_error("A request with this id is already running"));
  auto runner = manager_.code_runner();
  if (!runner) {
    log_.warn("{}: {}", v->code_tool, runner.error().message);
    return answer(tool_error("Code mode cannot run a program here: " + runner.error().message));
  }
  const auto run_id = "r" + random_hex(4).value_or("0");
  std::vector<code_tool> tools;
  const auto& separator = manager_.current_config().daemon.tool_separator;
  for (const auto& [name, r] : v->shown.routes(collection::tools))
    tools.push_back(split_exposed(name, separator));
  program p;
  p.id = id;
  p.exposed = v->code_tool;
  p.modern = meta != nullptr;
  audit_begin(p.audit, "tools/call", "mcpmux", params);
  if (p.audit) p.audit->run = run_id;
  p.started = steady_clock::now();
  p.run = std::make_shared<code_run>(manager_.io(), std::weak_ptr<code_host>(shared_from_this()),
                                     std::move(*runner), run_id, v->code_tool, limits);
  auto run = p.run;
  programs_.emplace(key, std::move(p));
  log_.debug("{} {}: {} bytes, {} tools", v->code_tool, run_id, code->get_string().size(),
             tools.size());
  run->start(code->get_string(), tools);
  return true;
}

std::shared_ptr<call> session::start_inner_call(const std::shared_ptr<code_run>& run,
                                                json::value id, std::string_view name,
                                                json::value arguments) {
  // Looked up again at each call: a tool held or hidden since the program started is unknown.
  const auto* r = manager_.find(collection::tools, name, profile_);
  auto up = r ? manager_.upstream_for(r->server, id_) : nullptr;
  json::object params{{"name", r ? r->original : std::string(name)},
                      {"arguments", std::move(arguments)}};
  if (!up) {
    std::optional<audit_start> e;
    audit_begin(e, "tools/call", {}, params);
    if (e) e->run = run->id();
    audit_refused(e, "tools/call", name);
    return nullptr;
  }
  call::request req(std::move(params));
  req.client_id = std::move(id);
  req.key = serialize_id(req.client_id);
  req.method = "tools/call";
  req.exposed = name;
  req.redact = manager_.result_detector(*up, profile_);
  audit_begin(req.audit, req.method, up->name(), req.params.as_object());
  if (req.audit)
    req.audit->request_bytes =
        static_cast<std::int64_t>(json::serialize(req.params.as_object().at("arguments")).size());
  used(up->name());
  // The program gets the whole result (the cap applies to its own answer).
  auto c = std::make_shared<call>(std::move(req), std::weak_ptr<call_caller>(run));
  if (!confirm_first(c, up)) manager_.start_call(c, up, profile_);
  return c;
}

void session::run_answered(code_run& run, json::object result) {
  auto it = std::find_if(programs_.begin(), programs_.end(),
                         [&](const auto& kv) { return kv.second.run.get() == &run; });
  if (it == programs_.end()) return;
  auto p = std::move(it->second);
  programs_.erase(it);
  if (const auto cap = result_cap(nullptr); cap && *cap > 0)
    if (auto refused = cut_answer(result, page_rules{.cap = *cap,
                                                     .read_tool = read_tool(),
                                                     .what = "tool \"" + p.exposed + "\""}))
      result = tool_error(refused->message);
  const auto* is_error = result.if_contains("isError");
  const bool failed = is_error && is_error->is_bool() && is_error->get_bool();
  if (p.modern) mcp::mark_complete(result);
  auto text = make_result(p.id, result);
  end_program_audit(p, failed ? "tool_error" : "ok", text.size());
  log_.debug("{} {}: {} after {} calls", p.exposed, run.id(), failed ? "failed" : "answered",
             run.calls());
  send(std::move(text));
}

void session::program_cancelled(const std::string& key, std::string_view why) {
  auto it = programs_.find(key);
  if (it == programs_.end()) return;
  auto p = std::move(it->second);
  programs_.erase(it);
  p.run->cancel();
  end_program_audit(p, "cancelled", 0);
  log_.debug("program {} cancelled: {}", p.run->id(), why);
}

void session::end_program_audit(program& p, std::string_view outcome, std::size_t response_bytes) {
  if (!p.audit) return;
  auto f = p.audit->fields("tools/call", p.exposed);
  f.duration_us =
      std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - p.started)
          .count();
  f.outcome = outcome;
  f.response_bytes = static_cast<std::int64_t>(response_bytes);
  audit_write(f);
  p.audit.reset();
}

json::object session::declarations_of(const json::array& found) const {
  const auto& separator = manager_.current_config().daemon.tool_separator;
  std::vector<mcp::declared_tool> tools;
  tools.reserve(found.size());
  for (const auto& item : found) {
    const auto* t = item.if_object();
    const auto* name = t ? t->if_contains("name") : nullptr;
    if (!name || !name->is_string()) continue;
    auto split = split_exposed(std::string(name->get_string()), separator);
    mcp::declared_tool d;
    d.exposed = std::move(split.name);
    d.server = std::move(split.server);
    d.tool = std::move(split.tool);
    if (const auto* desc = t->if_contains("description"); desc && desc->is_string())
      d.description = desc->get_string();
    d.input_schema = t->if_contains("inputSchema");
    d.output_schema = t->if_contains("outputSchema");
    tools.push_back(std::move(d));
  }
  auto text = mcp::typescript_declarations(tools);
  return json::object{
      {"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}

}  // namespace mcpmux
