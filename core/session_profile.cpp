// A session's profile: the client naming it (mcpmux/profile), and the two tools of a search
// profile — the search answered here from the index, the call passed on as a call of the tool
// it names.
#include <boost/json/serialize.hpp>

#include "core/session.hpp"
#include "core/tool_error.hpp"
#include "protocol/error.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {
namespace {

constexpr std::size_t default_search_limit = 5;
constexpr std::size_t max_search_limit = 50;

}  // namespace

void session::choose_profile(const message& msg) {
  const auto& id = msg.id();
  if (era_ != mcp::era::unknown)
    return reply_error(id, rpc_code::invalid_request,
                       "Invalid Request: mcpmux/profile must come before the first MCP request");
  const auto* name = msg.params().if_contains("name");
  if (!name || !name->is_string())
    return reply_error(id, rpc_code::invalid_params,
                       "Invalid params: mcpmux/profile needs a string \"name\"");
  client_identity asked = who_;
  asked.requested_profile = name->get_string();
  auto p = manager_.profile_for(asked);
  if (const auto* err = p.if_error()) return reply_error(id, err->code, err->message);
  who_ = std::move(asked);
  profile_ = *p;
  log_.debug("profile {} (asked for)", profile_);
  send(make_result(id, json::object{{"profile", profile_}}));
}

bool session::search_tool_call(message& msg, const mcp::request_meta* meta) {
  if (profile_.empty()) return false;
  const auto* v = manager_.profile(profile_);
  // The two tools stay callable while an `auto` profile lists everything (a client may have
  // kept them from an earlier list).
  if (!v || v->settings.exposure == exposure_mode::all) return false;
  auto* pv = msg.body.if_contains("params");
  if (!pv || !pv->is_object()) return false;
  auto& params = pv->get_object();
  const auto* n = params.if_contains("name");
  if (!n || !n->is_string()) return false;
  const std::string_view name = n->get_string();
  if (name != v->search_tool && name != v->call_tool) return false;
  const auto& id = msg.id();
  json::object args;
  if (const auto* a = params.if_contains("arguments"); a && a->is_object()) args = a->get_object();
  const auto answer = [&](json::object result) {
    if (meta) mcp::mark_complete(result);
    send(make_result(id, result));
    return true;
  };
  const auto text_of = [&](std::string_view key) -> std::string_view {
    const auto* x = args.if_contains(key);
    return x && x->is_string() ? std::string_view(x->get_string()) : std::string_view();
  };

  if (name == v->search_tool) {
    const auto query = text_of("query");
    if (query.empty()) return answer(tool_error("search_tools needs a non-empty \"query\""));
    std::size_t limit = default_search_limit;
    if (const auto* l = args.if_contains("limit")) {
      if (!l->is_int64() || l->get_int64() < 1)
        return answer(tool_error("\"limit\" must be a positive integer"));
      limit = std::min<std::size_t>(static_cast<std::size_t>(l->get_int64()), max_search_limit);
    }
    const auto format = text_of("format");
    if (!format.empty() && format != "json" && (format != "typescript" || !v->settings.code))
      return answer(tool_error(v->settings.code
                                   ? "\"format\" is \"json\" or \"typescript\""
                                   : "\"format\" is \"json\" (this profile has no code mode)"));
    auto found = manager_.profiles().search(*v, query, text_of("server"), limit);
    const auto count = found.size();
    bool listed_more = false;
    if (v->settings.list_found_tools)
      for (const auto& t : found)
        listed_more |= found_.insert(std::string(t.at("name").get_string())).second;
    if (format == "typescript" && count > 0) {
      answer(declarations_of(found));
      if (listed_more) on_list_changed(collection::tools);
      return true;
    }
    json::object structured{{"tools", std::move(found)}};
    std::string text = json::serialize(structured);
    if (count == 0)
      text = "No tool matches \"" + std::string(query) +
             "\". Try other words, or fewer; the servers are listed in this tool's description.";
    answer(json::object{
        {"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}},
        {"structuredContent", std::move(structured)}});
    if (listed_more) on_list_changed(collection::tools);
    return true;
  }

  // The call tool: the tool it names is called as if the client had called it directly.
  const auto target = text_of("name");
  if (target.empty()) return answer(tool_error("call_tool needs the \"name\" of a tool"));
  if (target == v->search_tool || target == v->call_tool ||
      !manager_.find(collection::tools, target, profile_))
    return answer(tool_error("Unknown tool \"" + std::string(target) + "\"; find tools with " +
                             v->search_tool + " and call them by the name it gives"));
  json::value inner_args = json::object{};
  if (const auto* a = args.if_contains("arguments")) {
    if (!a->is_object()) return answer(tool_error("\"arguments\" must be an object"));
    inner_args = *a;
  }
  params["name"] = std::string(target);
  params["arguments"] = std::move(inner_args);
  return false;  // routed as a call of `target`
}

std::string session::with_found_tools(std::string_view listing) const {
  const auto* v = profile_.empty() ? nullptr : manager_.profile(profile_);
  if (!v || !v->searching || listing.size() < 2) return {};
  std::string out(listing.substr(0, listing.size() - 1));  // without its closing bracket
  for (const auto& name : found_) {
    const auto item = v->shown.item(collection::tools, name);
    if (item.empty()) continue;  // no longer in the profile
    if (out.size() > 1) out += ',';
    out += item;
  }
  return out + ']';
}

}  // namespace mcpmux
