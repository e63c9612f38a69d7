// Calls through an upstream, both ways: a client's request to the server (queued while the
// server is not ready, its progress token made unique on this server and routed back, resent
// once after a dropped connection, failed at its deadline), and the server's requests to a
// client (sampling, elicitation, roots: asked of the client whose call the server is serving,
// under that client's ids, and cancelled with it).
#include <fmt/format.h>
#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <ctime>

#include "core/rpc_peer.hpp"
#include "core/upstream_detail.hpp"
#include "protocol/error.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {
namespace {

// A moment as a person reads it in a message: the local time of day.
std::string clock_time(std::int64_t unix_ms) {
  const std::time_t t = unix_ms / 1000;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

}  // namespace

void upstream::start_call(std::shared_ptr<call> c) {
  if (paused_by_errors(*c)) return;
  c->up_ = weak_from_this();
  c->token_ = next_token_++;
  switch (visible_state()) {
    case upstream_state::ready:
      return send_call(std::move(c));
    case upstream_state::connecting:
    case upstream_state::backoff:
      enqueue(std::move(c));
      return expire_queue();
    case upstream_state::needs_login:
      return refuse_for_login(*c);
    case upstream_state::stopped:
    case upstream_state::disabled:
      c->finish(error_reply(rpc_code::connection_closed, "MCP server \"" + cfg_.name + "\" is " +
                                                             std::string(to_string(state()))));
  }
}

void upstream::request(std::string_view method, json::value params, response_handler done) {
  start_call(std::make_shared<call>(std::string(method), std::move(params), std::move(done)));
}

void upstream::record(const call& c, call_end end, steady_clock::time_point now) {
  const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(now - c.started_);
  stats_.record(elapsed, end != call_end::answered, c.tool());
  stats_.redacted += c.redacted();
  if (end == call_end::answered)
    calls_backoff_.succeeded();
  else if (end == call_end::server_error)
    calls_backoff_.failed(now);
}

void upstream::count_limited(std::string_view limit) {
  auto it = stats_.limited.find(limit);
  if (it == stats_.limited.end()) it = stats_.limited.emplace(std::string(limit), 0).first;
  ++it->second;
}

// Only a remote server: a paid API hammered by an agent's loop is what this is for, and a local
// child that fails every call is restarted by its own lifecycle when it dies.
bool upstream::paused_by_errors(call& c) {
  if (traits_.endpoint.empty()) return false;
  const auto now = steady_clock::now();
  const auto v = calls_backoff_.admit(now);
  if (v.probe) log_.info("trying one call after its calls' error back-off");
  if (v.go) return false;
  count_limited("error_backoff");
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(v.until - now);
  c.finish(refusal(
      c.method(),
      fmt::format("MCP server \"{}\" failed its last {} calls (errors or timeouts{}); mcpmux sends "
                  "it no calls for another {:.1f} s (until {}), then lets one through to try it",
                  cfg_.name, calls_backoff_.failures_in_row(),
                  last_error_.empty() ? "" : "; last: " + last_error_, left.count() / 1000.0,
                  clock_time(unix_now_ms() + left.count()))));
  return true;
}

void upstream::send_call(std::shared_ptr<call> c) {
  if (!peer_) {  // between connections: wait for the next one
    enqueue(std::move(c));
    return expire_queue();
  }
  const auto remaining = policy().send_timeout(c->started_, steady_clock::now());
  if (era_ == mcp::era::modern) add_era_meta(c->params_dom(), c.get());
  // The server's progress token is the request's wire id: progress finds its call by it.
  if (c->progress_token_)
    c->params_dom().as_object()["_meta"].as_object()["progressToken"] = peer_->next_id();
  // A page stage alone keeps the answer raw: only a long one is parsed (call::run_stages).
  const bool parse = c->done_ || c->r_.after || (c->r_.page_above && *c->r_.page_above == 0);
  const auto form = parse ? reply_form::parsed : reply_form::raw;
  // A tool's x-mcp-header arguments travel as headers too, where the connection takes them.
  auto headers = param_header_fields(*c);
  // The call is held by the request's tag until its answer has been handled: the answer's
  // closure names it by a plain pointer, so it needs no allocation of its own. (Its server is
  // the one it names.)
  auto answered = [p = c.get()](rpc_outcome&& out) {
    const auto c = p->shared_from_this();
    c->wire_id_.reset();
    auto self = c->up_.lock();
    if (!self)
      return c->finish(error_reply(rpc_code::connection_closed, "mcpmux is shutting down"));
    self->call_answered(c, std::move(out));
  };
  // A call read unparsed and not changed since goes as its text.
  const auto params = c->r_.unparsed ? request_params(std::string_view(c->r_.unparsed->text))
                                     : request_params(c->r_.params);
  c->wire_id_ = peer_->request(c->r_.method, params, remaining, std::move(answered), form, c,
                               std::move(headers));
}

void upstream::call_answered(const std::shared_ptr<call>& c, rpc_outcome&& out) {
  // A dropped connection is worth one more try on the next one when the retry policy says the
  // call cannot have run or cannot harm twice; the call waits in the queue, still bounded by its
  // original deadline.
  const bool dropped = out.ec == errc::transport_closed;
  // (Whether the tool is harmless twice is looked up in its server's list: only when it counts.)
  const call_policy::dropped_call drop{c->retried_, state() == upstream_state::stopped, !out.unsent,
                                       dropped && harmless_twice(*c)};
  if (dropped && policy().resend_after_drop(drop)) {
    c->retried_ = true;
    log_.info("{} failed with a dropped connection; resending once after the reconnect",
              c->r_.method);
    enqueue(c);
    if (state() == upstream_state::ready && peer_)
      flush_queue();
    else
      expire_queue();
    return;
  }
  if (!out.ec && fulfil_input(c, out)) return;
  if (!out.ec) return c->finish(std::move(out));
  if (out.ec == errc::timeout)
    return c->finish(error_reply(rpc_code::request_timeout,
                                 "MCP server \"" + cfg_.name + "\" did not answer " + c->r_.method +
                                     " within " + std::to_string(timeout_.count()) + "ms"));
  std::string why = last_error_.empty() ? out.ec.message() : last_error_;
  if (dropped && drop.reached_server && !drop.server_stopped) why = not_repeated(*c, drop, why);
  c->finish(error_reply(rpc_code::connection_closed, "MCP server \"" + cfg_.name + "\": " + why));
}

void upstream::add_era_meta(json::value& params, const call_owner* owner) const {
  if (era_ != mcp::era::modern) return;
  if (!params.is_object()) params = json::object{};
  auto& p = params.as_object();
  mcp::strip_protocol_meta(p);  // a resend to a server of another era, or a client's own
  json::object caps;
  if (owner) {
    for (const char* cap : {"roots", "sampling", "elicitation"})
      if (owner->client_supports(cap)) caps[cap] = json::object{};
    // The one extension mcpmux carries across: a task's id is scoped to its server on the way.
    if (owner->client_supports(mcp::tasks_extension))
      caps["extensions"] = json::object{{mcp::tasks_extension, json::object{}}};
  }
  auto meta = modern_request_meta(std::move(caps));
  if (!log_level_.empty()) meta["io.modelcontextprotocol/logLevel"] = log_level_;
  auto& m = p["_meta"];
  if (!m.is_object()) m = json::object{};
  for (auto& [k, v] : meta) m.as_object()[k] = std::move(v);
}

namespace {

std::string_view capability_of(std::string_view method) {
  if (method == "elicitation/create") return "elicitation";
  if (method == "sampling/createMessage") return "sampling";
  if (method == "roots/list") return "roots";
  return {};
}

// The answers of one input_required round, gathered from the client.
struct input_round {
  json::object responses;
  std::size_t left = 0;
  bool over = false;
};

}  // namespace

// A modern server's input_required for a legacy client: the client is asked each question as a
// real request (it declared the capability), and the call is sent again with the answers and
// the server's requestState — the legacy client never sees MRTR.
bool upstream::fulfil_input(const std::shared_ptr<call>& c, rpc_outcome& out) {
  constexpr int max_rounds = 10;
  if (era_ != mcp::era::modern || !out.reply || out.reply->kind != message_kind::response)
    return false;
  auto& reply = *out.reply;
  if (!reply.raw.empty()) {
    if (reply.raw.find("\"input_required\"") == std::string::npos || !reply.parse_raw())
      return false;
  }
  const auto* result = reply.body.if_contains("result");
  const auto* ro = result ? result->if_object() : nullptr;
  const auto* type = ro ? ro->if_contains("resultType") : nullptr;
  if (!type || !type->is_string() || type->get_string() != "input_required") return false;
  if (c->takes_input_required()) return false;  // a modern client retries itself
  const auto refuse = [&](std::string why) {
    c->finish(error_reply(rpc_code::invalid_request, "MCP server \"" + cfg_.name + "\" " + why));
    return true;
  };
  if (c->done_ || c->caller_.expired()) return refuse("asked for input after its client left");
  if (++c->input_rounds_ > max_rounds)
    return refuse("asked for input more than " + std::to_string(max_rounds) + " times in one call");
  json::object requests;
  if (const auto* r = ro->if_contains("inputRequests"); r && r->is_object())
    requests = r->get_object();
  std::optional<std::string> state;
  if (const auto* st = ro->if_contains("requestState"); st && st->is_string())
    state = std::string(st->get_string());
  for (const auto& [key, req] : requests) {
    const auto* m = req.is_object() ? req.get_object().if_contains("method") : nullptr;
    const std::string_view method = m && m->is_string() ? std::string_view(m->get_string()) : "";
    const auto cap = capability_of(method);
    if (cap.empty())
      return refuse("asked for an input mcpmux does not know: " + std::string(method));
    if (!c->client_supports(cap))
      return refuse("needs " + std::string(method) + ", which this client did not declare (\"" +
                    std::string(cap) + "\" capability)");
  }
  auto resend = [weak = weak_from_this(), c, state](json::object responses) {
    auto self = weak.lock();
    if (!self || c->finished()) return;
    auto& p = c->params_dom().as_object();
    p["inputResponses"] = std::move(responses);
    if (state)
      p["requestState"] = *state;
    else
      p.erase("requestState");
    self->enqueue(c);
    if (self->state() == upstream_state::ready && self->peer_) self->flush_queue();
  };
  if (requests.empty()) {  // state only: the server asks to be called again
    resend({});
    return true;
  }
  auto round = std::make_shared<input_round>();
  round->left = requests.size();
  for (const auto& [key, req] : requests) {
    const auto& rq = req.get_object();
    const auto* params = rq.if_contains("params");
    c->ask_client(rq.at("method").get_string(), params ? *params : json::value(json::object{}),
                  [round, key = std::string(key), resend, c](rpc_outcome a) {
                    if (round->over) return;
                    if (a.ec || !a.reply || a.reply->kind != message_kind::response) {
                      round->over = true;
                      c->finish(error_reply(rpc_code::invalid_request,
                                            "the client did not answer the server's question \"" +
                                                key + "\"" + (a.ec ? ": " + a.ec.message() : "")));
                      return;
                    }
                    round->responses[key] = std::move(a.reply->body["result"]);
                    if (--round->left == 0) {
                      round->over = true;
                      resend(std::move(round->responses));
                    }
                  });
  }
  return true;
}

// A call that may run twice without harm: anything but tools/call (reads, lists, completions,
// subscriptions), or a tool the server annotates readOnlyHint or idempotentHint.
bool upstream::harmless_twice(const call& c) const {
  if (c.method() != "tools/call") return true;
  const auto name = c.tool();
  if (name.empty()) return false;
  for (const auto& t : tools()) {
    const auto* n = t.if_contains("name");
    if (!n || !n->is_string() || n->get_string() != name) continue;
    const auto* a = t.if_contains("annotations");
    const auto hint = [&](std::string_view k) {
      const auto* h = a && a->is_object() ? a->get_object().if_contains(k) : nullptr;
      return h && h->is_bool() && h->get_bool();
    };
    return hint("readOnlyHint") || hint("idempotentHint");
  }
  return false;
}

// Why a call whose server went away mid-call was not sent again.
std::string upstream::not_repeated(const call& c, const call_policy::dropped_call& d,
                                   const std::string& why) const {
  std::string what = c.method();
  if (const auto tool = c.tool(); !tool.empty()) what += " \"" + std::string(tool) + "\"";
  std::string reason;
  if (d.already_resent)
    reason = "it was already sent again once";
  else if (cfg_.retry == retry_mode::never)
    reason = "retry = \"never\"";
  else
    reason =
        "it may already have run (retry = \"safe\" repeats only tools annotated "
        "readOnlyHint or idempotentHint)";
  return "the connection closed during " + what + " (" + why +
         "); the call was not repeated: " + reason;
}

void upstream::cancel(call& c, std::string_view reason) {
  if (c.wire_id_) {
    if (peer_) peer_->cancel(*std::exchange(c.wire_id_, std::nullopt), reason);
    return;
  }
  queue_.remove(c.token_);
}

// Into the queue at the call's place by start time.
void upstream::enqueue(std::shared_ptr<call> c) {
  if (state() == upstream_state::needs_login) return refuse_for_login(*c);
  const auto token = c->token_;
  const auto started = c->started_;
  queue_.push(token, started, std::move(c));
}

// A call to a server that waits for a person's login fails at once, saying what to run.
void upstream::refuse_for_login(call& c) {
  c.finish(
      error_reply(rpc_code::connection_closed, "MCP server \"" + cfg_.name + "\": " + last_error_));
}

std::vector<call*> upstream::calls_on_wire() const {
  std::vector<call*> out;
  if (peer_)
    for (auto* tag : peer_->tags()) out.push_back(static_cast<call*>(tag));
  return out;
}

void upstream::flush_queue() {
  while (state() == upstream_state::ready && peer_)
    if (auto e = queue_.pop())
      send_call(std::move(e->call));
    else
      return;
}

// Fails queued calls whose deadline passed while the server was still connecting.
void upstream::expire_queue() {
  const auto rules = policy();
  const auto now = steady_clock::now();
  for (auto& e : queue_.expire(rules, now)) {
    stats_.record(std::chrono::duration_cast<std::chrono::microseconds>(now - e.started), true);
    std::string why = "MCP server \"" + cfg_.name + "\" is not ready after " +
                      std::to_string(timeout_.count()) + "ms (" + std::string(to_string(state()));
    if (state() == upstream_state::backoff) why += ", attempt " + std::to_string(lc_.attempt());
    why += ")";
    if (!last_error_.empty()) why += ": " + last_error_;
    e.call->finish(error_reply(rpc_code::request_timeout, std::move(why)));
  }
  const auto next = queue_.next_deadline(rules);
  if (!next) return;
  timers_->queue.expires_at(*next);
  timers_->queue.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (auto self = weak.lock(); self && !ec) self->expire_queue();
  });
}

