#include "core/catalogue_service.hpp"

#include "config/filters.hpp"

#include <fmt/format.h>

#include "core/catalogue_snapshot.hpp"
#include "core/upstream.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {

catalogue_service::catalogue_service(const config& cfg, const upstream_map& upstreams,
                                     state_store* store)
    : cfg_(cfg), upstreams_(upstreams), store_(store) {
  profiles_.configure(cfg_.profiles);
}

std::shared_ptr<upstream> catalogue_service::upstream_named(std::string_view server) const {
  auto it = upstreams_.find(server);
  return it == upstreams_.end() ? nullptr : it->second;
}

std::vector<std::string> catalogue_service::configure_profiles(
    const std::vector<profile_config>& profiles) {
  auto touched = profiles_.configure(profiles);
  if (!touched.empty()) invalidate();
  return touched;
}

// Most changes are of state only (a server connecting, ready, backing off): when no list and
// no server's place in the catalogue changed, naming and serializing are skipped.
std::optional<catalogue_service::changes> catalogue_service::rebuild(bool settled) {
  std::vector<std::tuple<std::string, bool, std::uint64_t>> signature;
  signature.reserve(upstreams_.size());
  for (const auto& [name, up] : upstreams_)
    signature.emplace_back(name, up->listed(), up->lists_version());
  signature.emplace_back(cfg_.daemon.tool_separator, false, cfg_.daemon.max_tool_name);
  if (signature == signature_) return std::nullopt;
  signature_ = std::move(signature);
  judge_lists();
  const auto from = sources();
  const naming_rules rules{cfg_.daemon.tool_separator, cfg_.daemon.max_tool_name};
  std::vector<std::string> warnings;
  changes out;
  out.lists = cat_.rebuild(from, rules, warnings);
  for (const auto& w : warnings) log_.warn("{}", w);
  for (std::size_t i = 0; i < collection_count; ++i)
    if (out.lists[i])
      log_.debug("{} list now has {} items", to_string(static_cast<collection>(i)),
                 cat_.size(static_cast<collection>(i)));
  if (profiles_.empty()) return out;
  std::vector<server_note> notes;
  for (const auto& [name, up] : upstreams_) notes.push_back({name, up->instructions()});
  out.profiles = profiles_.rebuild(from, rules, notes, cat_);
  // A pattern that matches nothing is worth a warning once every server has listed.
  if (settled)
    for (const auto& [name, v] : profiles_.views())
      for (const auto& u : v->unmatched)
        if (warned_unmatched_.insert(name + "\n" + u).second)
          log_.warn("profile {}: {} matches nothing the servers list", name, u);
  return out;
}

const route* catalogue_service::find(collection c, std::string_view exposed,
                                     std::string_view profile) const {
  if (profile.empty()) return cat_.find(c, exposed);
  const auto* v = profiles_.find(profile);
  return v ? v->shown.find(c, exposed) : nullptr;
}

result<std::string> catalogue_service::profile_for(const client_identity& who) const {
  if (!who.requested_profile.empty() && !profiles_.find(who.requested_profile)) {
    std::string known;
    for (const auto& [name, v] : profiles_.views()) known += (known.empty() ? "" : ", ") + name;
    return rpc_error{rpc_code::invalid_params,
                     fmt::format("unknown profile \"{}\" (configured: {})", who.requested_profile,
                                 known.empty() ? "none" : known),
                     nullptr};
  }
  return profiles_.profile_for(who);
}

std::shared_ptr<const std::vector<mcp::param_header>> catalogue_service::tool_param_headers(
    std::string_view exposed) const {
  const auto* r = cat_.find(collection::tools, exposed);
  auto up = r ? upstream_named(r->server) : nullptr;
  return up ? up->tool_headers(r->original) : nullptr;
}

std::optional<route> catalogue_service::route_resource(std::string_view uri,
                                                       std::string_view profile) const {
  const auto* v = profile.empty() ? nullptr : profiles_.find(profile);
  if (!profile.empty() && !v) return std::nullopt;
  // A profile reaches only its own servers' resources, and only those its rules show.
  const auto reachable = [&](std::string_view server, std::string_view exposed) {
    return !v ||
           (shown_by(v->settings.servers, server) && shown_by(v->settings.resources, exposed));
  };
  auto r = cat_.route_resource(uri, [&](std::string_view s) { return upstreams_.count(s) > 0; });
  if (r && !reachable(r->server, uri)) return std::nullopt;
  if (!r) {
    // One server with resources at all: it is the only place the URI can be.
    for (const auto& [name, up] : upstreams_)
      if (up->offers(collection::resources) && reachable(name, uri)) {
        if (r) return std::nullopt;
        r = route{name, std::string(uri)};
      }
  }
  // A URI its server's `resources` rules hide is not reachable by any route.
  if (r)
    if (auto up = upstream_named(r->server);
        up && !shown_by(up->config().resources_shown, r->original))
      return std::nullopt;
  return r;
}

