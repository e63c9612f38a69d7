// Tool cache files: $XDG_CACHE_HOME/mcpmux/tools-<server>.json, written atomically.
#include "core/tool_cache.hpp"

#include <atomic>
#include <thread>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdint>

#include "config/files.hpp"
#include "core/naming.hpp"

namespace mcpmux {
namespace {

constexpr int cache_format = 1;
constexpr std::size_t max_cache_file = 64u << 20;

std::string entry_path(const std::string& dir, const server_config& s) {
  return dir + "/tools-" + s.name + ".json";
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

std::optional<std::vector<json::object>> load_cached_tools(const std::string& dir,
                                                           const server_config& s,
                                                           std::string* warning, std::string* era) {
  const auto path = entry_path(dir, s);
  std::string error;
  bool missing = false;
  auto text = read_text_file(path, max_cache_file, error, &missing);
  if (!text) {
    if (!missing) *warning = path + ": " + error + "; ignored";  // no entry: nothing to say
    return std::nullopt;
  }
  // The tools live as long as the list (replaced wholesale when the server lists again): one
  // arena for the whole entry allocates far faster and more compactly than a malloc per node.
  boost::system::error_code jec;
  auto v = json::parse(*text, jec, json::make_shared_resource<json::monotonic_resource>());
  auto* obj = v.if_object();
  if (jec || !obj) {
    *warning = path + ": corrupt tool cache entry; ignored";
    return std::nullopt;
  }
  const auto* fmt = obj->if_contains("format");
  const auto* hash = obj->if_contains("config_hash");
  auto* tools = obj->if_contains("tools");
  if (!fmt || !fmt->is_int64() || fmt->get_int64() != cache_format || !hash || !hash->is_string() ||
      !tools || !tools->is_array()) {
    *warning = path + ": tool cache entry of an unknown shape; ignored";
    return std::nullopt;
  }
  if (hash->get_string() != server_config_hash(s)) return std::nullopt;  // config changed: stale
  if (const auto* e = obj->if_contains("era"); era && e && e->is_string()) *era = e->get_string();
  std::vector<json::object> out;
  out.reserve(tools->get_array().size());
  for (auto& t : tools->get_array()) {
    auto* to = t.if_object();
    const auto* n = to ? to->if_contains("name") : nullptr;
    if (!n || !n->is_string()) {
      *warning = path + ": tool cache entry has a tool without a name; ignored";
      return std::nullopt;
    }
    out.push_back(std::move(*to));  // the parsed document is dropped: take its objects
  }
  return out;
}

std::vector<cache_entry> load_cache_entries(const std::string& dir,
                                            const std::vector<server_config>& servers) {
  std::vector<cache_entry> out(servers.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < servers.size();) {
      if (!servers[i].enabled) continue;
      out[i].tools = load_cached_tools(dir, servers[i], &out[i].warning, &out[i].era);
    }
  };
  // Each entry is a file read and a JSON parse into its own arena: nothing is shared but the
  // index. A few servers are not worth a thread.
  const std::size_t helpers =
      servers.size() < 8 ? 0 : std::min<std::size_t>(3, std::thread::hardware_concurrency() - 1);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < helpers; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  return out;
}

bool store_cached_tools(const std::string& dir, const server_config& s,
                        const std::vector<json::object>& tools, std::string* error,
                        std::string_view era) {
  json::object doc;
  doc["format"] = cache_format;
  doc["server"] = s.name;
  doc["config_hash"] = server_config_hash(s);
  if (!era.empty()) doc["era"] = era;
  json::array arr;
  arr.reserve(tools.size());
  for (const auto& t : tools) arr.push_back(t);
  doc["tools"] = std::move(arr);
  // Atomic (a crash leaves the old entry or the new one, never a torn file) but not synced: a
  // hundred servers starting would otherwise wait on a hundred fsyncs on the loop, for a cache
  // the next start rebuilds anyway. The directory is created private.
  *error = write_file_atomically(entry_path(dir, s), json::serialize(doc), durability::cache);
  return error->empty();
}

}  // namespace mcpmux
