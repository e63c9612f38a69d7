// Session: parses a client's messages, answers MCP and control methods, routes requests upstream
// and the servers' progress, log messages and requests back.
#include "core/session.hpp"

#include <boost/json/serialize.hpp>

#include "core/guard.hpp"
#include "protocol/error.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {
namespace {

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}

std::string_view negotiate(std::string_view requested) {
  for (auto v : mcp::legacy_versions)
    if (v == requested) return v;
  return mcp::latest_legacy_version;
}

std::string_view list_changed_method(collection c) {
  switch (c) {
    case collection::tools:
      return "notifications/tools/list_changed";
    case collection::prompts:
      return "notifications/prompts/list_changed";
    case collection::resources:
    case collection::resource_templates:
      return "notifications/resources/list_changed";
  }
  return {};
}

}  // namespace

std::shared_ptr<session> session::start(manager& m, std::shared_ptr<transport> t, std::uint64_t id,
                                        client_identity who) {
  auto s = std::make_shared<session>(m, std::move(t), id, std::move(who));
  m.attach(s, id);
  m.add_listener(s.get());
  s->transport_->start(*s);
  s->log_.debug("connected");
  return s;
}

session::session(manager& m, std::shared_ptr<transport> t, std::uint64_t id, client_identity who)
    : manager_(m),
      transport_(std::move(t)),
      id_(id),
      who_(std::move(who)),
      log_("session " + std::to_string(id)) {
  auto p = manager_.profile_for(who_);
  if (p)
    profile_ = std::move(*p);
  else
    log_.warn("{}; it sees everything", p.error().message);
  if (!profile_.empty()) log_.debug("profile {}", profile_);
}

void session::profile_removed() {
  log_.info("profile {} was removed by a reload; the client sees everything now", profile_);
  profile_.clear();
  found_.clear();
}

session::~session() {
  manager_.remove_listener(this);
  transport_->close();
}

void session::close() {
  end("daemon stopping");
}

// The one way a session ends: its calls are cancelled upstream and late answers dropped.
void session::end(std::string_view why) {
  if (ended_) return;
  ended_ = true;
  auto self = shared_from_this();
  manager_.remove_listener(this);
  auto calls = calls_.take_all();
  for (auto& [key, c] : calls) c->cancel("client disconnected");
  while (!programs_.empty()) program_cancelled(programs_.begin()->first, "client disconnected");
  if (!calls.empty()) log_.debug("cancelled {} calls in flight", calls.size());
  log_calls_.clear();
  // A modern client's cut results outlive its connection (its next request comes on another).
  if (era_ != mcp::era::modern) manager_.results().forget(page_owner());
  for (auto& [id, e] : asked_.take_all()) e.handler({errc::cancelled, std::nullopt});
  transport_->close();
  log_.debug("closed: {}", why);
  manager_.detach(id_);
}

void session::send(std::string text) {
  if (!ended_) sent(transport_->send(std::move(text)));
}

void session::send(spliced_text text) {
  if (!ended_) sent(transport_->send_spliced(std::move(text)));
}

void session::sent(std::error_code ec) {
  if (!ec) return;
  if (ec == errc::queue_full)
    log_.warn("client is not reading ({} bytes queued); disconnecting it",
              transport_->queued_bytes());
  end(ec.message());
}

void session::reply_error(const json::value& id, int code, std::string_view text) {
  send(make_error(id, code, text));
}

void session::on_message(std::string_view text) {
  if (ended_) return;
  message_bytes_ = text.size();
  // An initialized legacy session's tools/call is forwarded without parsing its arguments.
  handle(era_ == mcp::era::legacy && initialized_ ? parser_.parse_call(text) : parser_.parse(text),
         text);
}

void session::on_message_buffer(std::string&& text) {
  if (ended_) return;
  // A long message's text is given back once parsed, before it is handled: a 10 MiB argument is
  // then held as its DOM and its forwarded copy, not three times.
  std::string mine = std::move(text);
  message_bytes_ = mine.size();
  auto parsed = parser_.parse(mine);
  if (parsed.ok()) std::string().swap(mine);
  handle(std::move(parsed), mine);
}

void session::on_message_parsed(message&& msg, std::string_view text) {
  if (ended_) return;
  message_bytes_ = text.size();
  handle(std::move(msg), text);
}

