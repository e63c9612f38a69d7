// A session's big results paged: the page stage of its calls (core/result_pages cuts, the
// manager's result_store keeps the rest), mcpmux__read_result answered here, and that tool
// offered in its tools list once a result of its was cut.
#include <fmt/format.h>

#include <boost/json/serialize.hpp>

#include "core/confirm.hpp"
#include "core/session.hpp"
#include "core/upstream.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {

std::string session::page_owner() const {
  if (era_ != mcp::era::modern) return "session " + std::to_string(id_);
  return fmt::format("{} uid {} token {} profile {}", who_.transport, who_.uid, who_.token,
                     profile_);
}

std::string session::read_tool() const {
  return "mcpmux" + manager_.current_config().daemon.tool_separator + "read_result";
}

std::optional<std::size_t> session::result_cap(const upstream* up) const {
  // A profile's cap, when it sets one, is over its servers' own; theirs over the daemon's.
  if (const auto* v = profile_.empty() ? nullptr : manager_.profile(profile_);
      v && v->settings.max_result_bytes)
    return v->settings.max_result_bytes;
  if (up && up->config().max_result_bytes) return up->config().max_result_bytes;
  return manager_.current_config().daemon.max_result_bytes;
}

std::optional<rpc_error> session::cut_answer(json::object& result, const page_rules& rules) {
  auto& store = manager_.results();
  const auto owner = page_owner();
  const bool first = !store.has_cut(owner);
  auto out = cut_result(result, rules, store, owner, steady_clock::now());
  if (!out) return std::move(out.error());
  if (*out != cut_outcome::unchanged)
    log_.debug("{}: result above max_result_bytes ({}) {}", rules.what, rules.cap,
               *out == cut_outcome::cut ? "cut" : "refused");
  // The reading tool appears the first time one of its results is cut.
  if (*out == cut_outcome::cut && first) on_list_changed(collection::tools);
  return std::nullopt;
}

void session::add_page_stage(call::request& r, const std::shared_ptr<upstream>& up) {
  if (r.method != "tools/call" && r.method != "resources/read") return;
  // Every call carries its cap; only a long answer runs the stage (page_result).
  if (const auto cap = result_cap(up.get()); cap && *cap) r.page_above = cap;
}

std::optional<rpc_error> session::page_result(call& c, json::object& result) {
  const bool tool = c.method() == "tools/call";
  page_rules rules{.cap = *c.page_above(),
                   .read_tool = read_tool(),
                   .what = fmt::format("{} \"{}\"", tool ? "tool" : "resource", c.exposed())};
  // Looked up only now, for the rare result that is long: the list may have changed since.
  if (auto up = tool ? c.server() : nullptr)
    if (const auto* t = find_tool(up->tools(), c.tool()))
      rules.output_schema = t->contains("outputSchema");
  return cut_answer(result, rules);
}

bool session::read_result_call(message& msg, const mcp::request_meta* meta) {
  const auto* n = msg.params().if_contains("name");
  if (!n || !n->is_string()) return false;
  // Compared in parts: every tools/call passes here, and the whole name is not worth a string.
  const std::string_view name = n->get_string();
  const auto& sep = manager_.current_config().daemon.tool_separator;
  constexpr std::string_view head = "mcpmux", tail = "read_result";
  if (name.size() != head.size() + sep.size() + tail.size() || !name.starts_with(head) ||
      !name.ends_with(tail) || name.substr(head.size(), sep.size()) != sep)
    return false;
  json::object args;
  if (const auto* a = msg.params().if_contains("arguments"); a && a->is_object())
    args = a->get_object();
  auto result =
      read_result_answer(args, read_tool(), manager_.results(), page_owner(), steady_clock::now());
  if (meta) mcp::mark_complete(result);
  send(make_result(msg.id(), result));
  return true;
}

std::string with_item(std::string_view listing, std::string_view item) {
  if (listing.size() < 2) return std::string(listing);
  std::string out(listing.substr(0, listing.size() - 1));  // without its closing bracket
  if (out.size() > 1) out += ',';
  out += item;
  return out + ']';
}

std::string session::with_read_result(std::string_view listing) const {
  if (listing.size() < 2 || !manager_.results().has_cut(page_owner())) return {};
  return with_item(listing, json::serialize(read_result_tool(read_tool())));
}

}  // namespace mcpmux
