// Session, the 2026-07-28 era: every request names its version and capabilities in _meta and is
// served on its own (no initialize); server/discover describes the gateway; lists carry cache
// hints; subscriptions/listen streams replace list_changed broadcasts and resources/subscribe;
// a legacy server's requests to its client become input_required results (mrtr.hpp).
#include <boost/json/serialize.hpp>

#include "base/text.hpp"
#include "core/session.hpp"
#include "protocol/error.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {
namespace {

json::object result_meta() {
  return json::object{{mcp::meta_key::server_info, mcp::implementation()}};
}

// The tasks one listen stream may watch: each is an entry of a server's listen filter.
constexpr std::size_t max_watched_tasks = 256;

// Methods of the legacy era that 2026-07-28 removed.
bool removed_method(std::string_view m) {
  return m == "initialize" || m == "ping" || m == "logging/setLevel" ||
         m == "resources/subscribe" || m == "resources/unsubscribe";
}

}  // namespace

std::string modern_list_members(const manager::cache_hint& hint) {
  std::string out = R"(,"resultType":"complete","ttlMs":)";
  out += std::to_string(hint.ttl_ms);
  out += R"(,"cacheScope":")";
  out += hint.scope;
  out += R"(","_meta":)";
  out += json::serialize(result_meta());
  return out;
}

void session::handle_modern(message& msg) {
  const auto method = msg.method();
  const auto& id = msg.id();
  if (method == "initialize")  // a connection keeps the era its first request chose
    return reply_error(id, rpc_code::method_not_found,
                       "Method not found: initialize is not part of MCP 2026-07-28 (this "
                       "connection's first request named 2026-07-28)");
  auto read = mcp::read_request_meta(msg.params());
  if (const auto* err = read.if_error())
    return send(make_error(id, err->code, err->message, &err->data));
  const auto& meta = *read;
  if (method == "server/discover") return discover(id);
  if (method == "tools/list") return serve_list(id, collection::tools, msg.params());
  if (method == "prompts/list") return serve_list(id, collection::prompts, msg.params());
  if (method == "resources/list") return serve_list(id, collection::resources, msg.params());
  if (method == "resources/templates/list")
    return serve_list(id, collection::resource_templates, msg.params());
  if (method == "subscriptions/listen") return listen(msg, meta);
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel")
    return route_task(msg, meta);
  const auto& params = msg.params();
  if (params.contains("requestState") || params.contains("inputResponses")) {
    if (method != "tools/call" && method != "prompts/get" && method != "resources/read")
      return reply_error(id, rpc_code::invalid_params,
                         "Invalid params: only tools/call, prompts/get and resources/read take "
                         "inputResponses and requestState");
    const auto* state = params.if_contains("requestState");
    if (state && state->is_string() && mrtr_registry::ours(state->get_string()))
      return resume_call(msg, meta);
    // Otherwise the state is a modern server's own: the retry goes to the server it names.
  }
  if (route_call(msg, &meta)) return;
  if (removed_method(method))
    return reply_error(
        id, rpc_code::method_not_found,
        "Method not found: " + std::string(method) + " is not part of MCP 2026-07-28");
  reply_error(id, rpc_code::method_not_found, "Method not found: " + std::string(method));
}

void session::discover(const json::value& id) {
  // Like initialize early in the daemon's life: wait (briefly) for servers still starting.
  after_settled([id](session* self) {
    json::object caps = self->manager_.downstream_capabilities();
    if (self->manager_.offers_extension(mcp::tasks_extension))
      caps["extensions"] = json::object{{mcp::tasks_extension, json::object{}}};
    json::array versions;
    for (auto v : mcp::modern_versions) versions.emplace_back(v);
    const auto hint = self->manager_.list_cache_hint();
    json::object result{
        {"resultType", "complete"},        {"supportedVersions", std::move(versions)},
        {"capabilities", std::move(caps)}, {"ttlMs", hint.ttl_ms},
        {"cacheScope", hint.scope},        {"_meta", result_meta()}};
    if (auto ins = self->manager_.instructions(); !ins.empty())
      result["instructions"] = std::move(ins);
    self->send(make_result(id, result));
  });
}

