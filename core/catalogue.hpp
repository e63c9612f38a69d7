// The catalogue: what clients see of the upstreams' lists. Pure: the servers' lists in, the
// exposed lists out (names under the naming contract, URI collisions as aliases), with routes
// back to (server, original name) and pages with cursors bound to the list they paged.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

#include "core/lists.hpp"
#include "core/naming.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux {

/// Where an exposed item really lives.
struct route {
  std::string server;    ///< upstream name
  std::string original;  ///< its name or URI on that server
  bool operator==(const route&) const = default;
};

/// One page of a combined list, ready to be spliced into a result.
struct list_page {
  /// Read-only text shared with the catalogue: a whole list of 10,000 tools is a megabyte, not
  /// worth copying for every tools/list. Reads as a std::string_view.
  struct shared_text {
    std::shared_ptr<const std::string> text;
    operator std::string_view() const { return *text; }
  };
  shared_text items_json;                  ///< a JSON array
  std::optional<std::string> next_cursor;  ///< opaque; absent on the last page
};

/// One server's part of the catalogue.
struct catalogue_source {
  std::string server;  ///< sources come in server-name order
  std::string prefix;  ///< the effective prefix of its tool and prompt names
  std::array<const std::vector<json::object>*, collection_count> lists{};
  /// Which items are shown (config/filters.hpp rules); null or empty: all. A hidden item gets
  /// no name and no route: calling it is calling an unknown tool.
  std::array<const std::vector<std::string>*, collection_count> shown{};
  /// Items trust holds back (core/trust.hpp), by the server's own name or URI template: like a
  /// hidden item, no name and no route.
  std::array<const std::unordered_set<std::string>*, collection_count> held{};
};

/// What a profile shows of the whole catalogue. Names are given over every source first (an
/// item has the same exposed name in every profile), then these rules pick (config/filters.hpp;
/// null or empty: all).
struct catalogue_view {
  const std::vector<std::string>* servers = nullptr;  ///< by server name
  /// By exposed name (tools, prompts) or exposed URI (resources, templates).
  std::array<const std::vector<std::string>*, collection_count> shown{};
  /// Tools whose description the profile replaces, by exposed name.
  const std::map<std::string, std::string>* descriptions = nullptr;
};

class catalogue {
 public:
  using routes_t = std::vector<std::pair<std::string, route>>;  ///< by exposed name, sorted

  /// Rebuilds every list from `sources`, as `view` shows them (null: everything). Returns which
  /// lists changed (their cursors go stale). A name or URI collision is described in `warnings`
  /// the first time it is seen.
  std::array<bool, collection_count> rebuild(const std::vector<catalogue_source>& sources,
                                             const naming_rules& rules,
                                             std::vector<std::string>& warnings,
                                             const catalogue_view* view = nullptr);

  /// The route of an exposed tool or prompt name, resource URI or template.
  const route* find(collection c, std::string_view exposed) const;
  /// The server for a URI: an exposed resource, an `mcpmux://server/uri` alias of a server
  /// `is_server` knows, or the server whose template's literal head matches most of it.
  template <class IsServer>
  std::optional<route> route_resource(std::string_view uri, IsServer&& is_server) const;
  /// A page of a list of at most `page_size` items; `cursor` empty for the first page. A cursor
  /// of an older generation of the list is an error.
  result<list_page> page(collection c, std::string_view cursor, std::size_t page_size) const;
  std::size_t size(collection c) const { return at(c).begins.size(); }
  const routes_t& routes(collection c) const { return at(c).routes; }
  /// The serialized exposed item of a tool or prompt (as listed); empty when unknown.
  std::string_view item(collection c, std::string_view exposed) const;
  /// The whole serialized list (a JSON array).
  std::string_view joined(collection c) const { return *at(c).joined; }

  /// A list as it can be kept (core/catalogue_snapshot.hpp): its text, where each item starts
  /// in it, and the routes. Of tools and prompts, the i-th route is the i-th item.
  struct kept_list {
    std::shared_ptr<const std::string> joined;
    const std::vector<std::size_t>* begins;
    const routes_t* routes;
  };
  kept_list kept(collection c) const {
    const auto& l = at(c);
    return {l.joined, &l.begins, &l.routes};
  }
  /// Puts a kept list of tools or prompts back, as if rebuilt. False, and nothing changed, when
  /// the parts do not fit together (items framed by the begins, one route for each, in name
  /// order).
  bool restore(collection c, std::string joined, std::vector<std::size_t> begins, routes_t routes);

 private:
  struct list {
    /// The serialized exposed items, in list order, as one array (shared with pages being sent).
    std::shared_ptr<const std::string> joined = std::make_shared<const std::string>("[]");
    std::vector<std::size_t> begins;  ///< where each item starts in `joined`
    routes_t routes;
    /// Each route's name's hash and its index in `routes`, by hash: a name is found with one
    /// hash, a search among integers and one comparison of text (a binary search over the
    /// names compared ~6 texts, ~300 instructions a call). Values, so a copy stays true; the
    /// hash starts from a seed of the process's own, so a server cannot pick names that collide.
    std::vector<std::pair<std::uint64_t, std::uint32_t>> by_hash;
    std::uint64_t generation = 0;  ///< bumped whenever the list changes (cursors carry it)
    /// The index of `exposed` in routes, or routes.size().
    std::size_t index_of(std::string_view exposed) const;
  };
  const list& at(collection c) const { return lists_[static_cast<std::size_t>(c)]; }
  bool rebuild_named(collection c, const std::vector<catalogue_source>& sources,
                     const naming_rules& rules, std::vector<std::string>& warnings,
                     const catalogue_view* view);
  bool rebuild_uris(collection c, const std::vector<catalogue_source>& sources,
                    std::vector<std::string>& warnings, const catalogue_view* view);
  bool install(collection c, std::pair<std::string, std::vector<std::size_t>> items,
               routes_t routes);
  std::optional<route> route_by_template(std::string_view uri) const;

  std::array<list, collection_count> lists_;
  std::unordered_set<std::string> reported_;  ///< collisions already described
};

template <class IsServer>
std::optional<route> catalogue::route_resource(std::string_view uri, IsServer&& is_server) const {
  if (const auto* r = find(collection::resources, uri)) return *r;
  if (uri.substr(0, 9) == "mcpmux://") {
    auto rest = uri.substr(9);
    auto slash = rest.find('/');
    if (slash != std::string_view::npos && is_server(rest.substr(0, slash)))
      return route{std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
  }
  return route_by_template(uri);
}

}  // namespace mcpmux
