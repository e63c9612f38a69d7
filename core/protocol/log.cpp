// Logging facade state: the active sink and level.
#include "core/log.hpp"

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
  sink()(l, logger, msg);
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xE  ? 3
                      : (c >> 3) == 0x1E ? 4
                                         : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k)
      ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok && len > 1) {
      // Reject overlong forms, surrogates and code points past U+10FFFF.
      std::uint32_t cp = c & (0xFF >> (len + 1));
      for (std::size_t k = 1; k < len; ++k)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      static constexpr std::uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
      ok = cp >= min_cp[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string clip(std::string_view s, std::size_t n) {
  if (s.size() <= n) return std::string(s);
  return fmt::format("{}… ({} bytes)", s.substr(0, n), s.size());
}

}  // namespace mcpmux