namespace {

// The error for a client that uses the tasks extension without declaring it.
rpc_error tasks_undeclared(std::string_view what) {
  return rpc_error{
      rpc_code::missing_capability,
      "Missing required client capability: " + std::string(what) + " needs the " +
          std::string(mcp::tasks_extension) + " extension in clientCapabilities",
      nullptr,
      json::object{
          {"requiredCapabilities",
           json::object{{"extensions", json::object{{mcp::tasks_extension, json::object{}}}}}}}};
}

// A result naming a task (a CreateTaskResult, a DetailedTask) names it the way clients know it.
void scope_task_id(json::object& result, std::string_view server) {
  if (auto* t = result.if_contains("taskId"); t && t->is_string())
    *t = mcp::scoped_task_id(server, t->get_string());
}

}  // namespace

// The tasks extension: tasks/get, tasks/update and tasks/cancel go to the server whose task it
// is, with its own id; the answer names the task as the client knows it.
void session::route_task(message& msg, const mcp::request_meta& meta) {
  const auto& id = msg.id();
  const auto method = msg.method();
  if (!mcp::has_extension(meta.capabilities, mcp::tasks_extension)) {
    const auto err = tasks_undeclared(method);
    return send(make_error(id, err.code, err.message, &err.data));
  }
  const auto* task = msg.params().if_contains("taskId");
  if (!task || !task->is_string())
    return reply_error(id, rpc_code::invalid_params,
                       "Invalid params: " + std::string(method) + " needs a string \"taskId\"");
  const auto scoped = std::string(task->get_string());
  const auto parts = mcp::split_task_id(scoped);
  auto up = parts ? manager_.upstream_for(parts->first, id_) : nullptr;
  if (!up || up->era() != mcp::era::modern)
    return reply_error(id, rpc_code::invalid_params, "Unknown task: " + clip(scoped, 120));
  msg.body["params"].as_object()["taskId"] = parts->second;
  forward(
      msg, up, [server = up->name()](json::object& result) { scope_task_id(result, server); }, {},
      &meta);
}

// What a modern client's result needs beyond the server's: a task's id scoped to its server (a
// call the server may turn into a task, the client having declared the extension), and a read's
// cache hints (a legacy server gives none: stale at once, not shared).
void session::modern_result_rules(std::string_view method, const upstream& up,
                                  const mcp::request_meta& meta,
                                  std::function<void(json::object&)>& after) {
  if (method == "tools/call" && up.era() == mcp::era::modern &&
      mcp::has_extension(meta.capabilities, mcp::tasks_extension))
    after = [server = up.name(), named = std::move(after)](json::object& result) {
      if (named) named(result);
      if (const auto* type = result.if_contains("resultType"); type && *type == "task")
        scope_task_id(result, server);
    };
  if (method == "resources/read")
    after = [alias = std::move(after)](json::object& result) {
      if (alias) alias(result);
      if (!result.contains("ttlMs")) result["ttlMs"] = 0;
      if (!result.contains("cacheScope")) result["cacheScope"] = "private";
    };
}

// A retry with the input a server asked for: takes the parked call back and goes on with it.
void session::resume_call(message& msg, const mcp::request_meta& meta) {
  const auto& id = msg.id();
  const auto& params = msg.params();
  const auto* responses = params.if_contains("inputResponses");
  if (responses && !responses->is_object())  // checked first: a refused retry keeps its call
    return reply_error(id, rpc_code::invalid_params,
                       "Invalid params: inputResponses must be an object");
  const auto* state = params.if_contains("requestState");
  auto c = manager_.mrtr().take(state->get_string(), mrtr_registry::clock::now());
  if (!c)
    return reply_error(id, rpc_code::invalid_params,
                       "Invalid params: requestState is unknown, expired or already used");
  if (!c->same_request(msg.method(), mcp::named_target(msg).value_or(""))) {
    c->cancel("a retry named another request");
    return reply_error(id, rpc_code::invalid_params,
                       "Invalid params: requestState belongs to another request");
  }
  c->attach(std::weak_ptr<call_caller>(shared_from_this()), id, serialize_id(id));
  call_entered(c, meta.log_level);
  c->resume(responses ? &responses->get_object() : nullptr);
}

