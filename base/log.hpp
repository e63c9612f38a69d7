// A small logging facade: the core logs through it; the daemon wires it to spdlog, tests capture
// it.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/text.hpp"

namespace mcpmux {

enum class log_level { trace, debug, info, warn, error, off };

std::string_view to_string(log_level l);
std::optional<log_level> parse_log_level(std::string_view s);

/// Where formatted lines go: (level, logger name, message).
using log_sink = std::function<void(log_level, std::string_view, std::string_view)>;

void set_log_sink(log_sink sink);
void set_log_level(log_level l);
log_level current_log_level();
inline bool log_enabled(log_level l) {
  return l >= current_log_level() && l != log_level::off;
}

namespace detail {
void emit(log_level l, std::string_view logger, std::string_view msg);
}

/// One logger per subsystem, carrying its context in the name ("upstream files", "session 7").
class logger {
 public:
  explicit logger(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  template <class... A>
  void log(log_level l, fmt::format_string<A...> f, A&&... a) const {
    if (log_enabled(l)) detail::emit(l, name_, fmt::format(f, std::forward<A>(a)...));
  }
  template <class... A>
  void trace(fmt::format_string<A...> f, A&&... a) const {
    log(log_level::trace, f, std::forward<A>(a)...);
  }
  template <class... A>
  void debug(fmt::format_string<A...> f, A&&... a) const {
    log(log_level::debug, f, std::forward<A>(a)...);
  }
  template <class... A>
  void info(fmt::format_string<A...> f, A&&... a) const {
    log(log_level::info, f, std::forward<A>(a)...);
  }
  template <class... A>
  void warn(fmt::format_string<A...> f, A&&... a) const {
    log(log_level::warn, f, std::forward<A>(a)...);
  }
  template <class... A>
  void error(fmt::format_string<A...> f, A&&... a) const {
    log(log_level::error, f, std::forward<A>(a)...);
  }

 private:
  std::string name_;
};

}  // namespace mcpmux