void upstream::handle_request(const message& msg) {
  if (!peer_) return;
  const auto method = msg.method();
  if (method == "ping") {
    peer_->send_raw(make_result(msg.id(), json::object{}));
  } else if (method == "sampling/createMessage") {
    ask_owner(msg, "sampling");
  } else if (method == "elicitation/create") {
    ask_owner(msg, "elicitation");
  } else if (method == "roots/list" && [&] {
               for (auto* c : calls_on_wire())
                 if (c->client_supports("roots")) return true;
               return false;
             }()) {
    ask_owner(msg, "roots");
  } else if (method == "roots/list") {
    // Configured roots, else the configured cwd, else none: servers such as server-filesystem
    // narrow their access to the roots they get, so an unasked-for root must not widen it.
    json::array roots;
    if (cfg_.roots.empty()) {
      if (!cfg_.cwd.empty())
        roots.push_back(json::object{{"uri", file_uri(cfg_.cwd)}, {"name", cfg_.cwd}});
    } else {
      for (const auto& r : cfg_.roots) roots.push_back(json::object{{"uri", r}});
    }
    peer_->send_raw(make_result(msg.id(), json::object{{"roots", std::move(roots)}}));
  } else {
    log_.debug("answered unsupported server request {} with -32601", method);
    peer_->send_raw(
        make_error(msg.id(), rpc_code::method_not_found,
                   "Method not found: mcpmux does not handle \"" + std::string(method) + "\""));
  }
}

