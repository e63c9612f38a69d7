// A recursive descent over the JSON grammar (RFC 8259), checking UTF-8 as Boost.JSON does
// (Unicode's table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF).
#include "protocol/json_scan.hpp"

#include <array>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace mcpmux {
namespace {

constexpr int max_depth = 64;  // (the full parser allows 256: deeper messages are its to read)
constexpr int not_recorded = -2;

// The bytes of a string: 0 taken as they are, else what ends the quick run.
enum : unsigned char { plain, quote, backslash, control, beyond_ascii };
constexpr auto string_bytes = [] {
  std::array<unsigned char, 256> t{};
  for (int i = 0; i < 0x20; ++i) t[i] = control;
  t['"'] = quote;
  t['\\'] = backslash;
  for (int i = 0x80; i < 0x100; ++i) t[i] = beyond_ascii;
  return t;
}();

bool blank(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
bool digit(char c) {
  return c >= '0' && c <= '9';
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The code unit of the \uXXXX at `p` (p[0] is the backslash), -1 when it is not one.
long unit_at(const unsigned char* p, const unsigned char* end) {
  if (end - p < 6 || p[0] != '\\' || p[1] != 'u') return -1;
  long u = 0;
  for (int i = 2; i < 6; ++i) {
    const int h = hex(static_cast<char>(p[i]));
    if (h < 0) return -1;
    u = u * 16 + h;
  }
  return u;
}

// The length of the UTF-8 sequence that begins with the byte at `p` (>= 0x80), 0 when it is not
// a well-formed one.
std::size_t utf8_length(const unsigned char* p, const unsigned char* end) {
  const unsigned lead = p[0];
  const auto follows = [&](std::ptrdiff_t i) { return end - p > i && (p[i] & 0xC0) == 0x80; };
  if (lead >= 0xC2 && lead <= 0xDF) return follows(1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    if (!follows(1) || !follows(2)) return 0;
    if (lead == 0xE0 && p[1] < 0xA0) return 0;   // overlong
    if (lead == 0xED && p[1] >= 0xA0) return 0;  // a surrogate
    return 3;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    if (!follows(1) || !follows(2) || !follows(3)) return 0;
    if (lead == 0xF0 && p[1] < 0x90) return 0;   // overlong
    if (lead == 0xF4 && p[1] >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

// (The length and the first byte tell most keys apart without a call to memcmp.)
bool same_key(const json_scan::member& m, std::string_view key, int parent) {
  return m.parent == parent && m.key.size() == key.size() &&
         (key.empty() ||
          (m.key[0] == key[0] && std::memcmp(m.key.data(), key.data(), key.size()) == 0));
}

// Each step below takes where it starts and gives where it ended: null when the text there is not
// one it vouches for. (Positions passed by value stay in registers through the recursion.)

[[gnu::always_inline]] inline const char* skip_blanks(const char* p, const char* end) {
  // (Most tokens have none after them: one comparison says so.)
  while (p < end && static_cast<unsigned char>(*p) <= ' ' && blank(*p)) ++p;
  return p;
}

// Past the byte `c` at p, blanks before it allowed.
[[gnu::always_inline]] inline const char* past(const char* p, const char* end, char c) {
  if (p < end && *p == c) return p + 1;
  p = skip_blanks(p, end);
  return p < end && *p == c ? p + 1 : nullptr;
}

// Where the run of plain string bytes from `s` ends: sixteen at a time where sixteen are left
// (SSE2), then eight. A byte is plain when it is no quote, no backslash, no control and not
// beyond ASCII; as a signed byte, a control or a byte beyond ASCII is below 0x20. In a word of
// eight, the lowest flagged byte of the tests below is always a true one (a borrow flags only
// bytes above it).
const unsigned char* plain_run(const unsigned char* s, const unsigned char* e) {
#if defined(__SSE2__)
  const __m128i quotes = _mm_set1_epi8('"'), backslashes = _mm_set1_epi8('\\'),
                spaces = _mm_set1_epi8(0x20);
  for (; e - s >= 16; s += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i special =
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quotes), _mm_cmpeq_epi8(v, backslashes)),
                     _mm_cmplt_epi8(v, spaces));
    if (const int mask = _mm_movemask_epi8(special))
      return s + std::countr_zero(static_cast<unsigned>(mask));
  }
#endif
  if constexpr (std::endian::native == std::endian::little) {
    constexpr std::uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    const auto zero_byte = [&](std::uint64_t x) { return (x - ones) & ~x & highs; };
    for (; e - s >= 8; s += 8) {
      std::uint64_t w;
      std::memcpy(&w, s, 8);
      const auto special = zero_byte(w ^ (ones * '"')) | zero_byte(w ^ (ones * '\\')) |
                           ((w - ones * 0x20) & ~w & highs) | (w & highs);
      if (special) return s + std::countr_zero(special) / 8;
    }
  }
  while (s < e && string_bytes[*s] == plain) ++s;
  return s;
}

// The rest of a string after its plain run: escapes, UTF-8, and the closing quote.
[[gnu::noinline]] const char* rest_of_string(const unsigned char* s, const unsigned char* e,
                                             bool& escaped) {
  for (;;) {
    s = plain_run(s, e);
    if (s >= e) return nullptr;
    switch (string_bytes[*s]) {
      case quote:
        return reinterpret_cast<const char*>(s + 1);
      case backslash: {
        escaped = true;
        if (e - s < 2) return nullptr;
        const char c = static_cast<char>(s[1]);
        if (c != 'u') {
          if (!std::strchr("\"\\/bfnrt", c) || c == 0) return nullptr;
          s += 2;
          break;
        }
        const long u = unit_at(s, e);
        if (u < 0xD800 || u > 0xDFFF) {  // (-1: not four hex digits)
          if (u < 0) return nullptr;
          s += 6;
          break;
        }
        // A surrogate: a high one followed by a low one, or the full parser decides.
        const long low = u <= 0xDBFF ? unit_at(s + 6, e) : -1;
        if (low < 0xDC00 || low > 0xDFFF) return nullptr;
        s += 12;
        break;
      }
      case control:
        return nullptr;
      default: {
        const auto n = utf8_length(s, e);
        if (n == 0) return nullptr;
        s += n;
      }
    }
  }
}

// The string whose opening quote is at p: past its closing quote; `escaped` when it holds an
// escape. The usual string, plain ASCII, is read here.
const char* string_end(const char* p, const char* end, bool& escaped) {
  const auto* e = reinterpret_cast<const unsigned char*>(end);
  const auto* s = plain_run(reinterpret_cast<const unsigned char*>(p) + 1, e);
  if (s < e && *s == '"') return reinterpret_cast<const char*>(s + 1);
  return rest_of_string(s, e, escaped);
}

// A number: at most 18 digits before the point, no exponent (1e999 is the full parser's).
const char* number(const char* s, const char* end) {
  if (s < end && *s == '-') ++s;
  const char* first = s;
  if (s < end && *s == '0') {
    ++s;
  } else {
    while (s < end && digit(*s)) ++s;
    if (s == first || s - first > 18) return nullptr;
  }
  if (s < end && *s == '.') {
    const char* fraction = ++s;
    while (s < end && digit(*s)) ++s;
    if (s == fraction) return nullptr;
  }
  if (s < end && (*s == 'e' || *s == 'E')) return nullptr;
  return s;
}

const char* word(const char* p, const char* end, std::string_view w) {
  if (static_cast<std::size_t>(end - p) < w.size() || std::memcmp(p, w.data(), w.size()) != 0)
    return nullptr;
  return p + w.size();
}

// After an item of a container: past a comma and the blanks after it (`more`), or past its
// `close`; null when neither.
[[gnu::always_inline]] inline const char* after_item(const char* p, const char* end, char close,
                                                     bool& more) {
  // (Most messages have no blank between their tokens: one comparison says so.)
  if (p<end&& * p> ' ') {
    more = *p == ',';
    if (!more) return *p == close ? p + 1 : nullptr;
    ++p;
    return p<end&& * p> ' ' ? p : skip_blanks(p, end);
  }
  p = skip_blanks(p, end);
  if (p >= end) return nullptr;
  more = *p == ',';
  if (more) return skip_blanks(p + 1, end);
  return *p == close ? p + 1 : nullptr;
}
}  // namespace

bool json_scan::scan(std::string_view text, std::string_view nested) {
  size_ = 0;
  nested_ = nested;
  end_ = text.data() + text.size();
  const char* p = skip_blanks(text.data(), end_);
  if (p == end_ || *p != '{') return false;
  p = object(p, 1, -1);
  return p && skip_blanks(p, end_) == end_;
}

const char* json_scan::value(const char* p, int depth, int record_as) {
  if (p >= end_) return nullptr;
  switch (*p) {
    case '{':
      return object(p, depth + 1, record_as);
    case '[':
      return array(p, depth + 1);
    case '"': {
      bool escaped = false;
      return string_end(p, end_, escaped);
    }
    case 't':
      return word(p, end_, "true");
    case 'f':
      return word(p, end_, "false");
    case 'n':
      return word(p, end_, "null");
    default:
      return number(p, end_);
  }
}

const char* json_scan::object(const char* p, int depth, int record_as) {
  if (depth > max_depth) return nullptr;
  p = skip_blanks(p + 1, end_);
  if (p < end_ && *p == '}') return p + 1;
  for (bool more = true; more;) {
    if (p >= end_ || *p != '"') return nullptr;
    const char* key_begin = p + 1;
    bool escaped = false;
    if (!(p = string_end(p, end_, escaped))) return nullptr;
    const std::string_view key(key_begin, static_cast<std::size_t>(p - 1 - key_begin));
    if (!(p = past(p, end_, ':'))) return nullptr;
    p = skip_blanks(p, end_);
    int index = not_recorded;
    if (record_as != not_recorded) {
      if (escaped || (index = record(key, record_as)) < 0) return nullptr;
    }
    // The message's member `nested` has its own members recorded.
    const int child = record_as == -1 && index >= 0 && same_key(members_[index], nested_, -1)
                          ? index
                          : not_recorded;
    const char* value_begin = p;
    if (!(p = value(p, depth, child))) return nullptr;
    if (index >= 0)
      members_[index].value = {value_begin, static_cast<std::size_t>(p - value_begin)};
    if (!(p = after_item(p, end_, '}', more))) return nullptr;
  }
  return p;
}

const char* json_scan::array(const char* p, int depth) {
  if (depth > max_depth) return nullptr;
  p = skip_blanks(p + 1, end_);
  if (p < end_ && *p == ']') return p + 1;
  for (bool more = true; more;)
    if (!(p = value(p, depth, not_recorded)) || !(p = after_item(p, end_, ']', more)))
      return nullptr;
  return p;
}

[[gnu::always_inline]] inline int json_scan::record(std::string_view key, int parent) {
  if (size_ == capacity) return -1;
  members_[size_] = {key, {}, parent};
  return static_cast<int>(size_++);
}

std::size_t json_scan::plain_prefix(std::string_view s) {
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  return static_cast<std::size_t>(plain_run(b, b + s.size()) - b);
}

std::optional<std::int64_t> json_scan::integer(std::string_view v) {
  std::size_t i = 0;
  const bool negative = !v.empty() && v[0] == '-';
  if (negative) ++i;
  if (i == v.size() || v.size() - i > 18) return std::nullopt;
  std::int64_t n = 0;
  for (; i < v.size(); ++i) {
    if (!digit(v[i])) return std::nullopt;
    n = n * 10 + (v[i] - '0');
  }
  return negative ? -n : n;
}

}  // namespace mcpmux
