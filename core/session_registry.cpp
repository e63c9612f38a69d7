#include "core/session_registry.hpp"

#include <algorithm>

#include "core/session.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {

int log_severity(std::string_view level) {
  static constexpr std::string_view levels[] = {"debug", "info",     "notice", "warning",
                                                "error", "critical", "alert",  "emergency"};
  for (int i = 0; i < 8; ++i)
    if (levels[i] == level) return i;
  return -1;
}

void session_registry::attach(std::shared_ptr<session> s, std::uint64_t id) {
  sessions_.emplace(id, std::move(s));
  last_attach_ = steady_clock::now();
}

void session_registry::detach(std::uint64_t id) {
  // A client that leaves drops its subscriptions, the tasks it watched and its logging level.
  for (const auto& k : subscriptions_.of_session(id)) unsubscribe(id, k);
  std::vector<task_ref> watched;
  for (const auto& [key, sessions] : task_watchers_)
    if (sessions.count(id)) watched.push_back(key);
  unwatch_tasks(id, watched);
  if (log_levels_.erase(id)) push_log_level();
  // Destroy after the erase: the session's destructor must not see itself in the map.
  auto node = sessions_.extract(id);
}

void session_registry::close_all() {
  auto all = std::move(sessions_);
  sessions_.clear();
  for (auto& [id, s] : all) s->close();
}

void session_registry::notify(std::uint64_t id, const std::string& text) const {
  if (auto s = sessions_.find(id); s != sessions_.end()) s->second->notify(text);
}

void session_registry::notify_lists(const std::string& profile,
                                    const std::array<bool, collection_count>& changed) {
  if (std::none_of(changed.begin(), changed.end(), [](bool b) { return b; })) return;
  // Listeners may unregister while being told; iterate over a copy.
  auto ls = std::vector<catalogue_listener*>(listeners_.begin(), listeners_.end());
  for (std::size_t i = 0; i < collection_count; ++i) {
    if (!changed[i]) continue;
    for (auto* l : ls)
      if (listeners_.count(l) && l->profile() == profile)
        l->on_list_changed(static_cast<collection>(i));
  }
}

void session_registry::drop_profiles(const std::function<bool(const std::string&)>& exists) {
  for (auto* l : std::vector<catalogue_listener*>(listeners_.begin(), listeners_.end())) {
    if (l->profile().empty() || exists(l->profile())) continue;
    l->profile_removed();
    for (std::size_t i = 0; i < collection_count; ++i)
      l->on_list_changed(static_cast<collection>(i));
  }
}

void session_registry::set_log_level(std::uint64_t session, std::string level) {
  if (level.empty())
    log_levels_.erase(session);
  else
    log_levels_[session] = std::move(level);
  push_log_level();
}

// Every server is asked for the most verbose level any client wants.
void session_registry::push_log_level() {
  std::string most;
  for (const auto& [id, level] : log_levels_)
    if (most.empty() || log_severity(level) < log_severity(most)) most = level;
  servers_.set_log_level(most);
}

std::vector<std::uint64_t> session_registry::log_recipients(int severity) const {
  std::vector<std::uint64_t> out;
  for (const auto& [id, wanted] : log_levels_)
    if (severity >= log_severity(wanted)) out.push_back(id);
  return out;
}

void session_registry::subscribe(std::uint64_t session, const subscription_table::key& k,
                                 subscription_table::done_fn done) {
  if (subscriptions_.subscribe(k, session, std::move(done)) != subscription_table::next::ask_server)
    return;
  // (The registry outlives the servers' answers: the manager stops them before it goes.)
  servers_.subscribe_resource(k.first, k.second, [this, k](int code, std::string message) {
    subscriptions_.answered(k, code, message,
                            [this](std::uint64_t id) { return sessions_.count(id) > 0; });
  });
}

void session_registry::unsubscribe(std::uint64_t session, const subscription_table::key& k) {
  if (subscriptions_.unsubscribe(k, session)) servers_.unsubscribe_resource(k.first, k.second);
}

void session_registry::watch_tasks(std::uint64_t session, const std::vector<task_ref>& tasks) {
  std::set<std::string> changed;
  for (const auto& t : tasks)
    if (task_watchers_[t].insert(session).second) changed.insert(t.first);
  for (const auto& server : changed) update_task_listen(server);
}

void session_registry::unwatch_tasks(std::uint64_t session, const std::vector<task_ref>& tasks) {
  std::set<std::string> changed;
  for (const auto& t : tasks) {
    auto it = task_watchers_.find(t);
    if (it == task_watchers_.end() || !it->second.erase(session)) continue;
    if (it->second.empty()) task_watchers_.erase(it);
    changed.insert(t.first);
  }
  for (const auto& server : changed) update_task_listen(server);
}

void session_registry::update_task_listen(const std::string& server) {
  std::set<std::string> ids;
  for (auto it = task_watchers_.lower_bound({server, std::string()});
       it != task_watchers_.end() && it->first.first == server; ++it)
    ids.insert(it->first.second);
  servers_.listen_tasks(server, std::move(ids));
}

std::vector<std::uint64_t> session_registry::task_watchers(const task_ref& task) const {
  auto it = task_watchers_.find(task);
  if (it == task_watchers_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

bool session_registry::deliver(const std::string& server, const message& msg,
                               const catalogue& exposed) {
  const auto method = msg.method();
  if (method == "notifications/message") {
    // To each client whose level admits it, named after the server.
    const auto* level = msg.params().if_contains("level");
    const int severity = level && level->is_string() ? log_severity(level->get_string()) : -1;
    const auto ids = log_recipients(severity);
    if (ids.empty()) return true;
    json::object params = msg.params();
    if (!params.contains("logger")) params["logger"] = server;
    const auto text = make_notification("notifications/message", params);
    for (auto id : ids) notify(id, text);
    return true;
  }
  if (method == "notifications/resources/updated") {
    const auto* uri = msg.params().if_contains("uri");
    if (!uri || !uri->is_string()) return true;
    const auto subscribers = subscriptions_.subscribers({server, std::string(uri->get_string())});
    if (subscribers.empty()) return true;
    // Subscribers see the URI they subscribed to (an alias when the server's URI collides).
    json::object params = msg.params();
    for (const auto& [name, r] : exposed.routes(collection::resources))
      if (r.server == server && r.original == uri->get_string()) params["uri"] = name;
    const auto text = make_notification("notifications/resources/updated", params);
    for (auto id : subscribers) notify(id, text);
    return true;
  }
  if (method == "notifications/tasks") {  // the tasks extension: to the sessions watching it
    const auto* task = msg.params().if_contains("taskId");
    if (!task || !task->is_string()) return true;
    const auto ids = task_watchers({server, std::string(task->get_string())});
    if (ids.empty()) return true;
    json::object params = msg.params();
    params["taskId"] = mcp::scoped_task_id(server, task->get_string());
    const auto text = make_notification(method, params);
    for (auto id : ids) notify(id, text);
    return true;
  }
  return false;
}

}  // namespace mcpmux