void session::handle(result<message> parsed, std::string_view text) {
  if (const auto* err = parsed.if_error()) {
    log_.debug("rejected a message ({}): {}", err->message, clip(text));
    return reply_error(err->id, err->code, err->message);
  }
  auto& msg = parsed.value();
  // The loop's edge for a client's message: whatever a handler throws fails this request alone.
  try {
    switch (msg.kind) {
      case message_kind::request:
        return handle_request(msg);
      case message_kind::notification:
        return handle_notification(msg);
      case message_kind::response:
      case message_kind::error_response:
        return handle_response(msg);
    }
  } catch (...) {
    const std::string why = what_of(std::current_exception());
    log_.error("handling {} failed: {}",
               msg.kind == message_kind::request || msg.kind == message_kind::notification
                   ? std::string(msg.method())
                   : std::string("a response"),
               why);
    if (msg.kind == message_kind::request && !ended_)
      reply_error(
          msg.id(), rpc_code::internal_error,
          "Internal error: mcpmux failed to handle " + std::string(msg.method()) + ": " + why);
  }
}

void session::on_oversize(std::size_t bytes) {
  log_.warn("message of {} bytes exceeds max_message_bytes; closing the connection", bytes);
  reply_error(nullptr, rpc_code::invalid_request,
              "Invalid Request: message of " + std::to_string(bytes) +
                  " bytes or more exceeds the limit of " +
                  std::to_string(manager_.current_config().daemon.max_message_bytes) + " bytes");
  end("oversize message");
}

void session::on_closed(std::error_code, std::string reason) {
  if (settling_ > 0) {
    closed_ = std::move(reason);  // the last of the waiting answers ends the session
    return;
  }
  end(reason);
}

void session::after_settled(std::function<void(session*)> answer) {
  ++settling_;
  manager_.when_settled([weak = weak_from_this(), answer = std::move(answer)] {
    auto self = weak.lock();
    if (!self || self->ended_) return;
    --self->settling_;
    answer(self.get());
    if (self->closed_ && self->settling_ == 0) self->end(*self->closed_);
  });
}

void session::on_list_changed(collection c) {
  if (era_ == mcp::era::modern) {
    const auto flag = c == collection::tools     ? "toolsListChanged"
                      : c == collection::prompts ? "promptsListChanged"
                                                 : "resourcesListChanged";
    return notify_listeners(flag, list_changed_method(c), {});
  }
  if (initialized_) send(make_notification(list_changed_method(c), nullptr));
}

void session::on_progress(const json::object& params) {
  send(make_notification("notifications/progress", params));
}

bool session::client_supports(std::string_view capability) const {
  return !ended_ && client_capabilities_.contains(capability);
}

std::int64_t session::ask_client(std::string_view method, const json::value& params,
                                 response_handler done) {
  if (ended_) {
    done({errc::cancelled, std::nullopt});
    return 0;
  }
  // No deadline of our own: the server's request to us is bounded by the server (which cancels
  // it: cancel_ask), and the session's end fails whatever is still open.
  const auto id =
      asked_.add(std::string(method), steady_clock::now(), std::nullopt, std::move(done));
  send(make_request(json::value(id), method, params));
  return id;
}

void session::cancel_ask(std::int64_t id, std::string_view reason) {
  if (ended_ || !asked_.take(id)) return;
  json::object p{{"requestId", id}};
  if (!reason.empty()) p["reason"] = reason;
  send(make_notification("notifications/cancelled", p));
}

void session::handle_response(message& msg) {
  const auto* n = msg.id().if_int64();
  auto e = n ? asked_.take(*n) : std::nullopt;
  if (!e) {
    log_.debug("ignored a response to id {} that nothing asked for", json::serialize(msg.id()));
    return;
  }
  e->handler({{}, std::move(msg)});
}

