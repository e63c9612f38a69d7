// A node-based map whose last removed node is kept for the next insertion (C++17 node handles):
// a table that holds one entry at a time, as a sequential client's calls do, then allocates
// and frees no node per entry. The spare node's value is the one moved from: for the values
// kept here (strings, std::function, shared_ptr) that holds nothing, so nothing an entry held
// outlives its removal (tests/unit/test_pending_table.cpp checks it of a handler).
#pragma once

#include <optional>
#include <utility>

namespace mcpmux {

/// The value at `key`, made from the spare node when there is one (a default value otherwise);
/// the value already there when `key` is in the map.
template <class Map>
typename Map::mapped_type& slot_reusing(Map& map, typename Map::node_type& spare,
                                        const typename Map::key_type& key) {
  if (spare.empty()) return map[key];
  spare.key() = key;
  auto placed = map.insert(std::move(spare));
  if (!placed.inserted) spare = std::move(placed.node);
  return placed.position->second;
}

/// Removes `key`'s entry and returns its value; its node, emptied, becomes the spare.
template <class Map>
std::optional<typename Map::mapped_type> take_keeping_node(Map& map, typename Map::node_type& spare,
                                                           const typename Map::key_type& key) {
  auto node = map.extract(key);
  if (node.empty()) return std::nullopt;
  std::optional<typename Map::mapped_type> value(std::move(node.mapped()));
  spare = std::move(node);
  return value;
}

}  // namespace mcpmux
