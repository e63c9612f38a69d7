// The stdio handoff between `mcpmux connect` and the daemon: the bridge sends `request` as its
// first line with its stdin and stdout attached (SCM_RIGHTS); a daemon that takes them answers
// `accepted` on the socket and from then on reads and writes the agent's pipes itself, keeping
// the socket only to notice the bridge leave. Any other answer (an older daemon's "unknown
// method") means: keep copying bytes. See README.md, "Socket protocol".
#pragma once

#include <string_view>

namespace mcpmux::handoff {

inline constexpr std::string_view request =
    R"({"jsonrpc":"2.0","id":"mcpmux-handoff","method":"mcpmux/handoff"})";
inline constexpr std::string_view accepted =
    R"({"jsonrpc":"2.0","id":"mcpmux-handoff","result":{"handoff":true}})";

}  // namespace mcpmux::handoff