void session::handle_request(message& msg) {
  const auto method = msg.method();
  const auto& id = msg.id();
  if (method == "mcpmux/profile") return choose_profile(msg);
  if (starts_with(method, "mcpmux/")) {
    auto out = manager_.control(method, msg.params(), id_);
    if (const auto* err = out.if_error())
      return send(make_error(id, err->code, err->message, &err->data));
    return send(make_result(id, *out));
  }
  // The first MCP request decides the era: initialize (legacy), or a request that names its
  // version in _meta (2026-07-28). A connection keeps its era.
  if (era_ == mcp::era::unknown) {
    if (method == "server/discover" || mcp::has_modern_meta(msg.params()))
      era_ = mcp::era::modern;
    else if (method == "initialize")
      era_ = mcp::era::legacy;
  }
  if (era_ == mcp::era::modern) return handle_modern(msg);
  if (method == "initialize") return initialize(msg);
  if (method == "ping") return send(make_result(id, json::object{}));
  if (!initialized_)
    return reply_error(id, rpc_code::invalid_request,
                       "Invalid Request: session not initialized; send \"initialize\" first (MCP "
                       "2025-11-25 and earlier) or name the version in _meta "
                       "(\"io.modelcontextprotocol/protocolVersion\": \"2026-07-28\")");

  if (method == "tools/list") return serve_list(id, collection::tools, msg.params());
  if (method == "prompts/list") return serve_list(id, collection::prompts, msg.params());
  if (method == "resources/list") return serve_list(id, collection::resources, msg.params());
  if (method == "resources/templates/list")
    return serve_list(id, collection::resource_templates, msg.params());
  if (route_call(msg)) return;
  if (method == "resources/subscribe" || method == "resources/unsubscribe")
    return subscription(msg, method == "resources/subscribe");
  if (method == "logging/setLevel") return set_level(msg);
  reply_error(id, rpc_code::method_not_found, "Method not found: " + std::string(method));
}

bool session::route_call(message& msg, const mcp::request_meta* meta) {
  const auto method = msg.method();
  const auto& id = msg.id();
  const auto refuse = [&](const json::value& to, int code, std::string_view text) {
    reply_error(to, code, text);
    return true;
  };
  const auto answer = [&](std::string text) {
    send(std::move(text));
    return true;
  };
  const auto name_of = [&]() -> std::string_view {
    if (msg.unparsed) return msg.unparsed->tool;
    const auto* n = msg.params().if_contains("name");
    return n && n->is_string() ? std::string_view(n->get_string()) : std::string_view();
  };
  if (method == "tools/call" && read_result_call(msg, meta)) return true;
  if (method == "tools/call" && search_tool_call(msg, meta)) return true;
  if (method == "tools/call" && run_code_call(msg, meta)) return true;
  if (method == "tools/call" || method == "prompts/get") {
    const auto c = method == "tools/call" ? collection::tools : collection::prompts;
    const auto what = c == collection::tools ? "tool" : "prompt";
    const auto name = name_of();
    if (name.empty())
      return refuse(id, rpc_code::invalid_params,
                    fmt::format("Invalid params: {} needs a string \"name\"", method));
    const auto* r = manager_.find(c, name, profile_);
    auto up = r ? manager_.upstream_for(r->server, id_) : nullptr;
    if (!up) {
      if (msg.unparsed)
        audit_refused(method, name, *msg.unparsed);
      else
        audit_refused(method, name, msg.params());
      return refuse(id, rpc_code::invalid_params, fmt::format("Unknown {}: {}", what, name));
    }
    std::string exposed(name);
    if (msg.unparsed)
      msg.unparsed->rename(r->original);
    else
      msg.body["params"].as_object()["name"] = r->original;
    forward(msg, up, {}, std::move(exposed), meta);
    return true;
  }
  if (method == "resources/read") {
    const auto* uri = msg.params().if_contains("uri");
    if (!uri || !uri->is_string())
      return refuse(id, rpc_code::invalid_params,
                    "Invalid params: resources/read needs a string \"uri\"");
    auto r = manager_.route_resource(uri->get_string(), profile_);
    auto up = r ? manager_.upstream_for(r->server, id_) : nullptr;
    if (!up) {
      audit_refused(method, uri->get_string(), msg.params());
      return refuse(id, rpc_code::invalid_params,
                    "Unknown resource: " + std::string(uri->get_string()));
    }
    // Read through an alias: the contents name the URI the client knows.
    std::function<void(json::object&)> rewrite;
    if (r->original != uri->get_string())
      rewrite = [alias = std::string(uri->get_string()),
                 original = r->original](json::object& result) {
        if (auto* contents = result.if_contains("contents"); contents && contents->is_array())
          for (auto& c : contents->get_array())
            if (auto* co = c.if_object())
              if (auto* u = co->if_contains("uri");
                  u && u->is_string() && u->get_string() == original)
                *u = alias;
      };
    std::string exposed(uri->get_string());
    msg.body["params"].as_object()["uri"] = r->original;
    forward(msg, up, std::move(rewrite), std::move(exposed), meta);
    return true;
  }
  if (method == "completion/complete") {
    const auto* ref = msg.params().if_contains("ref");
    auto r = ref && ref->is_object() ? manager_.route_completion(ref->get_object(), profile_)
                                     : std::nullopt;
    auto up = r ? manager_.upstream_for(r->server, id_) : nullptr;
    if (!up)
      return refuse(
          id, rpc_code::invalid_params,
          "Invalid params: completion/complete refers to no known prompt or resource template");
    // Completion is optional: a server that does not offer it has no suggestions, which is an
    // answer, not an error (the gateway offers completions when any of its servers does).
    if (!up->capabilities().contains("completions"))
      return answer(make_result(
          id, json::object{
                  {"completion",
                   json::object{{"values", json::array{}}, {"total", 0}, {"hasMore", false}}}}));
    auto& out_ref = msg.body["params"].as_object()["ref"].as_object();
    out_ref[out_ref.contains("name") ? "name" : "uri"] = r->original;
    forward(msg, up, {}, {}, meta);
    return true;
  }
  return false;
}

