#include "protocol/param_headers.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

#include "base/text.hpp"

namespace mcpmux::mcp {
namespace {

constexpr std::string_view sentinel_head = "=?base64?", sentinel_tail = "?=";
constexpr std::string_view annotation = "x-mcp-header";
// Deeper than any schema a person writes; Boost.JSON's parser stops at 32 levels anyway.
constexpr int max_schema_depth = 64;
constexpr std::string_view b64_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// RFC 9110 §5.6.2 tchar.
bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!is_tchar(c)) return false;
  return true;
}

char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (ascii_lower(a[i]) != ascii_lower(b[i])) return false;
  return true;
}

bool looks_like_sentinel(std::string_view v) {
  return v.starts_with(sentinel_head) && v.ends_with(sentinel_tail);
}

std::string quoted(std::string_view s) {
  std::string out(1, '\'');  // (not "'" + …: GCC 12 warns a false -Wrestrict there)
  out += valid_utf8(clip(s, 60));
  out += '\'';
  return out;
}

std::string dotted(const std::vector<std::string>& path) {
  std::string out = "arguments";
  for (const auto& p : path) out += "." + p;
  return valid_utf8(clip(out, 120));
}

// Strict RFC 4648 §4: whole quanta, '=' only as the final one or two characters.
std::optional<std::string> unbase64(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  std::size_t pad = 0;
  if (!in.empty() && in.back() == '=') pad = in[in.size() - 2] == '=' ? 2 : 1;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  std::uint32_t buf = 0;
  int bits = 0;
  for (std::size_t i = 0; i < in.size() - pad; ++i) {
    const auto d = b64_alphabet.find(in[i]);
    if (d == std::string_view::npos) return std::nullopt;
    buf = (buf << 6 | static_cast<std::uint32_t>(d)) & 0xffffff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buf >> bits) & 0xff);
    }
  }
  return out;
}

// A JSON Pointer to where the walk is, for messages.
std::string pointer(const std::vector<std::string>& at) {
  std::string out;
  for (const auto& seg : at) {
    out += '/';
    for (char c : seg) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  }
  return valid_utf8(clip(out.empty() ? "/" : out, 120));
}

// Walks a schema: `properties` chains from the root are where annotations belong; every other
// object or array below is searched too, since an annotation there makes the tool invalid.
class schema_walker {
 public:
  std::vector<param_header> found;
  std::string why;

  bool visit(const json::object& node, bool reachable, int depth) {
    if (depth > max_schema_depth)
      return fail("inputSchema nests deeper than " + std::to_string(max_schema_depth) + " levels");
    if (const auto* a = node.if_contains(annotation)) {
      if (!reachable || path_.empty())
        return fail("x-mcp-header at " + pointer(at_) +
                    " is not reached from the root through \"properties\" alone");
      if (!add(node, *a)) return false;
    }
    for (const auto& [key, value] : node) {
      // Annotations inside instance data (a default, an example) are not annotations.
      if (key == annotation || key == "const" || key == "enum" || key == "default" ||
          key == "examples")
        continue;
      at_.emplace_back(key);
      bool ok = true;
      if (key == "properties" && value.is_object()) {
        for (const auto& [name, sub] : value.get_object()) {
          if (!sub.is_object()) continue;  // a boolean schema holds no annotation
          at_.emplace_back(name);
          path_.emplace_back(name);
          ok = visit(sub.get_object(), reachable, depth + 1);
          path_.pop_back();
          at_.pop_back();
          if (!ok) break;
        }
      } else {
        ok = visit_elsewhere(value, depth + 1);
      }
      at_.pop_back();
      if (!ok) return false;
    }
    return true;
  }

 private:
  std::vector<std::string> path_;  // property names from the root, for param_header::path
  std::vector<std::string> at_;    // every key and index from the root, for messages

  bool fail(std::string text) {
    why = std::move(text);
    return false;
  }

  bool visit_elsewhere(const json::value& v, int depth) {
    if (const auto* o = v.if_object()) return visit(*o, false, depth);
    if (const auto* a = v.if_array()) {
      for (std::size_t i = 0; i < a->size(); ++i) {
        at_.emplace_back(std::to_string(i));
        const bool ok = visit_elsewhere((*a)[i], depth + 1);
        at_.pop_back();
        if (!ok) return false;
      }
    }
    return true;
  }