void session::call_entered(std::shared_ptr<call> c, const std::string& log_level) {
  const auto& key = c->key();
  if (!log_level.empty()) {
    log_calls_[key] = log_level;
    update_log_level();
  }
  // (A client reusing the id of a call in flight: the newer call is the one kept.)
  calls_.put(key, std::move(c));
}

void session::call_left(const std::string& key) {
  const bool logged = !log_calls_.empty() && log_calls_.erase(key) > 0;
  // (`key` may be the call's own: not used after this.)
  (void)calls_.take(key);
  if (logged) update_log_level();
}

void session::update_log_level() {
  std::string most;
  for (const auto& [key, level] : log_calls_)
    if (most.empty() || log_severity(level) < log_severity(most)) most = level;
  if (most == log_level_) return;
  log_level_ = most;
  manager_.set_session_log_level(id_, most);
}

// subscriptions/listen: acknowledges what it will send, then sends it (with the subscription's
// id in _meta) until the client cancels the request.
void session::listen(const message& msg, const mcp::request_meta& meta) {
  const auto& id = msg.id();
  const auto* wanted = msg.params().if_contains("notifications");
  if (!wanted || !wanted->is_object())
    return reply_error(id, rpc_code::invalid_params,
                       "Invalid params: subscriptions/listen needs a \"notifications\" object");
  // Task status notifications are the tasks extension's: asked without it, an error.
  if (wanted->get_object().contains("taskIds") &&
      !mcp::has_extension(meta.capabilities, mcp::tasks_extension)) {
    const auto err = tasks_undeclared("a taskIds subscription");
    return send(make_error(id, err.code, err.message, &err.data));
  }
  const auto key = serialize_id(id);
  if (listens_.count(key))
    return reply_error(id, rpc_code::invalid_request,
                       "Invalid Request: a subscription with this id is already open");
  const auto& w = wanted->get_object();
  const auto caps = manager_.downstream_capabilities();
  listen_stream stream{id, {}, {}, {}};
  const auto asked = [&](std::string_view flag) {
    const auto* v = w.if_contains(flag);
    return v && v->is_bool() && v->get_bool();
  };
  if (asked("toolsListChanged")) stream.agreed["toolsListChanged"] = true;
  if (asked("promptsListChanged") && caps.contains("prompts"))
    stream.agreed["promptsListChanged"] = true;
  if (asked("resourcesListChanged") && caps.contains("resources"))
    stream.agreed["resourcesListChanged"] = true;
  if (const auto* uris = w.if_contains("resourceSubscriptions"); uris && uris->is_array()) {
    json::array agreed;
    for (const auto& u : uris->get_array()) {
      if (!u.is_string()) continue;
      const std::string uri(u.get_string());
      auto r = manager_.route_resource(uri, profile_);
      auto up = r ? manager_.find_upstream(r->server) : nullptr;
      if (!up || !mcp::capability_flag(up->capabilities(), "resources", "subscribe"))
        continue;  // the server cannot tell
      bool already = false;
      for (const auto& [k, other] : listens_)
        already = already || std::count(other.uris.begin(), other.uris.end(), uri) > 0;
      if (!already)
        manager_.subscribe(id_, *r, [weak = weak_from_this(), uri](int code, std::string error) {
          if (auto self = weak.lock(); self && code != 0)
            self->log_.info("subscription to {} refused by its server: {}", uri, error);
        });
      stream.uris.push_back(uri);
      agreed.emplace_back(uri);
    }
    stream.agreed["resourceSubscriptions"] = std::move(agreed);
  }
  // Tasks are watched at the server that owns each (its listen stream carries their status);
  // ids of no modern server with the extension are left out of the acknowledgement.
  if (const auto* ids = w.if_contains("taskIds"); ids && ids->is_array()) {
    json::array agreed;
    std::vector<manager::task_ref> watch;
    for (const auto& t : ids->get_array()) {
      if (stream.tasks.size() >= max_watched_tasks) break;  // the rest is not agreed to
      const auto* scoped = t.if_string();
      const auto parts = scoped ? mcp::split_task_id(*scoped) : std::nullopt;
      auto up = parts ? manager_.find_upstream(parts->first) : nullptr;
      if (!up || up->era() != mcp::era::modern ||
          !mcp::has_extension(up->capabilities(), mcp::tasks_extension))
        continue;
      watch.emplace_back(up->name(), std::string(parts->second));
      stream.tasks.emplace_back(*scoped);
      agreed.emplace_back(*scoped);
    }
    manager_.watch_tasks(id_, watch);
    stream.agreed["taskIds"] = std::move(agreed);
  }
  json::object ack{{"_meta", json::object{{mcp::meta_key::subscription_id, id}}},
                   {"notifications", stream.agreed}};
  listens_.emplace(key, std::move(stream));
  send(make_notification("notifications/subscriptions/acknowledged", ack));
}

