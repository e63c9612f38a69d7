// The sandbox keys of a [servers.NAME] table (stdio servers) and `[daemon] sandbox`: the mode,
// the network, the paths a server may reach beyond what it is given, and its resource limits.
// What they mean is sandbox/policy.hpp's; here they are read and checked.
#include <fmt/format.h>

#include <toml++/toml.h>
#include <cctype>
#include <charconv>
#include <cmath>

#include "base/text.hpp"
#include "config/config_detail.hpp"

namespace mcpmux::config_validation {
namespace {

// "512M", "2G", "1.5G", "65536" (bytes; K, M, G, T are powers of 1024, an optional "iB"/"B"),
// "0" or "max" (no limit).
std::optional<std::uint64_t> parse_size(std::string_view s) {
  if (s == "max") return 0;
  double number = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec != std::errc() || number < 0) return std::nullopt;
  std::string unit(end, s.data() + s.size());
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (unit.ends_with("IB"))
    unit.resize(unit.size() - 2);
  else if (unit.ends_with("B"))
    unit.pop_back();
  double scale = 1;
  if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    return std::nullopt;
  const double bytes = number * scale;
  if (bytes >= 9.0e18) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

// A network host entry: a name, `*.` and a name, an IP literal, each with an optional `:port`.
bool plausible_host(std::string_view h) {
  if (h.empty() || h.size() > 260) return false;
  if (h.starts_with("*.")) h.remove_prefix(2);
  if (h.empty()) return false;
  for (char c : h)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':' ||
          c == '[' || c == ']' || c == '_'))
      return false;
  return h.find('*') == std::string_view::npos;
}

}  // namespace

// A count limit: 0 (no limit), or between `least` and `most`.
std::optional<std::uint64_t> validator::count_limit(const toml::node& n, const std::string& key,
                                                    std::int64_t least, std::int64_t most) {
  auto i = get_integer(n, key, 0, most);
  if (!i) return std::nullopt;
  if (*i != 0 && *i < least) {
    fail(n, key, fmt::format("must be 0 (no limit) or at least {} (got {})", least, *i));
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(*i);
}

std::optional<sandbox_mode> validator::sandbox(const toml::node& n, const std::string& key) {
  constexpr sandbox_mode modes[] = {sandbox_mode::standard, sandbox_mode::strict, sandbox_mode::off,
                                    sandbox_mode::required};
  if (auto i = get_choice(n, key, {"default", "strict", "off", "required"})) return modes[*i];
  return std::nullopt;
}

bool validator::sandbox_key(std::string_view kn, const toml::node& v, const std::string& key,
                            sandbox_settings& s) {
  if (kn == "sandbox") {
    s.mode = sandbox(v, key);
  } else if (kn == "network") {
    network_setting net;
    if (v.is_string()) {
      if (auto i = get_choice(v, key, {"all", "none"})) {
        net.mode = *i == 0 ? network_setting::kind::all : network_setting::kind::none;
        s.network = net;
      }
    } else if (v.is_array()) {
      net.mode = network_setting::kind::hosts;
      each_string(v, key, [&](std::string h, const toml::node& e, const std::string& sub) {
        if (!plausible_host(h))
          fail(e, sub,
               fmt::format("must be a host name (\"api.example.com\", \"*.example.org\", "
                           "\"host:8443\") (got \"{}\")",
                           h));
        else
          net.hosts.push_back(lower(h));
      });
      s.network = std::move(net);
    } else {
      type_error(v, key, "\"all\", \"none\" or an array of host names");
    }
  } else if (kn == "allow_read" || kn == "allow_write") {
    std::vector<std::string> paths;
    if (const auto* a = v.as_array()) {
      for (std::size_t i = 0; i < a->size(); ++i)
        if (auto p = absolute_path(*a->get(i), key + "[" + std::to_string(i) + "]", true))
          paths.push_back(std::move(*p));
    } else {
      type_error(v, key, "an array of paths");
    }
    (kn == "allow_read" ? s.allow_read : s.allow_write) = std::move(paths);
  } else if (kn == "memory_max") {
    std::optional<std::uint64_t> bytes;
    if (const auto* i = v.as_integer()) {
      if (i->get() >= 0) bytes = static_cast<std::uint64_t>(i->get());
    } else if (const auto* str = v.as_string()) {
      bytes = parse_size(str->get());
    }
    if (!bytes || (*bytes != 0 && *bytes < (4u << 20)))
      fail(v, key,
           "must be a size of at least 4M such as \"512M\" or \"2G\" (or bytes), or \"max\" for "
           "no limit");
    else
      s.memory_max = bytes;
  } else if (kn == "cpu_max") {
    std::optional<double> cpus;
    if (const auto* i = v.as_integer()) cpus = static_cast<double>(i->get());
    if (const auto* f = v.as_floating_point()) cpus = f->get();
    if (!cpus || !std::isfinite(*cpus) || *cpus < 0 || *cpus > 4096 || (*cpus > 0 && *cpus < 0.01))
      fail(v, key, "must be a number of CPUs such as 0.5 or 2 (at least 0.01), or 0 for no limit");
    else
      s.cpu_max = cpus;
  } else if (kn == "tasks_max") {
    if (auto n = count_limit(v, key, 8, 4194304)) s.tasks_max = n;
  } else if (kn == "files_max") {
    if (auto n = count_limit(v, key, 16, 1048576)) s.files_max = n;
  } else {
    return false;
  }
  return true;
}

}  // namespace mcpmux::config_validation
