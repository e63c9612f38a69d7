// Watches the configuration file (inotify on its directory) and reports changes, debounced.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class config_watch {
 public:
  virtual ~config_watch() = default;
  virtual void close() = 0;
};

/// Calls `on_change` once things are quiet for `debounce` after the file at `path` is written,
/// replaced (editors rename over it), created or removed. Null when the directory cannot be
/// watched (it does not exist, or inotify is unavailable): the daemon then reloads only on
/// SIGHUP and `mcpmux reload`.
std::shared_ptr<config_watch> watch_config(boost::asio::io_context& io, const std::string& path,
                                           std::chrono::milliseconds debounce,
                                           std::function<void()> on_change);

}  // namespace mcpmux
