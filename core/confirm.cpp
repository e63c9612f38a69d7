// The confirmation's rules: which calls are asked about, the question, the answer.
#include "core/confirm.hpp"

#include <boost/json/serialize.hpp>

#include "base/text.hpp"
#include "config/filters.hpp"

namespace mcpmux {
namespace {

// The boolean hint `name` of `tool`'s annotations; nullopt when it is absent or not a boolean.
std::optional<bool> hint(const json::object* tool, std::string_view name) {
  const auto* a = tool ? tool->if_contains("annotations") : nullptr;
  const auto* ao = a ? a->if_object() : nullptr;
  const auto* h = ao ? ao->if_contains(name) : nullptr;
  if (!h || !h->is_bool()) return std::nullopt;
  return h->get_bool();
}

}  // namespace

bool is_destructive(const json::object* tool) {
  return hint(tool, "readOnlyHint") != true && hint(tool, "destructiveHint") != false;
}

std::optional<std::string_view> confirm_rule_for(const std::vector<std::string>& rules,
                                                 std::string_view exposed,
                                                 const json::object* tool) {
  for (const auto& r : rules)
    if (r == confirm_destructive ? is_destructive(tool) : glob_match(r, exposed)) return r;
  return std::nullopt;
}

const json::object* find_tool(const std::vector<json::object>& tools, std::string_view name) {
  for (const auto& t : tools)
    if (const auto* n = t.if_contains("name"); n && n->is_string() && n->get_string() == name)
      return &t;
  return nullptr;
}

json::object confirm_question(std::string_view exposed, const json::value& arguments) {
  const auto args = arguments.is_null() ? std::string("no arguments") : json::serialize(arguments);
  // A server's and a model's words go to a person: clipped, controls and bad UTF-8 made visible.
  std::string message = "Allow " + visible_text(exposed) + " with " +
                        visible_text(clip(args, confirm_arguments_shown)) + "?";
  json::object allow{{"type", "boolean"},
                     {"title", "Allow for the rest of this session"},
                     {"description", "Do not ask again about " + std::string(exposed) +
                                         " until this client disconnects"},
                     {"default", false}};
  return json::object{{"message", std::move(message)},
                      {"requestedSchema",
                       json::object{{"type", "object"},
                                    {"properties", json::object{{"allow_for_session", allow}}}}}};
}

confirm_answer read_confirm_answer(const rpc_outcome& out) {
  if (out.ec || !out.reply || out.reply->kind != message_kind::response)
    return confirm_answer::cancelled;
  const auto* r = out.reply->body.if_contains("result");
  const auto* result = r ? r->if_object() : nullptr;
  const auto* action = result ? result->if_contains("action") : nullptr;
  if (!action || !action->is_string()) return confirm_answer::cancelled;
  if (*action == "decline") return confirm_answer::declined;
  if (*action != "accept") return confirm_answer::cancelled;
  const auto* content = result->if_contains("content");
  const auto* c = content ? content->if_object() : nullptr;
  const auto* all = c ? c->if_contains("allow_for_session") : nullptr;
  return all && all->is_bool() && all->get_bool() ? confirm_answer::allow_for_session
                                                  : confirm_answer::allow;
}

}  // namespace mcpmux
