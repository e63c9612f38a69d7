// The catalogue service's side of trust (core/trust.hpp): each server's lists judged against its
// pins in the state store when they change, what is held back kept out of the catalogue, approvals,
// and the tool cache (only what was trusted is cached, so cached tools are served at the next
// start without being judged again).
#include <algorithm>

#include "core/catalogue_service.hpp"
#include "core/state_store.hpp"
#include "core/tool_cache.hpp"
#include "core/upstream.hpp"

namespace mcpmux {
namespace {

std::optional<collection> collection_named(std::string_view kind) {
  for (std::size_t i = 0; i < collection_count; ++i)
    if (to_string(static_cast<collection>(i)) == kind) return static_cast<collection>(i);
  return std::nullopt;
}

}  // namespace

// Cached tools were trusted when they were cached: a trusted server's are not judged again
// until it lists something new. (Those of a server with no trust recorded, such as the cache
// files of older versions, are judged with its first live lists, its first sight.)
void catalogue_service::trust_cached(upstream& up) {
  if (!up.tools_from_cache() || !store_ ||
      !store_->trusted(up.name(), server_config_hash(up.config())))
    return;
  auto& t = trust_[up.name()];
  t.judged = up.lists_version();
  t.cached_tools = up.tools_version();
}

void catalogue_service::judge_lists() {
  if (!store_) return;
  for (const auto& [name, up] : upstreams_) {
    // Judged once it has listed: a server not yet connected offers nothing to trust.
    if (!up->listed() || !up->ever_ready()) continue;
    auto& t = trust_[name];
    if (t.judged != up->lists_version()) {
      t.judged = up->lists_version();
      judge(name, *up, t);
    }
    store_tool_cache(*up, t);
  }
}

void catalogue_service::judge(const std::string& name, upstream& up, server_trust& t) {
  pin_book pins;
  for (auto& p : store_->pins(name))
    if (auto c = collection_named(p.kind))
      pins.emplace(std::pair(*c, p.name), std::move(p.definition));
  const auto config_hash = server_config_hash(up.config());
  const bool trusted = store_->trusted(name, config_hash);
  std::array<const std::vector<json::object>*, collection_count> lists{};
  for (std::size_t i = 0; i < collection_count; ++i)
    lists[i] = &up.list(static_cast<collection>(i));
  auto v = mcpmux::judge(pins, trusted, up.config(), lists);

  std::vector<pin_row> rows;
  rows.reserve(v.pin.size());
  for (auto& [key, definition] : v.pin)
    rows.push_back({name, std::string(to_string(key.first)), key.second, std::move(definition)});
  if (auto kept = store_->put_pins(rows); !kept)
    log_.warn("pins of {} not kept: {}", name, kept.error().message);
  if (v.trust_server) {
    if (auto kept = store_->set_trusted(name, config_hash, unix_now_ms()); !kept)
      log_.warn("trust of {} not kept: {}", name, kept.error().message);
    log_.info("{}: trusted on first use of its configuration; {} definitions pinned", name,
              rows.size());
  }
  const auto now = unix_now_ms();
  for (const auto& a : v.accepted) {
    t.changed[{a.c, a.name}] = {a.why, now, std::string(to_string(up.config().on_change))};
    const auto line = fmt::format(
        "{} {} of {} {} since it was trusted; pinned anew (on_change = {})", mcpmux::info(a.c).noun,
        a.name, name, to_string(a.why), to_string(up.config().on_change));
    if (up.config().on_change == change_policy::warn)
      log_.warn("{}", line);
    else
      log_.info("{}", line);
  }
  // Each held item is told of once per definition, not at every reconnect.
  for (const auto& q : v.quarantined) {
    if (!trust_warned_
             .insert(fmt::format("{}\n{}\n{}\n{}", name, to_string(q.c), q.name, q.offered))
             .second)
      continue;
    if (q.why == change_kind::untrusted)
      log_.warn(
          "{} {} of {} held back: the server is not trusted yet (trust = \"ask\"); see "
          "`mcpmux trust {}`",
          mcpmux::info(q.c).noun, q.name, name, name);
    else
      log_.warn(
          "{} {} of {} {}{} since it was trusted: quarantined, not shown to clients; see "
          "`mcpmux trust {} --diff`",
          mcpmux::info(q.c).noun, q.name, name, to_string(q.why),
          q.was.empty() ? "" : " (from " + q.was + ")", name);
  }
  t.held = std::move(v.held);
  t.quarantined = std::move(v.quarantined);
}

// The cache holds what the server lists live minus what trust holds back, rewritten only when
// either changed (a hundred starting servers listing what the cache already holds write nothing).
void catalogue_service::store_tool_cache(upstream& up, server_trust& t) {
  if (up.tools_from_cache()) return;
  const auto& held = t.held[static_cast<std::size_t>(collection::tools)];
  if (up.tools_version() == t.cached_tools && held == t.cached_held) return;
  const std::string_view era = up.era() == mcp::era::modern   ? "modern"
                               : up.era() == mcp::era::legacy ? "legacy"
                                                              : "";
  if (auto kept = store_cached_tools(*store_, up.config(), up.tools(), era, &held); !kept)
    log_.warn("tool cache of {}: {}", up.name(), kept.error().message);
  t.cached_tools = up.tools_version();
  t.cached_held = held;
}

bool catalogue_service::trusted(std::string_view server) const {
  auto up = upstream_named(server);
  return up && store_ && store_->trusted(up->name(), server_config_hash(up->config()));
}

const std::vector<trust_item>& catalogue_service::quarantined(std::string_view server) const {
  static const std::vector<trust_item> none;
  auto it = trust_.find(server);
  return it == trust_.end() ? none : it->second.quarantined;
}

const catalogue_service::recent_change* catalogue_service::changed_since_trust(
    std::string_view server, collection c, const std::string& name) const {
  auto t = trust_.find(server);
  if (t == trust_.end()) return nullptr;
  auto it = t->second.changed.find({c, name});
  return it == t->second.changed.end() ? nullptr : &it->second;
}

result<json::value> catalogue_service::approve(const std::string& server,
                                               const std::vector<std::string>& names, bool all,
                                               const std::map<std::string, std::string>& expected) {
  auto up = upstream_named(server);
  if (!up)
    return rpc_error{rpc_code::invalid_params, "no server named \"" + server + "\"", nullptr};
  if (!store_) return rpc_error{rpc_code::internal_error, "no state store to keep pins", nullptr};
  auto it = trust_.find(server);
  if (all && !trusted(server) && (it == trust_.end() || it->second.judged == 0))
    return rpc_error{rpc_code::invalid_params,
                     server + " has listed nothing yet: approve it once it has (mcpmux status)",
                     nullptr};
  std::vector<pin_row> rows;
  json::array approved, skipped, not_held;
  std::set<std::string> found;
  if (it != trust_.end())
    for (const auto& q : it->second.quarantined) {
      if (!all && std::find(names.begin(), names.end(), q.name) == names.end()) continue;
      found.insert(q.name);
      if (auto e = expected.find(q.name); e != expected.end() && e->second != q.offered) {
        skipped.push_back(json::string(q.name));  // it changed again since the approver looked
        continue;
      }
      rows.push_back({server, std::string(to_string(q.c)), q.name, q.offered});
      approved.push_back(json::string(q.name));
      if (q.why != change_kind::untrusted)
        it->second.changed[{q.c, q.name}] = {q.why, unix_now_ms(), "approved"};
    }
  for (const auto& n : names)
    if (!found.count(n)) not_held.push_back(json::string(n));
  if (auto kept = store_->put_pins(rows); !kept)
    return result<json::value>::fail("pins not kept: " + kept.error().message);
  if (all)
    if (auto kept = store_->set_trusted(server, server_config_hash(up->config()), unix_now_ms());
        !kept)
      return result<json::value>::fail("trust not kept: " + kept.error().message);
  log_.info("{}: {} approved{}", server, rows.size(), all ? "; the server is trusted" : "");
  // Judged again at the next rebuild: the approved items are shown, and clients told.
  if (it != trust_.end()) it->second.judged = 0;
  invalidate();
  return json::value(json::object{{"server", server},
                                  {"approved", std::move(approved)},
                                  {"skipped", std::move(skipped)},
                                  {"not_held", std::move(not_held)}});
}

}  // namespace mcpmux
