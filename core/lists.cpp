#include "core/lists.hpp"

#include <boost/json/serialize.hpp>

#include "base/text.hpp"
#include "protocol/param_headers.hpp"

namespace mcpmux {
namespace {

constexpr collection_info collections[collection_count] = {
    {"tools/list", "tools", "name", "tools", "tool"},
    {"resources/list", "resources", "uri", "resources", "resource"},
    {"resources/templates/list", "resourceTemplates", "uriTemplate", "resources",
     "resource template"},
    {"prompts/list", "prompts", "name", "prompts", "prompt"},
};

}  // namespace

const collection_info& info(collection c) {
  return collections[static_cast<std::size_t>(c)];
}

std::string_view to_string(collection c) {
  return info(c).key;
}

json::object list_pager::next_params() const {
  json::object p;
  if (!cursor_.empty()) p["cursor"] = cursor_;
  return p;
}

list_pager::status list_pager::on_page(message& reply, std::vector<std::string>& warnings) {
  const auto& ci = info(c_);
  if (reply.kind == message_kind::error_response) {
    error_ = std::string(ci.method) + " failed: " + json::serialize(reply.body["error"]);
    return status::failed;
  }
  auto* result = reply.body["result"].if_object();
  auto* items = result ? result->if_contains(ci.key) : nullptr;
  if (!items || !items->is_array()) {
    error_ = std::string(ci.method) + " result has no " + std::string(ci.key) + " array";
    return status::failed;
  }
  for (auto& t : items->get_array()) {
    auto* obj = t.if_object();
    const auto* n = obj ? obj->if_contains(ci.identity) : nullptr;
    if (!n || !n->is_string() || n->get_string().empty()) {
      warnings.push_back("skipped an item of " + std::string(ci.method) + " without a " +
                         std::string(ci.identity) + ": " + clip(json::serialize(t)));
      continue;
    }
    // A tool whose arguments cannot travel as the headers it asks for (2026-07-28 HTTP's
    // x-mcp-header) must not be offered: clients would drop it, servers refuse its calls.
    if (c_ == collection::tools) {
      const auto* schema = obj->if_contains("inputSchema");
      if (schema && schema->is_object())
        if (auto headers = mcp::param_headers(schema->get_object()); !headers) {
          warnings.push_back("skipped tool \"" + clip(n->get_string(), 64) +
                             "\": invalid x-mcp-header (" + headers.error().message + ")");
          continue;
        }
    }
    // A server that lists an item twice (a broken paginator) gets its first definition kept.
    if (!ids_.emplace(n->get_string()).second) {
      warnings.push_back("skipped a second " + std::string(ci.identity) + " \"" +
                         clip(n->get_string(), 64) + "\" in " + std::string(ci.method));
      continue;
    }
    items_.push_back(std::move(*obj));
  }
  const auto* next = result->if_contains("nextCursor");
  if (!next || !next->is_string() || next->get_string().empty()) return status::done;
  const std::string_view cur = next->get_string();
  if (cursors_.count(cur) || cursors_.size() >= max_pages) {
    warnings.push_back(std::string(ci.method) + " repeated cursor \"" + clip(cur, 64) +
                       "\"; stopping after " + std::to_string(items_.size()) + " items");
    return status::done;
  }
  cursor_ = cur;
  cursors_.emplace(cur);
  return status::more;
}

}  // namespace mcpmux
