// Text from untrusted sources: UTF-8 checks and repair, clipping for log lines.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mcpmux {

/// The first `n` bytes of `s`, with a marker when cut; for logging untrusted input.
std::string clip(std::string_view s, std::size_t n = 200);

/// `s` in ASCII lowercase (header names, media types, URL schemes and hosts).
std::string lower(std::string_view s);

/// The last component of a path ("/usr/bin/node" → "node"); the whole of it without a '/'.
std::string_view base_name(std::string_view path);

/// The lines of `text`, without their '\n' (views into `text`; no empty last line for a final
/// newline).
std::vector<std::string_view> split_lines(std::string_view text);

/// How many leading and trailing elements `a` and `b` share: (head, tail), the tail not
/// overlapping the head. What is between is where they differ.
template <class T>
std::pair<std::size_t, std::size_t> common_ends(const std::vector<T>& a, const std::vector<T>& b) {
  std::size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  std::size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail])
    ++tail;
  return {head, tail};
}

/// Line and column (1-based) of byte `offset` in `text`, for syntax errors.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t offset);

/// Base64 of `bytes` (RFC 4648 §4), or with `url` its URL- and filename-safe alphabet (§5);
/// `pad` ends it with '=' to a whole quantum.
std::string base64(std::string_view bytes, bool url = false, bool pad = true);

/// `s` with every invalid UTF-8 sequence replaced by U+FFFD, so that untrusted bytes (a child's
/// stderr) can be put into JSON that every parser accepts.
std::string valid_utf8(std::string_view s);
/// The length of the well-formed UTF-8 sequence at s[i]; 0 when there is none (a stray byte, a
/// truncated sequence, an overlong form, a surrogate, a code point past U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::size_t i);
/// True when `s` is well-formed UTF-8 (what valid_utf8 would leave unchanged).
bool is_valid_utf8(std::string_view s);

/// `s` as it may be shown to a person, on a terminal or in a file: every character that would act
/// on a terminal, or hide or reorder text for its reader, is written as a visible escape. A byte
/// becomes `\xHH` (C0 controls other than newline and tab, DEL, and each byte that is not UTF-8);
/// a code point becomes `\uHHHH` (C1 controls, the bidirectional controls, zero-width characters,
/// the line and paragraph separators) or `\UHHHHHHHH` (the tag characters U+E0000–E007F). Newline
/// and tab are kept; a backslash is not doubled (this is for reading, not for parsing back).
std::string visible_text(std::string_view s);

/// A HOST:PORT address split in two.
struct host_port {
  std::string host;        ///< without the brackets of an IPv6 literal
  bool bracketed = false;  ///< the host was written [like:this]
  unsigned port = 0;       ///< 0..65535
};
/// Splits "HOST:PORT" or "[V6]:PORT"; nullopt when there is no host, no colon or no valid
/// port number (0..65535). The host itself is not checked.
std::optional<host_port> split_host_port(std::string_view address);

}  // namespace mcpmux
