// Profiles: what each kind of client sees. A `[profiles.NAME]` table picks servers and exposed
// names, replaces descriptions, and chooses how tools are offered: every one (`all`), or two
// tools that search and call them (`search`; `auto` picks by the list's size), or search and
// a program that calls them (`code`). Clients pick a
// profile (connect --profile, /mcp/NAME) or are matched to one by who they are. Pure: the
// catalogue's sources in, one view per profile out.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "core/catalogue.hpp"
#include "core/search_index.hpp"

namespace mcpmux {

/// Who a client is: its transport and, for a socket client, the process at the other end
/// (SO_PEERCRED) and, when that is `mcpmux connect`, the agent that launched it.
struct client_identity {
  std::string transport = "socket";  ///< "socket" or "http"
  long uid = -1;                     ///< the peer's user (socket: SO_PEERCRED; -1: unknown)
  int pid = 0;                       ///< the peer process (0: unknown)
  std::string program;               ///< its executable
  int agent_pid = 0;                 ///< the agent behind `mcpmux connect` (0: none)
  std::string agent_program;         ///< the agent's executable
  /// The agent's command line: matched by `match` rules, never shown (it may hold secrets).
  std::vector<std::string> agent_args;
  std::string requested_profile;  ///< named by the client (connect --profile, /mcp/NAME)
  std::string token;              ///< HTTP: the name of the bearer token it came with
};

/// The name the client's own words match `pattern` by: its program name, executable path or
/// command line (the agent's when there is one).
bool identity_matches(const client_identity& who, std::string_view pattern);

/// One server as the search tool's description introduces it.
struct server_note {
  std::string name;
  std::string instructions;  ///< the server's instructions ("" when none)
};

class profile_set {
 public:
  struct view {
    profile_config settings;
    catalogue shown;                     ///< every item the profile shows
    catalogue search_listing;            ///< in search mode, the tools list: search and call
    bool searching = false;              ///< exposure search, or auto over its budget
    std::size_t estimated_tokens = 0;    ///< of the whole tools list (≈ 4 bytes a token)
    std::string search_tool, call_tool;  ///< their exposed names
    /// Code mode (`code`): mcpmux__run_code's exposed name ("" when the profile has none) and,
    /// for a profile that lists its tools, its definition, added at the end of the listing.
    std::string code_tool, code_item;
    /// Its patterns and description overrides that match nothing the servers list (e.g.
    /// `tools[1] "gh__*"`): a typo, or a server not listed yet. Shown in status, logged.
    std::vector<std::string> unmatched;
  };
  using changes = std::array<bool, collection_count>;

  /// Takes the configured profiles; a profile whose settings did not change keeps its view.
  /// Returns the names of profiles added, removed or changed.
  std::vector<std::string> configure(const std::vector<profile_config>& profiles);
  /// Rebuilds every view from the catalogue's sources; `whole` is the catalogue of everything
  /// (its names are the profiles' names). Returns, by profile, which of its lists changed.
  std::map<std::string, changes> rebuild(const std::vector<catalogue_source>& sources,
                                         const naming_rules& rules,
                                         const std::vector<server_note>& notes,
                                         const catalogue& whole);
  const view* find(std::string_view name) const;
  /// The profile a client gets: the one it named (checked by the caller), else the first whose
  /// `match` admits it, else `default` when configured, else "" (everything).
  std::string profile_for(const client_identity& who) const;
  bool empty() const { return views_.empty(); }
  const std::map<std::string, std::unique_ptr<view>, std::less<>>& views() const { return views_; }

  /// The search tool's answer: the best `limit` tools of `profile` for `query` (of `server`
  /// when not empty), as listed, best first.
  json::array search(const view& profile, std::string_view query, std::string_view server,
                     std::size_t limit) const;
  /// The tools the index holds (0 until a profile searches).
  std::size_t indexed() const { return index_ ? index_->size() : 0; }

 private:
  std::map<std::string, std::unique_ptr<view>, std::less<>> views_;
  std::unique_ptr<search_index> index_;  ///< made when a profile may search
};

}  // namespace mcpmux
