// An upstream's lists and notes: the lists the handshake gathered, list_changed and paging,
// the tool cache, and the optional calls (logging/setLevel, subscription renewals) whose
// refusal is a note in status rather than a failure.
#include <algorithm>
#include <boost/json/serialize.hpp>

#include "base/text.hpp"
#include "core/rpc_peer.hpp"
#include "core/upstream_detail.hpp"
#include "protocol/error.hpp"
#include "protocol/modern.hpp"
#include "protocol/param_headers.hpp"

namespace mcpmux {

// Takes the lists the handshake gathered: good ones are stored, failed ones noted.
void upstream::finish_handshake() {
  auto hs = std::move(handshake_);
  era_ = hs->era();
  if (era_ == mcp::era::modern) {  // no initialize answer told them
    const auto& name = hs->server_name();
    log_.info("discovered: {} protocol {}", name.empty() ? "(unnamed)" : name,
              hs->protocol_version());
    capabilities_ = hs->capabilities();
    instructions_ = hs->instructions();
  }
  cache_ttl_ms_ = hs->cache_ttl_ms();
  cache_private_ = hs->cache_private();
  for (std::size_t i = 0; i < collection_count; ++i) {
    const auto c = static_cast<collection>(i);
    auto& got = hs->lists()[i];
    if (!got.error.empty()) {
      list_failed(c, std::move(got.error));
    } else {
      clear_note(info(c).method);
      if (c == collection::tools || got.asked)
        store_list(c, std::move(got.items));
      else
        set_list(c, {});
    }
  }
  become_ready();
}

// 2026-07-28 servers tell of changes only on a subscriptions/listen stream: one per connection,
// for the lists the server says change and the resources clients subscribed to; opened anew
// (the old one cancelled) when the subscribed resources change.
void upstream::open_listen() {
  if (!peer_) return;
  if (auto old = std::exchange(listen_id_, std::nullopt))
    peer_->cancel(*old, "the subscriptions changed");
  json::object filter;
  const auto flag = [&](std::string_view cap, std::string_view key) {
    return mcp::capability_flag(capabilities_, cap, key);
  };
  if (flag("tools", "listChanged")) filter["toolsListChanged"] = true;
  if (flag("prompts", "listChanged")) filter["promptsListChanged"] = true;
  if (flag("resources", "listChanged")) filter["resourcesListChanged"] = true;
  if (flag("resources", "subscribe") && !listen_uris_.empty()) {
    json::array uris;
    for (const auto& u : listen_uris_) uris.emplace_back(u);
    filter["resourceSubscriptions"] = std::move(uris);
  }
  const bool tasks =
      !listen_tasks_.empty() && mcp::has_extension(capabilities_, mcp::tasks_extension);
  if (tasks) {
    json::array ids;
    for (const auto& t : listen_tasks_) ids.emplace_back(t);
    filter["taskIds"] = std::move(ids);
  }
  if (filter.empty()) return;
  json::value params = json::object{{"notifications", std::move(filter)}};
  add_era_meta(params, nullptr);
  if (tasks)  // task notifications are the extension's: mcpmux declares it for this stream
    params.at("_meta").as_object()[mcp::meta_key::client_capabilities].as_object()["extensions"] =
        json::object{{mcp::tasks_extension, json::object{}}};
  const auto opened = steady_clock::now();
  listen_id_ =
      peer_->request("subscriptions/listen", params, std::nullopt,
                     [weak = weak_from_this(), gen = generation_, opened](rpc_outcome out) {
                       auto self = weak.lock();
                       if (!self || self->generation_ != gen || out.ec) return;
                       self->listen_id_.reset();
                       self->listen_ended(steady_clock::now() - opened, *out.reply);
                     });
}

// A listen stream the server ended (an HTTP stream closed, a proxy's idle cut) is opened
// again, after a pause that doubles while streams end early (from 1 s to a minute): changes
// must keep coming, but a server that refuses listening must not be asked in a loop.
void upstream::listen_ended(steady_clock::duration lived, const message& reply) {
  using namespace std::chrono_literals;
  const bool early = lived < 30s;
  listen_retry_ = !early ? 1000ms
                         : std::min<std::chrono::milliseconds>(
                               std::max<std::chrono::milliseconds>(listen_retry_ * 2, 1s), 60s);
  const auto why = reply.kind == message_kind::error_response
                       ? json::serialize(reply.body.at("error"))
                       : std::string("ended by the server");
  log_.info("listen stream {}; opening it again in {} ms", clip(why), listen_retry_.count());
  timers_->listen.expires_after(listen_retry_);
  timers_->listen.async_wait(
      [weak = weak_from_this(), gen = generation_](boost::system::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->generation_ != gen || self->listen_id_) return;
        if (self->state() == upstream_state::ready) self->open_listen();
      });
}

