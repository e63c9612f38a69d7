#include "core/code_run.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <fmt/format.h>

#include "core/timer.hpp"
#include "core/tool_error.hpp"

namespace mcpmux {
namespace {

std::string run_seconds(std::chrono::milliseconds t) {
  return fmt::format("{:g} s", static_cast<double>(t.count()) / 1000);
}

// "(line 3, column 7)" when the runner knew where; "" otherwise.
std::string error_position(const json::object& e) {
  const auto* line = e.if_contains("line");
  if (!line || !line->is_int64()) return {};
  const auto* column = e.if_contains("column");
  return column && column->is_int64()
             ? fmt::format(" (line {}, column {})", line->get_int64(), column->get_int64())
             : fmt::format(" (line {})", line->get_int64());
}

}  // namespace

json::object code_answer(const json::object& end) {
  if (const auto* d = end.if_contains("done"); d && d->is_object()) {
    const auto& done = d->get_object();
    std::string text = string_member(done, "logs");
    const auto* value = done.if_contains("value");
    if (value && !value->is_null())
      text += value->is_string() ? std::string(value->get_string()) : json::serialize(*value);
    else if (!text.empty() && text.back() == '\n')
      text.pop_back();
    if (text.empty()) text = "(the program printed nothing and returned nothing)";
    return json::object{
        {"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
  }
  const auto* ev = end.if_contains("error");
  const json::object none;
  const auto& e = ev && ev->is_object() ? ev->get_object() : none;
  const auto kind = string_member(e, "kind");
  const auto message = string_member(e, "message");
  std::string text;
  if (kind == "syntax") {
    text = fmt::format("The program did not compile: {}{}", message, error_position(e));
  } else if (kind == "exception") {
    text = fmt::format("The program threw {}{}", message, error_position(e));
    if (const auto stack = string_member(e, "stack"); !stack.empty())
      text += fmt::format("\n{}", stack);
  } else if (kind == "timeout" || kind == "memory" || kind == "output" || kind == "calls") {
    text = fmt::format("The program was stopped at its {} limit: {}.", kind, message);
  } else {
    text = fmt::format("The program failed: {}", message.empty() ? "no reason given" : message);
  }
  if (const auto logs = string_member(e, "logs"); !logs.empty())
    text += fmt::format("\nIt printed before it ended:\n{}", logs);
  return tool_error(std::move(text));
}

struct code_run::deadline {
  explicit deadline(boost::asio::io_context& io) : timer(io) {}
  steady_timer timer;
};

code_run::code_run(boost::asio::io_context& io, std::weak_ptr<code_host> host,
                   std::shared_ptr<transport> runner, std::string id, std::string self_tool,
                   code_limits limits)
    : host_(std::move(host)),
      runner_(std::move(runner)),
      id_(std::move(id)),
      self_tool_(std::move(self_tool)),
      limits_(limits),
      deadline_(std::make_unique<deadline>(io)) {}

code_run::~code_run() {
  if (runner_) runner_->close();
}

void code_run::start(std::string_view program, const std::vector<code_tool>& tools) {
  started_ = true;
  json::array list;
  for (const auto& t : tools) {
    tools_.insert(t.name);
    list.push_back(json::object{{"name", t.name}, {"server", t.server}, {"tool", t.tool}});
  }
  runner_->start(*this);
  send(json::object{{"program", program},
                    {"tools", std::move(list)},
                    {"limits", json::object{{"wall_ms", limits_.wall.count()},
                                            {"cpu_ms", limits_.cpu.count()},
                                            {"output_bytes", limits_.output_bytes},
                                            {"calls", limits_.calls}}}});
  // The runner keeps its own time; this one holds when it does not (a runner that hangs, or
  // a program that escaped and stopped its watch).
  deadline_->timer.expires_after(limits_.wall + limits_.grace);
  deadline_->timer.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self) return;
    self->fail(fmt::format("The program was stopped at its timeout limit: it ran longer than {}.",
                           run_seconds(self->limits_.wall)));
  });
}

void code_run::on_message(std::string_view text) {
  if (ended_) return;
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  if (ec || !v.is_object())
    return fail(
        "The program's runner broke its protocol (a line that is not a JSON object); "
        "the program was stopped.");
  handle(v.get_object());
}

void code_run::handle(const json::object& line) {
  if (line.contains("call")) return inner_call(line);
  if (line.contains("done") || line.contains("error")) return finish(code_answer(line));
  // {"ready": true}, or anything else a runner might say: nothing to do.
}

