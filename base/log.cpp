// Logging facade state: the active sink and level.
#include "base/log.hpp"

#include "base/redact.hpp"

#include <cstdint>
#include <cstdio>

namespace mcpmux {
namespace {

log_level g_level = log_level::info;

void stderr_sink(log_level l, std::string_view logger, std::string_view msg) {
  std::fprintf(stderr, "[%.*s] %.*s: %.*s\n", static_cast<int>(to_string(l).size()),
               to_string(l).data(), static_cast<int>(logger.size()), logger.data(),
               static_cast<int>(msg.size()), msg.data());
}

log_sink& sink() {
  static log_sink s = stderr_sink;
  return s;
}

}  // namespace

std::string_view to_string(log_level l) {
  switch (l) {
    case log_level::trace:
      return "trace";
    case log_level::debug:
      return "debug";
    case log_level::info:
      return "info";
    case log_level::warn:
      return "warn";
    case log_level::error:
      return "error";
    case log_level::off:
      return "off";
  }
  return "?";
}

std::optional<log_level> parse_log_level(std::string_view s) {
  for (auto l : {log_level::trace, log_level::debug, log_level::info, log_level::warn,
                 log_level::error, log_level::off})
    if (s == to_string(l)) return l;
  if (s == "warning") return log_level::warn;
  return std::nullopt;
}

void set_log_sink(log_sink s) {
  sink() = s ? std::move(s) : log_sink(stderr_sink);
}
void set_log_level(log_level l) {
  g_level = l;
}
log_level current_log_level() {
  return g_level;
}

void detail::emit(log_level l, std::string_view logger, std::string_view msg) {
  // Lines quote servers (their stderr, errors, names) and reach a terminal or the journal: what
  // would act on a terminal is shown as an escape instead (docs/security.md).
  sink()(l, logger, visible_text(secret_count() == 0 ? msg : redact(msg)));
}

}  // namespace mcpmux
