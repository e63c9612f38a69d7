// A tool's answer that is an error the model reads (a result with isError), not a protocol
// error: what mcpmux answers itself when it refuses a tools/call or cannot do what it asked (a
// limit, a declined confirmation, an unknown result handle, a search without a query).
#pragma once

#include <string>

#include "protocol/json_rpc.hpp"

namespace mcpmux {

inline json::object tool_error(std::string text) {
  return json::object{
      {"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}},
      {"isError", true}};
}

}  // namespace mcpmux
