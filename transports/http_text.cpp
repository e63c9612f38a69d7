// Small text helpers of the HTTP client and the HTTP endpoint.
#include "transports/http_text.hpp"

#include <algorithm>
#include <cctype>

namespace mcpmux {

namespace {
constexpr std::string_view space = " \t\r\n";
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(space);
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(space);
  return std::string(s.substr(b, e - b + 1));
}

bool blank(std::string_view s) {
  return s.find_first_not_of(space) == std::string_view::npos;
}

std::string media_type(std::string_view content_type) {
  return lower(trim(content_type.substr(0, content_type.find(';'))));
}

bool safe_header_value(std::string_view v) {
  return v.find_first_of("\r\n") == std::string_view::npos &&
         v.find('\0') == std::string_view::npos;
}

}  // namespace mcpmux
