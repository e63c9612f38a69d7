#include "base/text.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>

namespace mcpmux {

namespace {

struct utf8_char {
  std::size_t len = 0;  ///< 0: no well-formed sequence here
  std::uint32_t code_point = 0;
};

// The well-formed UTF-8 sequence at s[i] and its code point.
utf8_char decode_utf8(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return {1, c};
  const std::size_t len = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || i + len > s.size()) return {};
  std::uint32_t cp = c & (0xFF >> (len + 1));
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {};
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr std::uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
  const bool ok = cp >= min_cp[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
  return ok ? utf8_char{len, cp} : utf8_char{};
}

// Characters that change no glyph but steer the terminal or the reader: C1 controls (CSI is
// U+009B), the Bidi_Control characters (U+061C, U+200E–200F, U+202A–202E, U+2066–2069), the other
// zero-width characters (U+200B–200D, U+2060, U+FEFF), the line and paragraph separators, and the
// tag characters, which can spell a whole hidden sentence.
bool is_invisible(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) ||
         (cp >= 0x2028 && cp <= 0x202E) || cp == 0x2060 || (cp >= 0x2066 && cp <= 0x2069) ||
         cp == 0xFEFF || (cp >= 0xE0000 && cp <= 0xE007F);
}

bool is_control_byte(unsigned char c) {
  return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F;
}

}  // namespace

std::size_t utf8_sequence(std::string_view s, std::size_t i) {
  return decode_utf8(s, i).len;
}

bool is_valid_utf8(std::string_view s) {
  // Every built message passes here: ASCII, by far the most of it, is skipped 8 bytes at a time.
  constexpr std::uint64_t high_bits = 0x8080808080808080ull;
  for (std::size_t i = 0; i < s.size();) {
    if (std::uint64_t word; i + 8 <= s.size()) {
      std::memcpy(&word, s.data() + i, 8);
      if ((word & high_bits) == 0) {
        i += 8;
        continue;
      }
    }
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const auto len = utf8_sequence(s, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    if (const auto len = utf8_sequence(s, i)) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string visible_text(std::string_view s) {
  // Nearly all text is printable ASCII: returned as it is after one pass.
  if (std::none_of(s.begin(), s.end(), [](char c) {
        const auto b = static_cast<unsigned char>(c);
        return b >= 0x80 || is_control_byte(b);
      }))
    return std::string(s);
  std::string out;
  out.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    const auto [len, cp] = decode_utf8(s, i);
    if (len == 0 || (len == 1 && is_control_byte(static_cast<unsigned char>(s[i])))) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (is_invisible(cp))
      out += cp > 0xFFFF ? fmt::format("\\U{:08x}", cp) : fmt::format("\\u{:04x}", cp);
    else
      out.append(s.substr(i, len));
    i += len;
  }
  return out;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    auto j = text.find('\n', i);
    if (j == std::string_view::npos) j = text.size();
    out.push_back(text.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

std::string_view base_name(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string clip(std::string_view s, std::size_t n) {
  if (s.size() <= n) return std::string(s);
  return fmt::format("{}… ({} bytes)", s.substr(0, n), s.size());
}

std::optional<host_port> split_host_port(std::string_view a) {
  const auto colon = a.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  host_port out;
  const auto port = a.substr(colon + 1);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), out.port);
  if (ec != std::errc() || end != port.data() + port.size() || port.empty() || out.port > 65535)
    return std::nullopt;
  out.host = a.substr(0, colon);
  if (out.host.size() > 2 && out.host.front() == '[' && out.host.back() == ']') {
    out.host = out.host.substr(1, out.host.size() - 2);
    out.bracketed = true;
  }
  return out;
}

std::string base64(std::string_view in, bool url, bool pad) {
  static constexpr std::string_view standard =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  static constexpr std::string_view url_safe =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const auto alphabet = url ? url_safe : standard;
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  const auto byte = [&](std::size_t i) {
    return static_cast<std::uint32_t>(static_cast<unsigned char>(in[i]));
  };
  std::size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    const auto n = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int shift : {18, 12, 6, 0}) out += alphabet[(n >> shift) & 63];
  }
  if (const auto rest = in.size() - i) {
    const auto n = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    if (rest == 2) out += alphabet[(n >> 6) & 63];
    if (pad) out.append(rest == 2 ? 1 : 2, '=');
  }
  return out;
}

}  // namespace mcpmux
