#include "core/catalogue_snapshot.hpp"

#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/tool_cache.hpp"

namespace mcpmux {
namespace {

constexpr std::string_view magic = "mcpmux catalogue 1\n";

// Little-endian lengths and offsets, each string length-prefixed.
void put_u32(std::string& out, std::size_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_str(std::string& out, std::string_view s) {
  put_u32(out, s.size());
  out += s;
}

struct reader {
  std::string_view in;
  bool ok = true;
  std::uint32_t u32() {
    if (in.size() < 4) return ok = false, 0;
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= std::uint32_t(static_cast<unsigned char>(in[i])) << (8 * i);
    in.remove_prefix(4);
    return v;
  }
  std::string str() {
    const auto n = u32();
    if (!ok || in.size() < n) return ok = false, std::string();
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
};

}  // namespace

catalogue_source source_of(const server_config& cfg) {
  catalogue_source s{cfg.name, cfg.effective_prefix(), {}, {}};
  s.shown[static_cast<std::size_t>(collection::tools)] = &cfg.tools_shown;
  s.shown[static_cast<std::size_t>(collection::prompts)] = &cfg.prompts_shown;
  s.shown[static_cast<std::size_t>(collection::resources)] = &cfg.resources_shown;
  s.shown[static_cast<std::size_t>(collection::resource_templates)] = &cfg.resources_shown;
  return s;
}

std::string catalogue_snapshot_key(const config& cfg) {
  std::string key(magic);
  put_str(key, cfg.daemon.tool_separator);
  put_u32(key, cfg.daemon.max_tool_name);
  for (const auto& s : cfg.servers) {
    if (!s.enabled) continue;
    put_str(key, s.name);
    put_str(key, s.effective_prefix());
    put_u32(key, s.tools_shown.size());
    for (const auto& p : s.tools_shown) put_str(key, p);
    put_str(key, server_config_hash(s));
  }
  return key;
}

std::string encode_catalogue_routes(const catalogue& cat,
                                    const std::vector<snapshot_server>& cached) {
  const auto kept = cat.kept(collection::tools);
  std::string out(magic);
  put_u32(out, cached.size());
  for (const auto& s : cached) put_str(out, s.name), put_str(out, s.era);
  put_u32(out, kept.routes->size());
  for (std::size_t i = 0; i < kept.routes->size(); ++i) {
    const auto& [exposed, r] = (*kept.routes)[i];
    put_u32(out, (*kept.begins)[i]);
    put_str(out, exposed);
    put_str(out, r.server);
    put_str(out, r.original);
  }
  return out;
}

std::optional<std::vector<snapshot_server>> restore_catalogue(catalogue& cat,
                                                              catalogue_snapshot_row row) {
  reader r{row.routes};
  if (!r.in.starts_with(magic)) return std::nullopt;
  r.in.remove_prefix(magic.size());
  const auto servers = r.u32();
  if (!r.ok || servers > r.in.size() / 8) return std::nullopt;  // 8 bytes each at least
  std::vector<snapshot_server> cached(servers);
  for (auto& s : cached) {
    s.name = r.str();
    s.era = r.str();
    if (!r.ok) return std::nullopt;
  }
  const auto n = r.u32();
  if (!r.ok || n > r.in.size() / 16) return std::nullopt;  // each item takes 16 bytes at least
  std::vector<std::size_t> begins(n);
  catalogue::routes_t routes(n);
  for (std::size_t i = 0; i < n && r.ok; ++i) {
    begins[i] = r.u32();
    routes[i].first = r.str();
    routes[i].second.server = r.str();
    routes[i].second.original = r.str();
  }
  if (!r.ok || !r.in.empty() ||
      !cat.restore(collection::tools, std::move(row.tools), std::move(begins), std::move(routes)))
    return std::nullopt;
  return cached;
}

}  // namespace mcpmux