void session::end_listen(const std::string& key) {
  auto node = listens_.extract(key);
  if (node.empty()) return;
  for (const auto& uri : node.mapped().uris) {
    bool still = false;
    for (const auto& [k, other] : listens_)
      still = still || std::count(other.uris.begin(), other.uris.end(), uri) > 0;
    if (still) continue;
    if (auto r = manager_.route_resource(uri, profile_)) manager_.unsubscribe(id_, *r);
  }
  std::vector<manager::task_ref> unwatch;
  for (const auto& task : node.mapped().tasks) {
    bool still = false;
    for (const auto& [k, other] : listens_)
      still = still || std::count(other.tasks.begin(), other.tasks.end(), task) > 0;
    if (auto parts = mcp::split_task_id(task); parts && !still)
      unwatch.emplace_back(std::string(parts->first), std::string(parts->second));
  }
  manager_.unwatch_tasks(id_, unwatch);
}

void session::notify_listeners(std::string_view flag, std::string_view method,
                               json::object params) {
  // A list change goes by its flag; a resource update by its URI, a task's status by its id.
  std::string_view uri, task;
  if (const auto* u = params.if_contains("uri"); u && u->is_string()) uri = u->get_string();
  if (const auto* t = params.if_contains("taskId"); t && t->is_string()) task = t->get_string();
  for (const auto& [key, stream] : listens_) {
    const bool wants = !flag.empty() ? stream.agreed.contains(flag)
                       : !task.empty()
                           ? std::count(stream.tasks.begin(), stream.tasks.end(), task) > 0
                           : std::count(stream.uris.begin(), stream.uris.end(), uri) > 0;
    if (!wants) continue;
    params["_meta"] = json::object{{mcp::meta_key::subscription_id, stream.id}};
    send(make_notification(method, params));
  }
}

void session::notify(const std::string& text) {
  if (era_ != mcp::era::modern) return send(text);
  // A modern client hears of resources only through its listen streams.
  auto parsed = parser_.parse(text);
  auto* msg = parsed.if_value();
  if (!msg) return;
  if (msg->method() == "notifications/resources/updated" ||
      msg->method() == "notifications/tasks") {
    notify_listeners({}, msg->method(), msg->params());
    return;
  }
  // Log messages go to a modern client while one of its calls asked for them (the manager has
  // already filtered them by that level): the nearest 2026-07-28 has to "this request's".
  if (msg->method() == "notifications/message" && log_calls_.empty()) return;
  send(text);
}

}  // namespace mcpmux
