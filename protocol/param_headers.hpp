// The 2026-07-28 Streamable HTTP `Mcp-Param-{Name}` headers, sans-io: which tool parameters an
// inputSchema's `x-mcp-header` annotations mirror, how a value is written into a header (and
// the `=?base64?…?=` form Mcp-Name shares), and the server's check that headers and body agree.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/json_rpc.hpp"

namespace mcpmux::mcp {

/// What a header name is made of: "Mcp-Param-" followed by the annotation's name.
inline constexpr std::string_view param_header_prefix = "Mcp-Param-";

/// One tool parameter that `x-mcp-header` mirrors into `Mcp-Param-{name}`.
struct param_header {
  enum class kind { string, integer, boolean };
  std::string name;               ///< the annotation's value: an RFC 9110 token
  std::vector<std::string> path;  ///< property names from the schema root to the parameter
  kind type = kind::string;       ///< the parameter's declared type
};

/// The annotated parameters of each tool of a server that has any, by the tool's name.
struct tool_param_headers {
  std::map<std::string, std::vector<param_header>, std::less<>> tools;
};

/// The annotated parameters of a tool's inputSchema, in schema order. A failure when an annotation
/// breaks a rule (not a string, not a token, a duplicate name ignoring case, on a property that
/// is not a string, integer or boolean, or anywhere not reached from the root through
/// `properties` alone): a client must then hide the tool from tools/list; the error says why,
/// for a log line.
result<std::vector<param_header>> param_headers(const json::object& input_schema);

/// True when `v` can be a header value as it is: printable ASCII (no tab or other control
/// character), no space at either end, and not itself shaped like the base64 sentinel.
bool header_safe(std::string_view v);

/// `utf8` as a header value: itself when header_safe, else `=?base64?{Base64 of it}?=`.
std::string encode_header_value(std::string_view utf8);

/// A received Mcp-Param-* or Mcp-Name value with surrounding spaces and tabs (HTTP's OWS)
/// removed and the base64 form decoded; other values are returned as they are. nullopt when
/// the sentinel holds something that is not canonical padded Base64 (RFC 4648 §4).
std::optional<std::string> decode_header_value(std::string_view raw);

/// Client side: the headers ({"Mcp-Param-Name", value}) a tools/call with these arguments
/// carries. A parameter that is absent, null, or an object or array gets none. A value is
/// written by its JSON type (a string as encode_header_value, an integer in decimal, a boolean
/// as true/false), so what a server compares is what the body says even when it breaks the
/// schema.
std::vector<std::pair<std::string, std::string>> param_header_fields(
    const std::vector<param_header>& headers, const json::object& arguments);

/// Server side: "" when the Mcp-Param-* headers agree with the arguments, else the message of
/// the -32020 (HeaderMismatch) error, naming the header. `lookup(name)` gives the raw value of
/// the header "Mcp-Param-<name>" (names compare ignoring case), nullopt when it is absent.
/// A header is required when its parameter has a value and refused when it has none; strings
/// and booleans compare exactly after decoding, numbers numerically ("42", "042" and "42.0" all
/// match 42). Headers for names the schema does not annotate are not looked at.
std::string check_param_headers(
    const std::vector<param_header>& headers, const json::object& arguments,
    const std::function<std::optional<std::string_view>(std::string_view)>& lookup);

}  // namespace mcpmux::mcp
