#include "core/reload_plan.hpp"

#include <algorithm>

namespace mcpmux {

namespace {
// Filters and trust settings change what is shown of the same lists: no restart.
bool same_but_filters(server_settings a, const server_settings& b) {
  a.tools_shown = b.tools_shown;
  a.prompts_shown = b.prompts_shown;
  a.resources_shown = b.resources_shown;
  a.on_change = b.on_change;
  a.trust_ask = b.trust_ask;
  return a == b;
}
}  // namespace

reload_plan plan_reload(const config& old, const config& next, bool socket_moves) {
  reload_plan p;
  // The socket and the HTTP endpoint are bound once; everything else applies now.
  if (socket_moves) p.restart_required.push_back("daemon.socket");
  if (next.daemon.http != old.daemon.http) p.restart_required.push_back("daemon.http");
  if (next.daemon.http_allow_remote != old.daemon.http_allow_remote)
    p.restart_required.push_back("daemon.http_allow_remote");
  if (next.daemon.http_token_file != old.daemon.http_token_file)
    p.restart_required.push_back("daemon.http_token_file");
  if (next.daemon.http_tokens != old.daemon.http_tokens)
    p.restart_required.push_back("daemon.http_tokens");
  if (next.daemon.http_auth_none != old.daemon.http_auth_none)
    p.restart_required.push_back("daemon.http_auth");
  // The limits of the socket's clients and of the HTTP endpoint are read when they are made.
  // (max_message_bytes also applies to each server at its next start.)
  const auto limit = [&](auto daemon_config::*key, const char* name) {
    if (next.daemon.*key != old.daemon.*key) p.restart_required.push_back(name);
  };
  limit(&daemon_config::max_message_bytes, "daemon.max_message_bytes");
  limit(&daemon_config::max_client_queue_bytes, "daemon.max_client_queue_bytes");
  limit(&daemon_config::http_max_requests_per_session, "daemon.http_max_requests_per_session");
  limit(&daemon_config::http_max_sessions, "daemon.http_max_sessions");
  limit(&daemon_config::http_max_connections, "daemon.http_max_connections");

  auto find = [](const config& c, const std::string& name) -> const server_config* {
    auto it = std::find_if(c.servers.begin(), c.servers.end(),
                           [&](const server_config& s) { return s.name == name; });
    return it == c.servers.end() ? nullptr : &*it;
  };
  for (const auto& s : next.servers) {
    const auto* before = find(old, s.name);
    if (!before)
      p.added.push_back(s.name);
    else if (*before == s)
      p.unchanged.push_back(s.name);
    else if (same_but_filters(*before, s))
      p.refiltered.push_back(s.name);
    else
      p.changed.push_back(s.name);
  }
  for (const auto& s : old.servers)
    if (!find(next, s.name)) p.removed.push_back(s.name);
  return p;
}

}  // namespace mcpmux