// A server's request goes to the client it is serving. stdio has no link between a request and
// the call it serves, so: the client whose call to this server started last and that declared
// the capability (a heuristic, documented in docs/servers.md).
void upstream::ask_owner(const message& msg, std::string_view capability) {
  std::shared_ptr<call> owner;
  steady_clock::time_point latest{};
  for (auto* c : calls_on_wire())
    if (c->started_ >= latest && !c->done_ && c->client_supports(capability)) {
      owner = c->shared_from_this();
      latest = c->started_;
    }
  const json::value server_id = msg.id();
  if (!owner) {
    log_.info("no client can answer {} (none with a call in flight declared {})", msg.method(),
              capability);
    peer_->send_raw(
        make_error(server_id, rpc_code::method_not_found,
                   "Method not found: no connected client with a call in flight to this server "
                   "declared the \"" +
                       std::string(capability) + "\" capability"));
    return;
  }
  const auto client_id = owner->ask_client(
      msg.method(), msg.body.contains("params") ? msg.body.at("params") : json::value(nullptr),
      [weak = weak_from_this(), gen = generation_, server_id](rpc_outcome out) {
        auto self = weak.lock();
        if (!self || self->generation_ != gen || !self->peer_)
          return;  // answer to a dead connection
        self->asked_.forget(server_id, gen);
        if (out.ec) {
          self->peer_->send_raw(make_error(server_id, rpc_code::internal_error,
                                           "the client did not answer: " + out.ec.message()));
          return;
        }
        self->peer_->send_raw(relay_reply(server_id, *out.reply));
      });
  if (client_id) asked_.remember(server_id, owner, client_id, generation_);
}

void upstream::on_progress(const message& msg) {
  // The server's progress token is the request's wire id (send_call).
  const auto* tok = msg.params().if_contains("progressToken");
  const auto* id = tok ? tok->if_int64() : nullptr;
  auto* c = id && peer_ ? static_cast<call*>(peer_->tag_of(*id)) : nullptr;
  if (!c) return;
  // Progress proves the server is working: the call's deadline starts again, up to the cap.
  if (auto extend = policy().on_progress(c->started_, steady_clock::now()))
    peer_->extend(*id, *extend);
  c->on_progress(msg.params());
}

// The server gave up on a request it asked a client (sampling, elicitation, roots): the client is
// told, under its own id.
void upstream::on_cancelled(const message& msg) {
  const auto* rid = msg.params().if_contains("requestId");
  auto asked = rid ? asked_.take(*rid, generation_) : std::nullopt;
  if (!asked) return;
  std::string reason;
  if (const auto* r = msg.params().if_contains("reason"); r && r->is_string())
    reason = r->get_string();
  if (auto owner = asked->owner.lock()) owner->cancel_ask(asked->client_id, reason);
}

}  // namespace mcpmux
