// Watches the configuration file and the files it includes (inotify on their directories) and
// reports changes, debounced.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class config_watch {
 public:
  virtual ~config_watch() = default;
  /// Replaces the set of watched files (after a reload changed `daemon.include`). A file whose
  /// directory cannot be watched is skipped (false when none could be watched).
  virtual bool watch(const std::vector<std::string>& paths) = 0;
  virtual void close() = 0;
};

/// Calls `on_change` once things are quiet for `debounce` after one of the files at `paths` is
/// written, replaced (editors rename over it), created or removed. Null when no directory can be
/// watched (none exists, or inotify is unavailable): the daemon then reloads only on SIGHUP and
/// `mcpmux reload`.
std::shared_ptr<config_watch> watch_config(boost::asio::io_context& io,
                                           const std::vector<std::string>& paths,
                                           std::chrono::milliseconds debounce,
                                           std::function<void()> on_change);

}  // namespace mcpmux