std::optional<route> catalogue_service::route_completion(const json::object& ref,
                                                         std::string_view profile) const {
  const auto* type = ref.if_contains("type");
  if (!type || !type->is_string()) return std::nullopt;
  if (type->get_string() == "ref/prompt") {
    const auto* name = ref.if_contains("name");
    if (!name || !name->is_string()) return std::nullopt;
    if (const auto* r = find(collection::prompts, name->get_string(), profile)) return *r;
    return std::nullopt;
  }
  if (type->get_string() == "ref/resource") {
    const auto* uri = ref.if_contains("uri");
    if (!uri || !uri->is_string()) return std::nullopt;
    if (const auto* r = find(collection::resource_templates, uri->get_string(), profile)) return *r;
    return route_resource(uri->get_string(), profile);
  }
  return std::nullopt;
}

result<list_page> catalogue_service::page(collection c, std::string_view cursor,
                                          std::string_view profile) const {
  if (profile.empty()) return cat_.page(c, cursor, cfg_.daemon.page_size);
  const auto* v = profiles_.find(profile);
  if (!v) return rpc_error{rpc_code::internal_error, "the profile is gone", nullptr};
  const auto& listing = c == collection::tools && v->searching ? v->search_listing : v->shown;
  return listing.page(c, cursor, cfg_.daemon.page_size);
}

// A server that is down keeps its last good lists; a stopped or disabled one does not.
std::vector<catalogue_source> catalogue_service::sources() const {
  std::vector<catalogue_source> out;
  for (const auto& [name, up] : upstreams_) {
    if (!up->listed()) continue;
    auto s = source_of(up->config());
    for (std::size_t i = 0; i < collection_count; ++i)
      s.lists[i] = &up->list(static_cast<collection>(i));
    if (auto t = trust_.find(name); t != trust_.end())
      for (std::size_t i = 0; i < collection_count; ++i) s.held[i] = &t->second.held[i];
    out.push_back(std::move(s));
  }
  return out;
}

json::object catalogue_service::downstream_capabilities() const {
  bool resources = false, subscribe = false, prompts = false, completions = false, logging = false;
  for (const auto& [name, up] : upstreams_) {
    const auto& caps = up->capabilities();
    resources = resources || caps.contains("resources");
    subscribe = subscribe || mcp::capability_flag(caps, "resources", "subscribe");
    prompts = prompts || caps.contains("prompts");
    completions = completions || caps.contains("completions");
    logging = logging || caps.contains("logging");
  }
  json::object out;
  out["tools"] = json::object{{"listChanged", true}};
  if (resources) {
    json::object r{{"listChanged", true}};
    if (subscribe) r["subscribe"] = true;
    out["resources"] = std::move(r);
  }
  if (prompts) out["prompts"] = json::object{{"listChanged", true}};
  if (completions) out["completions"] = json::object{};
  if (logging) out["logging"] = json::object{};
  return out;
}

std::string catalogue_service::instructions() const {
  std::string out;
  for (const auto& [name, up] : upstreams_) {
    if (up->instructions().empty()) continue;
    if (!out.empty()) out += "\n\n";
    out += "## " + name + "\n" + up->instructions();
  }
  if (out.size() > cfg_.daemon.max_instructions_bytes) {
    out.resize(cfg_.daemon.max_instructions_bytes);
    // Do not leave half a UTF-8 sequence at the cut.
    while (!out.empty() && (static_cast<unsigned char>(out.back()) & 0xC0) == 0x80) out.pop_back();
    if (!out.empty() && static_cast<unsigned char>(out.back()) >= 0xC0) out.pop_back();
    out += "\n[truncated]";
  }
  return out;
}

bool catalogue_service::offers_extension(std::string_view extension) const {
  return std::any_of(upstreams_.begin(), upstreams_.end(), [&](const auto& u) {
    return u.second->era() == mcp::era::modern &&
           mcp::has_extension(u.second->capabilities(), extension);
  });
}

}  // namespace mcpmux
