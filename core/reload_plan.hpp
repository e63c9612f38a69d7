// The reload plan: old configuration and new configuration in, what to do with each server out.
// Pure; the manager carries it out.
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace mcpmux {

struct reload_plan {
  std::vector<std::string> added;      ///< new servers: start
  std::vector<std::string> removed;    ///< gone: stop
  std::vector<std::string> changed;    ///< different settings: stop the old one, start anew
  std::vector<std::string> unchanged;  ///< same settings: keep (calls in flight unaffected)
  /// Only what it shows changed (`tools`, `prompts`, `resources`): keep it running, apply the
  /// new filters (clients are told list_changed).
  std::vector<std::string> refiltered;
  /// Daemon settings bound at start that a reload cannot apply ("daemon.socket", ...).
  std::vector<std::string> restart_required;
};

/// The plan for a reload from `old` to `next`; `socket_moves` tells whether the socket path the
/// new configuration asks for differs from the one the daemon listens on. Server lists are in
/// the order of `next` (then the removed ones in the order of `old`).
reload_plan plan_reload(const config& old, const config& next, bool socket_moves);

}  // namespace mcpmux