void code_run::inner_call(const json::object& line) {
  const auto& id = line.at("call");
  if (!id.is_int64() && !id.is_string())
    return fail("The program's runner broke its protocol (a call without a valid id).");
  const auto key = serialize_id(id);
  if (inner_.count(key))
    return fail("The program's runner broke its protocol (a call id already in flight).");
  // Counted here as well: a program that escaped the runner's count still meets this one.
  if (++calls_ > limits_.calls)
    return fail(
        fmt::format("The program was stopped at its calls limit: it made more than {} tool calls.",
                    limits_.calls));
  const auto tool = string_member(line, "tool");
  if (tool == self_tool_)
    return refuse(id, std::string(tool) + " cannot be called from inside a program");
  if (!tools_.count(std::string(tool)))
    return refuse(id, fmt::format("unknown tool {}: not one this program may call", tool));
  json::value arguments = json::object{};
  if (const auto* a = line.if_contains("arguments"); a && !a->is_null()) {
    if (!a->is_object()) return refuse(id, "the arguments of a tool call must be an object");
    arguments = *a;
  }
  auto host = host_.lock();
  if (!host) return cancel();
  // Held before the call starts: a call answered at once (refused by a limit or a
  // confirmation) finds its place and leaves it.
  inner_.emplace(key, nullptr);
  auto c = host->start_inner_call(shared_from_this(), id, tool, std::move(arguments));
  if (!c) {
    inner_.erase(key);
    return refuse(id, fmt::format("unknown tool {}: not one this program may call", tool));
  }
  if (auto it = inner_.find(key); it != inner_.end()) it->second = std::move(c);
}

void code_run::refuse(const json::value& id, std::string message) {
  send(json::object{{"result", id}, {"error", json::object{{"message", std::move(message)}}}});
}

void code_run::send(const json::object& line) {
  if (ended_ || !runner_) return;
  if (runner_->send(json::serialize(line)))
    fail("The program's runner stopped reading its input; the program was stopped.");
}

void code_run::call_replied(call& c, std::string text) {
  inner_.erase(c.key());
  if (ended_) return;
  boost::system::error_code ec;
  auto reply = json::parse(text, ec);
  const auto* o = ec ? nullptr : reply.if_object();
  json::object line;
  if (const auto* r = o ? o->if_contains("result") : nullptr; r && r->is_object()) {
    line = r->get_object();
  } else {
    const auto* e = o ? o->if_contains("error") : nullptr;
    const auto* m = e && e->is_object() ? e->get_object().if_contains("message") : nullptr;
    line["error"] = json::object{
        {"message", m && m->is_string() ? m->get_string() : json::string("no answer")}};
  }
  line["result"] = c.client_id();
  send(line);
}

void code_run::call_audited(audit_fields& row) {
  row.run = id_;
  if (auto host = host_.lock()) host->client().call_audited(row);
}

// The program does not see its calls' progress.
void code_run::on_progress(const json::object&) {}

bool code_run::client_supports(std::string_view capability) const {
  auto host = host_.lock();
  return host && host->client().client_supports(capability);
}

std::int64_t code_run::ask_client(std::string_view method, const json::value& params,
                                  response_handler done) {
  auto host = host_.lock();
  return host ? host->client().ask_client(method, params, std::move(done)) : 0;
}

void code_run::cancel_ask(std::int64_t id, std::string_view reason) {
  if (auto host = host_.lock()) host->client().cancel_ask(id, reason);
}

void code_run::on_oversize(std::size_t bytes) {
  fail(
      fmt::format("The program was stopped at its output limit: its runner wrote a line of {} "
                  "bytes.",
                  bytes));
}

void code_run::on_closed(std::error_code, std::string reason) {
  runner_.reset();  // closed already: nothing to stop
  fail(fmt::format("The program's runner ended before the program did ({}).", reason));
}

void code_run::finish(json::object result) {
  if (ended_) return;
  stop();
  if (auto host = host_.lock()) host->run_answered(*this, std::move(result));
}

void code_run::fail(std::string text) {
  finish(tool_error(std::move(text)));
}

void code_run::cancel() {
  if (!ended_) stop();
}

void code_run::stop() {
  ended_ = true;
  deadline_->timer.cancel();
  // Calls the program did not wait for, or that were in flight when it failed.
  for (auto& [key, c] : std::exchange(inner_, {}))
    if (c) c->cancel("the program ended");
  if (runner_) std::exchange(runner_, nullptr)->close();
}

}  // namespace mcpmux
