// Session: parses a client's messages, answers MCP and control methods, routes calls upstream.
#include "core/session.hpp"

#include <boost/json/serialize.hpp>

#include "core/error.hpp"

namespace mcpmux {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

std::string_view negotiate(std::string_view requested) {
  for (auto v : supported_protocol_versions)
    if (v == requested) return v;
  return std::end(supported_protocol_versions)[-1];
}

}  // namespace

std::shared_ptr<session> session::start(manager& m, std::shared_ptr<transport> t, std::uint64_t id) {
  auto s = std::make_shared<session>(m, std::move(t), id);
  m.attach(s, id);
  m.add_listener(s.get());
  s->transport_->start(*s);
  s->log_.debug("connected");
  return s;
}

session::session(manager& m, std::shared_ptr<transport> t, std::uint64_t id)
    : manager_(m), transport_(std::move(t)), id_(id), log_("session " + std::to_string(id)) {}

session::~session() {
  manager_.remove_listener(this);
  transport_->close();
}

void session::close() { end("daemon stopping"); }

// The one way a session ends: its calls are cancelled upstream and late answers dropped.
void session::end(std::string_view why) {
  if (ended_) return;
  ended_ = true;
  auto self = shared_from_this();
  manager_.remove_listener(this);
  for (auto& [id, c] : calls_)
    if (auto up = c.up.lock()) up->cancel(c.token, "client disconnected");
  if (!calls_.empty()) log_.debug("cancelled {} calls in flight", calls_.size());
  calls_.clear();
  transport_->close();
  log_.debug("closed: {}", why);
  manager_.detach(id_);
}

void session::send(std::string text) {
  if (ended_) return;
  if (auto ec = transport_->send(std::move(text))) {
    if (ec == errc::queue_full)
      log_.warn("client is not reading ({} bytes queued); disconnecting it", transport_->queued_bytes());
    end(ec.message());
  }
}

void session::reply_error(const json::value& id, int code, std::string_view text) {
  send(make_error(id, code, text));
}

void session::on_message(std::string_view text) {
  if (ended_) return;
  auto parsed = parser_.parse(text);
  if (auto* err = std::get_if<rpc_error>(&parsed)) {
    log_.debug("rejected a message ({}): {}", err->message, clip(text));
    return reply_error(err->id, err->code, err->message);
  }
  auto& msg = std::get<message>(parsed);
  switch (msg.kind) {
    case message_kind::request:
      return handle_request(msg);
    case message_kind::notification:
      return handle_notification(msg);
    case message_kind::response:
    case message_kind::error_response:
      // mcpmux sends clients no requests yet, so no answer is expected.
      log_.debug("ignored a response to id {} that nothing asked for", json::serialize(msg.id()));
      return;
  }
}

void session::on_oversize(std::size_t bytes) {
  log_.warn("message of {} bytes exceeds max_message_bytes; closing the connection", bytes);
  reply_error(nullptr, rpc_code::invalid_request,
              "Invalid Request: message of " + std::to_string(bytes) + " bytes exceeds the limit of " +
                  std::to_string(manager_.current_config().daemon.max_message_bytes) + " bytes");
  end("oversize message");
}

void session::on_closed(std::error_code, std::string reason) { end(reason); }

void session::on_tools_changed() {
  if (initialized_) send(make_notification("notifications/tools/list_changed", nullptr));
}

