// Which tool calls a person confirms first (`confirm = ["destructive", "github__delete_*"]`), the
// question asked of the client (an elicitation) and what its answer means. Pure: the session asks
// (core/session_confirm.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/json_rpc.hpp"
#include "protocol/pending_table.hpp"

namespace mcpmux {

/// True when `tool` (a tools/list entry; null: not known) is destructive by the spec's defaults:
/// annotations.readOnlyHint is not true and annotations.destructiveHint is not false. A tool
/// without annotations is.
bool is_destructive(const json::object* tool);

/// The entry of `rules` (a `confirm` list) that asks for a confirmation of the tool exposed as
/// `exposed` (its tools/list entry `tool`, null when not known); nullopt when none does.
std::optional<std::string_view> confirm_rule_for(const std::vector<std::string>& rules,
                                                 std::string_view exposed,
                                                 const json::object* tool);

/// The tools/list entry named `name` in `tools` (a server's own names); null when none is.
const json::object* find_tool(const std::vector<json::object>& tools, std::string_view name);

/// The longest the arguments are shown in the question (bytes, before escaping).
inline constexpr std::size_t confirm_arguments_shown = 500;

/// The params of the elicitation/create that asks whether `exposed` may run with `arguments`:
/// "Allow NAME with ARGS?" (the arguments clipped and shown as visible text) and one boolean,
/// allow_for_session.
json::object confirm_question(std::string_view exposed, const json::value& arguments);

/// What the client answered.
enum class confirm_answer {
  allow,              ///< accept
  allow_for_session,  ///< accept, and the tool is not asked about again in this session
  declined,           ///< decline
  cancelled,          ///< cancel, an answer that is none of these, or no answer (an error)
};
confirm_answer read_confirm_answer(const rpc_outcome& out);

}  // namespace mcpmux
