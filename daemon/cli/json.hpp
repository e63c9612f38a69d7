// Reading the daemon's JSON in the CLI: a parse deep enough for tool results, and lenient member
// access (a missing or mistyped member is "absent", never an exception).
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string_view>

namespace mcpmux::cli {

namespace json = boost::json;

inline json::value parse_json(std::string_view text, boost::system::error_code& ec) {
  json::parse_options opts;
  opts.max_depth = 512;  // tool results nest deeper than Boost.JSON's default of 32
  return json::parse(text, ec, json::storage_ptr{}, opts);
}

inline const json::value* member(const json::value& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  return v.get_object().if_contains(key);
}

inline std::optional<std::string_view> member_string(const json::value& v, std::string_view key) {
  const json::value* m = member(v, key);
  if (m == nullptr || !m->is_string()) return std::nullopt;
  return std::string_view(m->get_string());
}

inline std::optional<std::int64_t> member_int(const json::value& v, std::string_view key) {
  const json::value* m = member(v, key);
  if (m == nullptr) return std::nullopt;
  if (m->is_int64()) return m->get_int64();
  if (m->is_uint64() && m->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return static_cast<std::int64_t>(m->get_uint64());
  }
  if (m->is_double()) return static_cast<std::int64_t>(m->get_double());
  return std::nullopt;
}

}  // namespace mcpmux::cli