void upstream::subscribe_resource(const std::string& uri, response_handler done) {
  if (era_ != mcp::era::modern)
    return request("resources/subscribe", json::object{{"uri", uri}}, std::move(done));
  listen_uris_.insert(uri);
  if (state() == upstream_state::ready) open_listen();
  message ok;
  ok.kind = message_kind::response;
  ok.body["result"] = json::object{};
  done({{}, std::move(ok)});
}

void upstream::unsubscribe_resource(const std::string& uri) {
  if (era_ != mcp::era::modern)
    return request("resources/unsubscribe", json::object{{"uri", uri}}, [](rpc_outcome) {});
  if (listen_uris_.erase(uri) && state() == upstream_state::ready) open_listen();
}

void upstream::listen_tasks(std::set<std::string> task_ids) {
  if (task_ids == listen_tasks_) return;
  listen_tasks_ = std::move(task_ids);
  if (era_ == mcp::era::modern && state() == upstream_state::ready) open_listen();
}

void upstream::resubscribe(const std::vector<std::string>& uris) {
  if (era_ == mcp::era::modern) {
    listen_uris_ = {uris.begin(), uris.end()};  // become_ready opens the stream with them
    return;
  }
  for (const auto& uri : uris) call_optional("resources/subscribe", json::object{{"uri", uri}});
}

void upstream::list_failed(collection c, std::string why) {
  const auto& ci = info(c);
  set_list(c, {});
  if (c == collection::tools) tools_from_cache_ = false;
  if (!offers(c)) {
    log_.debug("{} (the server does not declare \"{}\")", why, ci.capability);
    return;
  }
  // One warning per new failure: the same refusal after a reconnect is no news.
  if (has_note(ci.method, why))
    log_.debug("{} (again)", why);
  else
    log_.warn("{}; serving no {} from this server until it announces a change or reconnects", why,
              ci.key);
  if (c == collection::tools) set_last_error(why);  // kept after a recovery, like every last error
  set_note(ci.method, std::move(why));
}

void upstream::store_list(collection c, std::vector<json::object> items) {
  set_list(c, std::move(items));
  if (c == collection::tools) tools_from_cache_ = false;
}

bool upstream::set_list(collection c, std::vector<json::object> items) {
  auto& list = lists_[static_cast<std::size_t>(c)];
  if (list == items) return false;
  list = std::move(items);
  lists_version_ = new_lists_version();
  if (c == collection::tools) tools_version_ = lists_version_;
  return true;
}

std::shared_ptr<const std::vector<mcp::param_header>> upstream::tool_headers(
    std::string_view tool) {
  ensure_tool_headers();
  if (!tool_headers_) return nullptr;
  auto it = tool_headers_->tools.find(tool);
  if (it == tool_headers_->tools.end()) return nullptr;
  return {tool_headers_, &it->second};  // shares the map's lifetime
}

// The tools whose arguments also travel as Mcp-Param-* headers (the lists dropped tools whose
// annotations are invalid): worked out when first needed after the lists changed — by a
// tools/call to an HTTP server or a check on /mcp —, not at every change (a start from 10,000
// cached tools pays nothing).
void upstream::ensure_tool_headers() {
  if (headers_version_ == lists_version_) return;
  headers_version_ = lists_version_;
  build_tool_headers();
}

// The rules are protocol/param_headers'; the transport only sends what this returns.
std::vector<std::pair<std::string, std::string>> upstream::param_header_fields(const call& c) {
  if (c.method() != "tools/call" || !traits_.param_headers || era_ != mcp::era::modern) return {};
  const auto* params = c.params().if_object();
  const auto* name = params ? params->if_contains("name") : nullptr;
  const auto* args = params ? params->if_contains("arguments") : nullptr;
  if (!name || !name->is_string() || !args || !args->is_object()) return {};
  auto headers = tool_headers(name->get_string());
  if (!headers) return {};
  return mcp::param_header_fields(*headers, args->get_object());
}

void upstream::build_tool_headers() {
  auto map = std::make_shared<mcp::tool_param_headers>();
  for (const auto& t : tools()) {
    const auto* schema = t.if_contains("inputSchema");
    if (!schema || !schema->is_object()) continue;
    auto headers = mcp::param_headers(schema->get_object());
    if (headers && !headers->empty())
      map->tools.emplace(std::string(t.at("name").get_string()), std::move(*headers));
  }
  tool_headers_ = map->tools.empty() ? nullptr : std::move(map);
}

bool upstream::has_note(std::string_view about, std::string_view text) const {
  return std::any_of(notes_.begin(), notes_.end(),
                     [&](auto& n) { return n.first == about && n.second == text; });
}