  static std::optional<param_header::kind> primitive(std::string_view t) {
    if (t == "string") return param_header::kind::string;
    if (t == "integer") return param_header::kind::integer;
    if (t == "boolean") return param_header::kind::boolean;
    return std::nullopt;
  }

  // "type" names exactly one of string, integer, boolean; ["T", "null"] is allowed as well,
  // since a null value simply sends no header.
  static std::optional<param_header::kind> declared_type(const json::object& node) {
    const auto* t = node.if_contains("type");
    if (!t) return std::nullopt;
    if (const auto* s = t->if_string()) return primitive(*s);
    const auto* a = t->if_array();
    if (!a) return std::nullopt;
    std::optional<param_header::kind> kind;
    bool null_seen = false;
    for (const auto& e : *a) {
      const auto* s = e.if_string();
      if (!s) return std::nullopt;
      if (*s == "null" && !null_seen) {
        null_seen = true;
        continue;
      }
      const auto k = primitive(*s);
      if (!k || kind) return std::nullopt;
      kind = k;
    }
    return kind;
  }

  bool add(const json::object& node, const json::value& a) {
    const auto where = dotted(path_);
    const auto* name = a.if_string();
    if (!name) return fail("x-mcp-header of " + where + " is not a string");
    if (name->empty()) return fail("x-mcp-header of " + where + " is empty");
    if (!is_token(*name))
      return fail("x-mcp-header " + quoted(*name) + " of " + where +
                  " is not an HTTP field-name token (RFC 9110 tchar only)");
    const auto type = declared_type(node);
    if (!type)
      return fail("x-mcp-header " + quoted(*name) + " is on " + where +
                  ", whose type is not string, integer or boolean");
    for (const auto& f : found)
      if (iequals(f.name, *name))
        return fail("x-mcp-header " + quoted(*name) + " of " + where + " repeats " +
                    quoted(f.name) + " of " + dotted(f.path) + " (names compare ignoring case)");
    found.push_back(param_header{std::string(*name), path_, *type});
    return true;
  }
};

// The value at `path`; nullptr when a step is missing or not an object, or the value is null.
const json::value* value_at(const json::object& arguments, const std::vector<std::string>& path) {
  const json::object* o = &arguments;
  const json::value* v = nullptr;
  for (const auto& step : path) {
    if (!o) return nullptr;
    v = o->if_contains(step);
    if (!v) return nullptr;
    o = v->if_object();
  }
  return v && !v->is_null() ? v : nullptr;
}

// How a value is written into its header; nullopt for what has no header form (object, array).
std::optional<std::string> render(const json::value& v) {
  std::array<char, 32> buf{};
  std::to_chars_result r{};
  switch (v.kind()) {
    case json::kind::string:
      return encode_header_value(v.get_string());
    case json::kind::bool_:
      return std::string(v.get_bool() ? "true" : "false");
    case json::kind::int64:
      r = std::to_chars(buf.data(), buf.data() + buf.size(), v.get_int64());
      break;
    case json::kind::uint64:
      r = std::to_chars(buf.data(), buf.data() + buf.size(), v.get_uint64());
      break;
    case json::kind::double_:
      r = std::to_chars(buf.data(), buf.data() + buf.size(), v.get_double());
      break;
    default:
      return std::nullopt;
  }
  return std::string(buf.data(), r.ptr);
}

