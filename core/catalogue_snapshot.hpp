// The catalogue snapshot: the tools list a start built from the tool cache, kept in the state
// store beside it. The next start under the same configuration, with the cache unchanged since
// (core/state_store.hpp: its generation), serves that list at once and parses the cached tools
// after, on another thread: with 10,000 cached tools, parsing them and naming them was most of
// the time to the first tools/list.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "core/catalogue.hpp"
#include "core/state_store.hpp"

namespace mcpmux {

/// A server whose cached tools the kept list holds, with the era its entry recorded.
struct snapshot_server {
  std::string name;
  std::string era;
  bool operator==(const snapshot_server&) const = default;
};

/// A server's place in the catalogue as its configuration gives it: name, prefix, filters (its
/// lists and what trust holds back are the caller's).
catalogue_source source_of(const server_config& cfg);

/// What a start's tools list depends on in `cfg`: the naming rules, and each enabled server's
/// name, prefix, tool filters and configuration hash (core/tool_cache.hpp). Trust plays no
/// part: nothing is judged before a server is up, and the cache holds only what was trusted.
std::string catalogue_snapshot_key(const config& cfg);

/// The tools list of `cat` as kept: where each item starts and goes, and the servers it holds
/// cached tools of. (The list's text is kept as it is.)
std::string encode_catalogue_routes(const catalogue& cat,
                                    const std::vector<snapshot_server>& cached);

/// Puts a kept tools list back into `cat`; the servers it holds cached tools of. Nothing
/// changes, and nullopt, when the row does not decode or its parts do not fit together.
std::optional<std::vector<snapshot_server>> restore_catalogue(catalogue& cat,
                                                              catalogue_snapshot_row row);

}  // namespace mcpmux
