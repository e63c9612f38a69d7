// Tool cache files: $XDG_CACHE_HOME/mcpmux/tools-<server>.json, written atomically.
#include "core/tool_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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
                                                           std::string* warning) {
  const auto path = entry_path(dir, s);
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return std::nullopt;  // no entry: nothing to say
  if (size > max_cache_file) {
    *warning = path + ": larger than " + std::to_string(max_cache_file) + " bytes; ignored";
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  boost::system::error_code jec;
  auto v = json::parse(buf.str(), jec);
  const auto* obj = v.if_object();
  if (jec || !obj) {
    *warning = path + ": corrupt tool cache entry; ignored";
    return std::nullopt;
  }
  const auto* fmt = obj->if_contains("format");
  const auto* hash = obj->if_contains("config_hash");
  const auto* tools = obj->if_contains("tools");
  if (!fmt || !fmt->is_int64() || fmt->get_int64() != cache_format || !hash || !hash->is_string() ||
      !tools || !tools->is_array()) {
    *warning = path + ": tool cache entry of an unknown shape; ignored";
    return std::nullopt;
  }
  if (hash->get_string() != server_config_hash(s)) return std::nullopt;  // config changed: stale
  std::vector<json::object> out;
  for (const auto& t : tools->get_array()) {
    const auto* to = t.if_object();
    const auto* n = to ? to->if_contains("name") : nullptr;
    if (!n || !n->is_string()) {
      *warning = path + ": tool cache entry has a tool without a name; ignored";
      return std::nullopt;
    }
    out.push_back(*to);
  }
  return out;
}

bool store_cached_tools(const std::string& dir, const server_config& s,
                        const std::vector<json::object>& tools, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ::chmod(dir.c_str(), 0700);
  json::object doc;
  doc["format"] = cache_format;
  doc["server"] = s.name;
  doc["config_hash"] = server_config_hash(s);
  json::array arr;
  arr.reserve(tools.size());
  for (const auto& t : tools) arr.push_back(t);
  doc["tools"] = std::move(arr);
  const std::string text = json::serialize(doc);

  const auto path = entry_path(dir, s);
  const auto tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    *error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  std::size_t off = 0;
  while (off < text.size()) {
    auto n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = "cannot write " + tmp + ": " + std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot rename " + tmp + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace mcpmux
