// Tool naming: exposed names `<prefix><separator><tool>`, sanitised, length-capped and
// collision-free.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {

/// One upstream tool to be named.
struct naming_input {
  std::string server;    ///< server name (tie-breaker for deterministic order)
  std::string prefix;    ///< the server's effective prefix; "" = no prefix
  std::string original;  ///< the tool name as the upstream gave it
};

/// The exposed name chosen for `inputs[index]`.
struct naming_output {
  std::size_t index;    ///< into the inputs
  std::string exposed;  ///< unique, only [A-Za-z0-9_-], at most max_len characters
};

/// Length of the `_` + 8-hex-digit suffix added by shortening and collision renames. A max_len
/// below this cannot hold a unique name, so naming treats smaller values as this (config validation
/// should reject them).
inline constexpr std::size_t min_tool_name_len = 9;

/// Rules of the naming contract.
struct naming_rules {
  std::string separator = "__";
  std::size_t max_len = 64;
};

/// Replaces every character outside [A-Za-z0-9_-] with '_'.
std::string sanitize_tool_name(std::string_view in);

/// Shortens `name` to at most max_len characters deterministically: keeps a head and appends
/// `_` + 8 hex digits of a hash of `key` (the unshortened identity). Names that fit are returned
/// unchanged. The digits are the high 32 bits of fnv1a64(key) in lowercase hex. A max_len below
/// min_tool_name_len is raised to it.
std::string shorten_tool_name(std::string_view name, std::string_view key, std::size_t max_len);

/// A message describing one collision, for the log.
struct naming_collision {
  std::string exposed;  ///< the name both wanted
  std::string winner;   ///< "server/tool" that kept it
  std::string loser;    ///< "server/tool" that was renamed
  std::string renamed;  ///< the name the loser got
};

/// Names every input. Deterministic: the result depends only on the inputs as a set. Inputs are
/// ordered by (server, original); on a collision the first keeps the name and later ones get a
/// hash suffix. Output is sorted by exposed name. Collisions are appended to `collisions` (may be
/// null). An input whose name sanitises to "" (no prefix, empty tool) is exposed as "_".
std::vector<naming_output> assign_tool_names(const std::vector<naming_input>& inputs,
                                             const naming_rules& rules,
                                             std::vector<naming_collision>* collisions);

/// 64-bit FNV-1a, used for short hashes (stable across runs and machines).
std::uint64_t fnv1a64(std::string_view data);

}  // namespace mcpmux