void session::handle_request(message& msg) {
  const auto method = msg.method();
  const auto& id = msg.id();
  if (starts_with(method, "mcpmux/")) {
    auto out = manager_.control(method, msg.params(), id_);
    if (auto* err = std::get_if<rpc_error>(&out)) return send(make_error(id, err->code, err->message, &err->data));
    return send(make_result(id, std::get<json::value>(out)));
  }
  if (method == "initialize") return initialize(msg);
  if (method == "ping") return send(make_result(id, json::object{}));
  if (!initialized_)
    return reply_error(id, rpc_code::invalid_request,
                       "Invalid Request: session not initialized; send \"initialize\" first");
  if (method == "tools/list") {
    // Early in the daemon's life the list waits (briefly) for servers still starting.
    manager_.when_settled([weak = weak_from_this(), id = json::value(id)] {
      auto self = weak.lock();
      if (!self || self->ended_) return;
      std::string out = R"({"jsonrpc":"2.0","id":)";
      out += json::serialize(id);
      out += R"(,"result":{"tools":)";
      out += self->manager_.tools_json();
      out += "}}";
      self->send(std::move(out));
    });
    return;
  }
  if (method == "tools/call") return call_tool(msg);
  reply_error(id, rpc_code::method_not_found, "Method not found: " + std::string(method));
}

void session::initialize(const message& msg) {
  const auto& params = msg.params();
  std::string_view requested;
  if (const auto* v = params.if_contains("protocolVersion"); v && v->is_string()) requested = v->get_string();
  protocol_version_ = negotiate(requested);
  std::string client = "unknown client";
  if (const auto* info = params.if_contains("clientInfo"); info && info->is_object())
    if (const auto* n = info->get_object().if_contains("name"); n && n->is_string()) client = n->get_string();
  log_.info("initialize from {} (protocol {})", client, protocol_version_);

  json::object result;
  result["protocolVersion"] = protocol_version_;
  result["capabilities"] = json::object{{"tools", json::object{{"listChanged", true}}}};
  result["serverInfo"] = json::object{{"name", "mcpmux"}, {"version", MCPMUX_VERSION}};
  if (auto ins = manager_.instructions(); !ins.empty()) result["instructions"] = std::move(ins);
  initialized_ = true;
  send(make_result(msg.id(), result));
}

void session::handle_notification(const message& msg) {
  const auto method = msg.method();
  if (method == "notifications/cancelled") {
    const auto* rid = msg.params().if_contains("requestId");
    if (!rid) return;
    auto it = calls_.find(json::serialize(*rid));
    if (it == calls_.end()) return;
    std::string reason = "cancelled by client";
    if (const auto* r = msg.params().if_contains("reason"); r && r->is_string()) reason = r->get_string();
    if (auto up = it->second.up.lock()) up->cancel(it->second.token, reason);
    calls_.erase(it);
    return;
  }
  // notifications/initialized and others need no action.
}

void session::call_tool(message& msg) {
  const auto id = msg.id();
  auto& params = msg.body["params"];
  auto* p = params.if_object();
  const auto* name = p ? p->if_contains("name") : nullptr;
  if (!name || !name->is_string())
    return reply_error(id, rpc_code::invalid_params, "Invalid params: tools/call needs a string \"name\"");
  const auto* entry = manager_.find_tool(name->get_string());
  if (!entry)
    return reply_error(id, rpc_code::invalid_params, "Unknown tool: " + std::string(name->get_string()));
  auto up = manager_.find_upstream(entry->server);
  if (!up) return reply_error(id, rpc_code::invalid_params, "Unknown tool: " + std::string(name->get_string()));

  (*p)["name"] = entry->original;
  auto key = json::serialize(id);
  auto done = [weak = weak_from_this(), id, key](rpc_outcome out) {
    auto self = weak.lock();
    if (!self || self->ended_) return;  // the client is gone: the late answer is dropped
    self->calls_.erase(key);
    auto& body = out.reply->body;
    if (out.reply->kind == message_kind::response) return self->send(make_result(id, body["result"]));
    // Forward the server's error object as it is, under the client's id.
    std::string text = R"({"jsonrpc":"2.0","id":)";
    text += json::serialize(id);
    text += R"(,"error":)";
    text += json::serialize(body["error"]);
    text += '}';
    self->send(std::move(text));
  };
  // Recorded before the call: a call that fails at once answers (and erases it) inside call().
  calls_[key] = in_flight{up, 0};
  const auto token = up->call("tools/call", std::move(params), std::move(done));
  if (auto it = calls_.find(key); it != calls_.end()) it->second.token = token;
}

}  // namespace mcpmux
