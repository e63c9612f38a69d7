// The lists an MCP server offers, and a stepable pager that collects one of them: pages in,
// items out. No I/O: the caller sends each request and feeds back its answer.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/json_rpc.hpp"

namespace mcpmux {

/// The lists an MCP server can offer.
enum class collection { tools, resources, resource_templates, prompts };
inline constexpr std::size_t collection_count = 4;

/// How a collection is asked for and read.
struct collection_info {
  std::string_view method;      ///< list method ("tools/list")
  std::string_view key;         ///< array in the result ("tools")
  std::string_view identity;    ///< unique field of an item ("name")
  std::string_view capability;  ///< server capability that declares it ("tools")
  std::string_view noun;        ///< one item, for messages ("tool", "resource template")
};
const collection_info& info(collection c);
/// The result key of a collection ("tools", "resources", "resourceTemplates", "prompts").
std::string_view to_string(collection c);

/// Collects one list across its pages. A page's items without their identity field and items
/// listed twice are skipped (with a warning); a repeated cursor, or more than `max_pages`
/// pages, ends the list with what was gathered.
class list_pager {
 public:
  static constexpr std::size_t max_pages = 1000;

  explicit list_pager(collection c) : c_(c) {}

  collection which() const { return c_; }
  /// The params of the next page's request: {} first, then {"cursor": ...}.
  json::object next_params() const;

  enum class status {
    more,    ///< ask for the next page (next_params())
    done,    ///< the list is complete: take()
    failed,  ///< the answer was an error or malformed: error()
  };
  /// Feeds the answer to the last request. Warnings (skipped items, a looping cursor) are
  /// appended to `warnings`, for the caller to log.
  status on_page(message& reply, std::vector<std::string>& warnings);

  /// The items gathered (moved out).
  std::vector<json::object> take() { return std::move(items_); }
  const std::string& error() const { return error_; }

 private:
  collection c_;
  std::string cursor_;
  std::set<std::string, std::less<>> cursors_;
  std::set<std::string, std::less<>> ids_;
  std::vector<json::object> items_;
  std::string error_;
};

}  // namespace mcpmux