void session::initialize(const message& msg) {
  const auto& params = msg.params();
  std::string_view requested;
  if (const auto* v = params.if_contains("protocolVersion"); v && v->is_string())
    requested = v->get_string();
  protocol_version_ = negotiate(requested);
  if (const auto* caps = params.if_contains("capabilities"); caps && caps->is_object())
    client_capabilities_ = caps->get_object();
  std::string client = "unknown client";
  if (const auto* info = params.if_contains("clientInfo"); info && info->is_object())
    if (const auto* n = info->get_object().if_contains("name"); n && n->is_string())
      client = n->get_string();
  client_name_ = client;
  log_.info("initialize from {} (protocol {})", client, protocol_version_);
  initialized_ = true;
  // Capabilities depend on what the servers offer: early in the daemon's life, wait (briefly)
  // for servers still starting.
  after_settled([id = msg.id()](session* self) {
    json::object result;
    result["protocolVersion"] = self->protocol_version_;
    result["capabilities"] = self->manager_.downstream_capabilities();
    result["serverInfo"] = mcp::implementation();
    if (auto ins = self->manager_.instructions(); !ins.empty())
      result["instructions"] = std::move(ins);
    self->send(make_result(id, result));
  });
}

void session::serve_list(const json::value& id, collection c, const json::object& params) {
  std::string cursor;
  if (const auto* cur = params.if_contains("cursor")) {
    if (!cur->is_string())
      return reply_error(id, rpc_code::invalid_params, "Invalid params: cursor must be a string");
    cursor = cur->get_string();
  }
  // Early in the daemon's life the list waits (briefly) for servers still starting.
  after_settled([id, c, cursor = std::move(cursor)](session* self) {
    auto page = self->manager_.page(c, cursor, self->profile_);
    if (!page) return self->reply_error(id, page.error().code, page.error().message);
    auto& p = *page;
    std::string found;
    if (c == collection::tools && !self->found_.empty() && cursor.empty())
      found = self->with_found_tools(p.items_json);
    if (c == collection::tools && cursor.empty())
      if (auto with = self->with_read_result(found.empty() ? std::string_view(p.items_json)
                                                           : std::string_view(found));
          !with.empty())
        found = std::move(with);
    // A profile that lists its tools and offers code mode: run_code at the list's end.
    if (c == collection::tools && cursor.empty() && !self->profile_.empty())
      if (const auto* v = self->manager_.profile(self->profile_); v && !v->code_item.empty())
        found = with_item(found.empty() ? std::string_view(p.items_json) : std::string_view(found),
                          v->code_item);
    // The list is spliced in where the catalogue keeps it: a megabyte of tools is not copied
    // for each tools/list.
    spliced_text out;
    out.shared =
        found.empty() ? p.items_json.text : std::make_shared<const std::string>(std::move(found));
    out.head += R"({"jsonrpc":"2.0","id":)";
    out.head += json::serialize(id);
    out.head += R"(,"result":{")";
    out.head += to_string(c);
    out.head += R"(":)";
    if (p.next_cursor) {
      out.tail += R"(,"nextCursor":)";
      out.tail += json::serialize(json::string(*p.next_cursor));
    }
    if (self->era_ == mcp::era::modern)
      out.tail += modern_list_members(self->manager_.list_cache_hint());
    out.tail += "}}";
    self->send(std::move(out));
  });
}

