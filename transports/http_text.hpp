// Small text helpers of the HTTP client and the HTTP endpoint: header values, media types.
#pragma once

#include <string>
#include <string_view>

#include "base/text.hpp"  // lower()

namespace mcpmux {

/// `s` without leading and trailing spaces, tabs, CR and LF.
std::string trim(std::string_view s);
/// True when `s` holds nothing but spaces, tabs, CR and LF.
bool blank(std::string_view s);
/// The media type of a Content-Type value: lowercase, without parameters ("application/json").
std::string media_type(std::string_view content_type);
/// True when `v` can go into a request header: no CR, LF or NUL.
bool safe_header_value(std::string_view v);

}  // namespace mcpmux
