// The tool cache: one row of the state store per server, a JSON document.
#include "core/tool_cache.hpp"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>
#include <unordered_map>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>

#include "base/files.hpp"
#include "core/naming.hpp"

namespace mcpmux {
namespace {

constexpr int cache_format = 1;
constexpr std::size_t max_cache_file = 64u << 20;  ///< of the files of older versions

// Parses one entry: its tools and era, or a warning.
void parse_entry(const cached_tools_row& row, cache_entry& out) {
  // The tools live as long as the list (replaced wholesale when the server lists again): one
  // arena for the whole entry allocates far faster and more compactly than a malloc per node.
  boost::system::error_code jec;
  auto v = json::parse(row.doc, jec, json::make_shared_resource<json::monotonic_resource>());
  auto* obj = v.if_object();
  const auto* fmt = obj ? obj->if_contains("format") : nullptr;
  auto* tools = obj ? obj->if_contains("tools") : nullptr;
  if (jec || !fmt || !fmt->is_int64() || fmt->get_int64() != cache_format || !tools ||
      !tools->is_array()) {
    out.warning = "tool cache entry of " + row.server + " is corrupt; ignored";
    return;
  }
  std::vector<json::object> list;
  list.reserve(tools->get_array().size());
  for (auto& t : tools->get_array()) {
    auto* to = t.if_object();
    const auto* n = to ? to->if_contains("name") : nullptr;
    if (!n || !n->is_string()) {
      out.warning = "tool cache entry of " + row.server + " has a tool without a name; ignored";
      return;
    }
    list.push_back(std::move(*to));  // the parsed document is dropped: take its objects
  }
  if (const auto* e = obj->if_contains("era"); e && e->is_string()) out.era = e->get_string();
  out.tools = std::move(list);
}

}  // namespace

std::string server_config_hash(const server_config& s) {
  // Fields are length-prefixed so that different splits of the same bytes hash differently.
  std::string key;
  auto add = [&key](std::string_view v) {
    key += std::to_string(v.size());
    key += ':';
    key += v;
  };
  add(to_string(s.type));
  add(s.command);
  for (const auto& a : s.args) add(a);
  key += '|';
  for (const auto& [k, v] : s.env) add(k), add(v);
  key += '|';
  add(s.cwd);
  add(s.url);
  add(s.ca_file);
  add(s.token_command);
  for (const auto& [k, v] : s.headers) add(k), add(v);
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(fnv1a64(key)));
  return out;
}

std::vector<cache_entry> load_cache_entries(const state_store& store,
                                            const std::vector<server_config>& servers) {
  std::vector<cache_entry> out(servers.size());
  // One query reads every entry; those of another configuration are stale and skipped.
  auto rows = store.cached_tools();
  std::unordered_map<std::string_view, std::size_t> index;  // enabled server name -> position
  for (std::size_t i = 0; i < servers.size(); ++i)
    if (servers[i].enabled) index.emplace(servers[i].name, i);
  std::vector<const cached_tools_row*> mine(servers.size());
  std::size_t bytes = 0;
  for (const auto& row : rows) {
    const auto it = index.find(row.server);
    if (it == index.end() || row.config_hash != server_config_hash(servers[it->second])) continue;
    mine[it->second] = &row;
    bytes += row.doc.size();
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < servers.size();)
      if (mine[i]) parse_entry(*mine[i], out[i]);
  };
  // Each entry is a JSON parse into its own arena: nothing is shared but the index. A thread
  // costs more than it saves below a quarter of a megabyte or so of cached text (a typical
  // configuration): one helper per 256 KiB, at most one per other core and three in all.
  const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t helpers = std::min({bytes / (256 * 1024), cores - 1, std::size_t{3}});
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return out;
}

cache_entry load_cache_entry(const state_store& store, const server_config& s) {
  cache_entry out;
  if (!s.enabled) return out;
  if (auto row = store.cached_tools(s.name); row && row->config_hash == server_config_hash(s))
    parse_entry(*row, out);
  return out;
}

result<> store_cached_tools(state_store& store, const server_config& s,
                            const std::vector<json::object>& tools, std::string_view era,
                            const std::unordered_set<std::string>* skip) {
  json::object doc;
  doc["format"] = cache_format;
  if (!era.empty()) doc["era"] = era;
  json::array arr;
  arr.reserve(tools.size());
  for (const auto& t : tools)
    if (!skip || skip->empty() || !skip->count(std::string(t.at("name").get_string())))
      arr.push_back(t);
  doc["tools"] = std::move(arr);
  // One row replaced in one transaction: a kill leaves the old entry or the new one. A commit
  // is not an fsync (WAL, synchronous NORMAL): a cache lost to a power cut is rebuilt.
  return store.put_cached_tools({s.name, server_config_hash(s), json::serialize(doc)});
}

std::size_t migrate_cache_files(const std::string& dir, state_store& store,
                                std::vector<std::string>* warnings) {
  std::vector<cached_tools_row> rows;
  std::vector<std::string> moved;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    const auto name = f.path().filename().string();
    if (!name.starts_with("tools-") || !name.ends_with(".json")) continue;
    const auto path = f.path().string();
    moved.push_back(path);
    auto text = read_text_file(path, max_cache_file);
    boost::system::error_code jec;
    auto v = text ? json::parse(*text, jec) : json::value();
    const auto* obj = v.if_object();
    const auto* server = obj ? obj->if_contains("server") : nullptr;
    const auto* hash = obj ? obj->if_contains("config_hash") : nullptr;
    if (!server || !server->is_string() || !hash || !hash->is_string()) {
      warnings->push_back(path + ": " + (text ? "not a tool cache entry" : text.error().message) +
                          "; removed");
      continue;
    }
    rows.push_back(
        {std::string(server->get_string()), std::string(hash->get_string()), std::move(*text)});
  }
  if (auto moved_in = store.put_cached_tools(rows); !moved_in) {
    warnings->push_back("tool cache files not moved into the state store: " +
                        moved_in.error().message);
    return 0;
  }
  for (const auto& path : moved) std::filesystem::remove(path, ec);
  std::filesystem::remove(dir, ec);  // only when nothing else is left in it
  return rows.size();
}

}  // namespace mcpmux