// The one way a request goes to a server: as a call, answered under the client's id. A modern
// request's differences are the call's data: its era, its capabilities, the result's marks.
void session::forward(message& msg, const std::shared_ptr<upstream>& up,
                      std::function<void(json::object&)> after, std::string exposed,
                      const mcp::request_meta* meta) {
  if (meta) {
    msg.parse_params();  // (a call read unparsed is a legacy client's)
    const auto& params = msg.params();
    if ((params.contains("requestState") || params.contains("inputResponses")) &&
        up->era() != mcp::era::modern)
      return reply_error(
          msg.id(), rpc_code::invalid_params,
          "Invalid params: requestState is unknown (not issued by mcpmux, and server \"" +
              up->name() + "\" does not speak 2026-07-28)");
    modern_result_rules(msg.method(), *up, *meta, after);
  }
  used(up->name());
  // Described in place: what the call keeps is not moved again.
  auto describe = [&](call::request& r) {
    r.unparsed = std::move(msg.unparsed);
    if (meta) {
      mcp::strip_protocol_meta(r.params.as_object());
      r.era = mcp::era::modern;
      r.capabilities = meta->capabilities;
    }
    r.client_id = msg.id();
    r.key = serialize_id(r.client_id);
    r.method = msg.method();
    r.exposed = std::move(exposed);
    r.after = std::move(after);
    r.redact = manager_.result_detector(*up, profile_);
    add_page_stage(r, up);
    if (r.unparsed)
      audit_begin(r.audit, r.method, up->name(), *r.unparsed);
    else
      audit_begin(r.audit, r.method, up->name(), r.params.as_object());
  };
  // (The params are moved in whole, not assigned: see call::request.)
  auto c = std::make_shared<call>(msg.unparsed ? json::value() : std::move(msg.body["params"]),
                                  std::weak_ptr<call_caller>(shared_from_this()),
                                  meta ? &manager_.mrtr() : nullptr, describe);
  // Entered before it starts: a call that fails at once is answered (and leaves) inside.
  call_entered(c, meta ? meta->log_level : std::string());
  if (confirm_first(c, up)) return;
  manager_.start_call(std::move(c), up, profile_);
}

void session::call_replied(call& c, std::string text) {
  call_left(c.key());
  send(std::move(text));
}

void session::subscription(message& msg, bool subscribe) {
  const auto& id = msg.id();
  const auto* uri = msg.params().if_contains("uri");
  if (!uri || !uri->is_string())
    return reply_error(id, rpc_code::invalid_params,
                       "Invalid params: a string \"uri\" is required");
  auto r = manager_.route_resource(uri->get_string(), profile_);
  if (!r || !manager_.find_upstream(r->server))
    return reply_error(id, rpc_code::invalid_params,
                       "Unknown resource: " + std::string(uri->get_string()));
  if (subscribe)
    return manager_.subscribe(
        id_, *r, [weak = weak_from_this(), id = json::value(id)](int code, std::string error) {
          auto self = weak.lock();
          if (!self || self->ended_) return;
          if (code != 0) return self->reply_error(id, code, error);
          self->send(make_result(id, json::object{}));
        });
  manager_.unsubscribe(id_, *r);
  send(make_result(id, json::object{}));
}

void session::set_level(const message& msg) {
  const auto* level = msg.params().if_contains("level");
  if (!level || !level->is_string() || log_severity(level->get_string()) < 0)
    return reply_error(
        msg.id(), rpc_code::invalid_params,
        "Invalid params: level must be one of debug, info, notice, warning, error, critical, "
        "alert, emergency");
  manager_.set_session_log_level(id_, std::string(level->get_string()));
  send(make_result(msg.id(), json::object{}));
}

void session::handle_notification(const message& msg) {
  const auto method = msg.method();
  if (method == "notifications/cancelled") {
    const auto* rid = msg.params().if_contains("requestId");
    if (!rid) return;
    const auto key = serialize_id(*rid);
    if (listens_.count(key)) return end_listen(key);
    std::string reason = "cancelled by client";
    if (const auto* r = msg.params().if_contains("reason"); r && r->is_string())
      reason = r->get_string();
    if (programs_.count(key)) return program_cancelled(key, reason);
    const auto* in_flight = calls_.find(key);
    if (!in_flight) return;
    auto c = *in_flight;
    call_left(key);
    c->cancel(reason);
    return;
  }
  if (method == "notifications/roots/list_changed") {
    for (const auto& name : servers_used_)
      if (auto up = manager_.find_upstream(name)) up->notify(method, json::object{});
    return;
  }
  // notifications/initialized and others need no action.
}

}  // namespace mcpmux