void upstream::set_note(std::string_view about, std::string text) {
  auto it = std::find_if(notes_.begin(), notes_.end(), [&](auto& n) { return n.first == about; });
  if (it != notes_.end() && it->second == text) return;
  note("note: " + text);
  if (it != notes_.end())
    it->second = std::move(text);
  else
    notes_.emplace_back(std::string(about), std::move(text));
  observer_.on_upstream_changed(cfg_.name);
}

void upstream::clear_note(std::string_view about) {
  auto it = std::find_if(notes_.begin(), notes_.end(), [&](auto& n) { return n.first == about; });
  if (it == notes_.end()) return;
  notes_.erase(it);
  observer_.on_upstream_changed(cfg_.name);
}

std::vector<std::string> upstream::notes() const {
  std::vector<std::string> out;
  for (const auto& n : notes_) out.push_back(n.second);
  return out;
}

void upstream::notify(std::string_view method, const json::value& params) {
  if (peer_ && state() == upstream_state::ready) peer_->notify(method, params);
}

void upstream::set_log_level(std::string level) {
  if (level == log_level_) return;
  log_level_ = std::move(level);
  if (state() == upstream_state::ready) send_log_level();
}

// Optional: a server that refuses or ignores it keeps working, with a note in its status.
void upstream::send_log_level() {
  // A modern server hears the level with each request instead (add_era_meta).
  if (log_level_.empty() || !peer_ || !capabilities_.contains("logging") ||
      era_ == mcp::era::modern)
    return;
  peer_->request("logging/setLevel", json::value(json::object{{"level", log_level_}}),
                 timeout_opt(), optional_call_handler("logging/setLevel"));
}

void upstream::call_optional(std::string_view method, json::value params) {
  request(method, std::move(params), optional_call_handler(std::string(method)));
}

response_handler upstream::optional_call_handler(std::string method) {
  return [weak = weak_from_this(), gen = generation_, method = std::move(method)](rpc_outcome out) {
    auto self = weak.lock();
    if (!self || self->generation_ != gen || out.ec == errc::transport_closed) return;
    if (!out.ec && out.reply->kind != message_kind::error_response) return self->clear_note(method);
    std::string why = out.ec ? method + ": " + out.ec.message()
                             : method + " failed: " + json::serialize(out.reply->body["error"]);
    if (self->has_note(method, why))
      self->log_.debug("{} (again)", why);
    else
      self->log_.warn("{} (optional; the server keeps working)", why);
    self->set_note(method, std::move(why));
  };
}

void upstream::handle_notification(const message& msg) {
  if (msg.method() == "notifications/progress") return on_progress(msg);
  if (msg.method() == "notifications/cancelled") return on_cancelled(msg);
  if (msg.method() == "notifications/tools/list_changed") {
    return relist(collection::tools);
  }
  if (msg.method() == "notifications/resources/list_changed") {
    relist(collection::resources);
    return relist(collection::resource_templates);
  }
  if (msg.method() == "notifications/prompts/list_changed") return relist(collection::prompts);
  observer_.on_upstream_notification(cfg_.name, msg);
}

// A list_changed is reason enough to ask, even for a list the server did not declare.
void upstream::relist(collection c) {
  if (state() != upstream_state::ready || !peer_) return;
  request_page(std::make_shared<list_pager>(c));
}

void upstream::request_page(std::shared_ptr<list_pager> pager) {
  const auto c = pager->which();
  json::value params = pager->next_params();
  add_era_meta(params, nullptr);
  peer_->request(info(c).method, params, timeout_opt(),
                 [weak = weak_from_this(), gen = generation_, pager](rpc_outcome out) {
                   auto self = weak.lock();
                   if (!self || self->generation_ != gen || !self->peer_) return;
                   const auto c = pager->which();
                   std::vector<std::string> warnings;
                   auto st = list_pager::status::failed;
                   if (out.ec == errc::timeout)
                     self->list_failed(c, std::string(info(c).method) + ": no answer in time");
                   else if (out.ec)
                     return;  // closed: the reconnect lists again
                   else
                     st = pager->on_page(*out.reply, warnings);
                   for (auto& w : warnings) self->log_.warn("{}", w);
                   if (st == list_pager::status::more) return self->request_page(pager);
                   if (st == list_pager::status::done) {
                     self->clear_note(info(c).method);
                     self->store_list(c, pager->take());
                     self->log_.info("{} list now has {} items", to_string(c),
                                     self->list(c).size());
                   } else if (!out.ec) {
                     self->list_failed(c, pager->error());
                   }
                   self->observer_.on_upstream_changed(self->cfg_.name);
                 });
}

}  // namespace mcpmux