template <class T>
std::optional<T> parse_whole(std::string_view s) {
  T out{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return out;
}

// A header holding a number agrees with a number in the body when they are equal as numbers;
// integers are compared exactly, not through a double.
bool same_number(std::string_view header, const json::value& body) {
  // from_chars accepts "inf" and "nan"; a header value must be written in digits.
  const auto digit_at = [&](std::size_t i) {
    return i < header.size() && header[i] >= '0' && header[i] <= '9';
  };
  const std::size_t first = !header.empty() && header[0] == '-' ? 1 : 0;
  if (!digit_at(first) &&
      !(header.size() > first + 1 && header[first] == '.' && digit_at(first + 1)))
    return false;
  if (body.is_int64())
    if (const auto i = parse_whole<std::int64_t>(header)) return *i == body.get_int64();
  if (body.is_uint64())
    if (const auto u = parse_whole<std::uint64_t>(header)) return *u == body.get_uint64();
  const auto d = parse_whole<double>(header);
  if (!d || !std::isfinite(*d)) return false;
  return *d == body.to_number<double>();
}

// RFC 9110 §5.5: a field value is visible ASCII, spaces and tabs.
bool valid_field_value(std::string_view v) {
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (u != '\t' && (u < 0x20 || u > 0x7e)) return false;
  }
  return true;
}

}  // namespace

result<std::vector<param_header>> param_headers(const json::object& input_schema) {
  schema_walker w;
  if (!w.visit(input_schema, true, 0)) return failure(std::move(w.why));
  return std::move(w.found);
}

bool header_safe(std::string_view v) {
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e) return false;
  }
  if (!v.empty() && (v.front() == ' ' || v.back() == ' ')) return false;
  return !looks_like_sentinel(v);
}

std::string encode_header_value(std::string_view utf8) {
  if (header_safe(utf8)) return std::string(utf8);
  std::string out(sentinel_head);
  out += base64(utf8);
  out += sentinel_tail;
  return out;
}

std::optional<std::string> decode_header_value(std::string_view raw) {
  while (!raw.empty() && (raw.front() == ' ' || raw.front() == '\t')) raw.remove_prefix(1);
  while (!raw.empty() && (raw.back() == ' ' || raw.back() == '\t')) raw.remove_suffix(1);
  // The markers must not overlap: "=?base64?=" is a plain value.
  if (raw.size() < sentinel_head.size() + sentinel_tail.size() || !looks_like_sentinel(raw))
    return std::string(raw);
  return unbase64(
      raw.substr(sentinel_head.size(), raw.size() - sentinel_head.size() - sentinel_tail.size()));
}

std::vector<std::pair<std::string, std::string>> param_header_fields(
    const std::vector<param_header>& headers, const json::object& arguments) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& h : headers) {
    const auto* v = value_at(arguments, h.path);
    if (!v) continue;
    if (auto text = render(*v)) out.emplace_back(std::string(param_header_prefix) + h.name, *text);
  }
  return out;
}

std::string check_param_headers(
    const std::vector<param_header>& headers, const json::object& arguments,
    const std::function<std::optional<std::string_view>(std::string_view)>& lookup) {
  for (const auto& h : headers) {
    const std::string field = std::string(param_header_prefix) + h.name;
    const auto* v = value_at(arguments, h.path);
    // An object or array has no header form: the client sends none, so none is expected.
    if (v && (v->is_object() || v->is_array())) v = nullptr;
    const auto raw = lookup(h.name);
    if (!raw) {
      if (v)
        return "Header mismatch: " + field + " header is missing but " + dotted(h.path) +
               " has a value";
      continue;
    }
    // A header with no value behind it would let an intermediary act on what the server
    // never sees.
    if (!v)
      return "Header mismatch: " + field + " header is present (" + quoted(*raw) + ") but " +
             dotted(h.path) + " has no value";
    if (!valid_field_value(*raw))
      return "Header mismatch: " + field + " header value contains invalid characters";
    const auto got = decode_header_value(*raw);
    if (!got)
      return "Header mismatch: " + field + " header value " + quoted(*raw) +
             " is not valid Base64 inside =?base64?…?=";
    bool same = false;
    std::string want;
    if (const auto* s = v->if_string()) {
      same = *got == *s;
      want = *s;
    } else if (const auto* b = v->if_bool()) {
      want = *b ? "true" : "false";
      same = *got == want;
    } else {
      want = render(*v).value_or("");
      same = same_number(*got, *v);
    }
    if (!same)
      return "Header mismatch: " + field + " header value " + quoted(*got) +
             " does not match body value " + quoted(want);
  }
  return {};
}

}  // namespace mcpmux::mcp
