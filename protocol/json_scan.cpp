// A recursive descent over the JSON grammar (RFC 8259), checking UTF-8 as Boost.JSON does
// (Unicode's table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF).
#include "protocol/json_scan.hpp"

#include <array>
#include <cstring>

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
}  // namespace

struct json_scan::cursor {
  const char* p;
  const char* end;

  void skip_blanks() {  // (most tokens have none after them: one comparison says so)
    while (p < end && static_cast<unsigned char>(*p) <= ' ' && blank(*p)) ++p;
  }
  bool at(char c) const { return p < end && *p == c; }

  // Enters the object or array that opens at p: true when it is empty (its `close` taken).
  bool enter_empty(char close) {
    ++p;
    skip_blanks();
    if (!at(close)) return false;
    ++p;
    return true;
  }
  // After an item of a container: a comma (`more`), or its `close`; false when neither.
  bool after_item(char close, bool& more) {
    skip_blanks();
    more = at(',');
    if (!more && !at(close)) return false;
    ++p;
    if (more) skip_blanks();
    return true;
  }

  // The string whose opening quote is at p: moves past its closing quote; `escaped` when it
  // holds an escape. The usual string, plain ASCII, is read here; the rest by rest_of_string.
  bool string(bool& escaped) {
    const auto* s = reinterpret_cast<const unsigned char*>(p) + 1;
    const auto* e = reinterpret_cast<const unsigned char*>(end);
    while (s < e && string_bytes[*s] == plain) ++s;
    if (s < e && *s == '"') {
      p = reinterpret_cast<const char*>(s + 1);
      return true;
    }
    return rest_of_string(s, escaped);
  }

  [[gnu::noinline]] bool rest_of_string(const unsigned char* s, bool& escaped) {
    const auto* e = reinterpret_cast<const unsigned char*>(end);
    for (;;) {
      while (s < e && string_bytes[*s] == plain) ++s;
      if (s >= e) return false;
      switch (string_bytes[*s]) {
        case quote:
          p = reinterpret_cast<const char*>(s + 1);
          return true;
        case backslash: {
          escaped = true;
          if (e - s < 2) return false;
          const char c = static_cast<char>(s[1]);
          if (c != 'u') {
            if (!std::strchr("\"\\/bfnrt", c) || c == 0) return false;
            s += 2;
            break;
          }
          const long u = unit_at(s, e);
          if (u < 0xD800 || u > 0xDFFF) {  // (-1: not four hex digits)
            if (u < 0) return false;
            s += 6;
            break;
          }
          // A surrogate: a high one followed by a low one, or the full parser decides.
          const long low = u <= 0xDBFF ? unit_at(s + 6, e) : -1;
          if (low < 0xDC00 || low > 0xDFFF) return false;
          s += 12;
          break;
        }
        case control:
          return false;
        default: {
          const auto n = utf8_length(s, e);
          if (n == 0) return false;
          s += n;
        }
      }
    }
  }

  // A number: at most 18 digits before the point, no exponent (1e999 is the full parser's).
  bool number() {
    const char* s = p;
    if (s < end && *s == '-') ++s;
    const char* first = s;
    if (s < end && *s == '0') {
      ++s;
    } else {
      while (s < end && digit(*s)) ++s;
      if (s == first || s - first > 18) return false;
    }
    if (s < end && *s == '.') {
      const char* fraction = ++s;
      while (s < end && digit(*s)) ++s;
      if (s == fraction) return false;
    }
    if (s < end && (*s == 'e' || *s == 'E')) return false;
    p = s;
    return true;
  }

  bool word(std::string_view w) {
    if (static_cast<std::size_t>(end - p) < w.size() || std::memcmp(p, w.data(), w.size()) != 0)
      return false;
    p += w.size();
    return true;
  }
};

bool json_scan::scan(std::string_view text, std::string_view nested) {
  size_ = 0;
  nested_ = nested;
  cursor c{text.data(), text.data() + text.size()};
  c.skip_blanks();
  if (!c.at('{') || !object(c, 1, -1)) return false;
  c.skip_blanks();
  return c.p == c.end;
}

bool json_scan::value(cursor& c, int depth, int record_as) {
  if (c.p >= c.end) return false;
  switch (*c.p) {
    case '{':
      return object(c, depth + 1, record_as);
    case '[':
      return array(c, depth + 1);
    case '"': {
      bool escaped = false;
      return c.string(escaped);
    }
    case 't':
      return c.word("true");
    case 'f':
      return c.word("false");
    case 'n':
      return c.word("null");
    default:
      return c.number();
  }
}

bool json_scan::object(cursor& c, int depth, int record_as) {
  if (depth > max_depth) return false;
  if (c.enter_empty('}')) return true;
  for (bool more = true; more;) {
    if (!c.at('"')) return false;
    const char* key_begin = c.p + 1;
    bool escaped = false;
    if (!c.string(escaped)) return false;
    const std::string_view key(key_begin, static_cast<std::size_t>(c.p - 1 - key_begin));
    c.skip_blanks();
    if (!c.at(':')) return false;
    ++c.p;
    c.skip_blanks();
    int index = not_recorded;
    if (record_as != not_recorded) {
      if (escaped || (index = record(key, record_as)) < 0) return false;
    }
    // The message's member `nested` has its own members recorded.
    const int child = record_as == -1 && index >= 0 && same_key(members_[index], nested_, -1)
                          ? index
                          : not_recorded;
    const char* value_begin = c.p;
    if (!value(c, depth, child)) return false;
    if (index >= 0)
      members_[index].value = {value_begin, static_cast<std::size_t>(c.p - value_begin)};
    if (!c.after_item('}', more)) return false;
  }
  return true;
}

bool json_scan::array(cursor& c, int depth) {
  if (depth > max_depth) return false;
  if (c.enter_empty(']')) return true;
  for (bool more = true; more;)
    if (!value(c, depth, not_recorded) || !c.after_item(']', more)) return false;
  return true;
}

int json_scan::record(std::string_view key, int parent) {
  if (size_ == capacity) return -1;
  members_[size_] = {key, {}, parent};
  return static_cast<int>(size_++);
}

const json_scan::member* json_scan::find(std::string_view key, int parent) const {
  for (std::size_t i = 0; i < size_; ++i)
    if (same_key(members_[i], key, parent)) return &members_[i];
  return nullptr;
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
