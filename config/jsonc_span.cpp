#include "config/jsonc_span.hpp"

#include "base/text.hpp"

#include <fmt/format.h>

#include <cctype>

namespace mcpmux::jsonc {
namespace {

// A recursive-descent reader of JSON with comments that records where the wanted value is.
class scanner {
 public:
  scanner(std::string_view text, const std::vector<std::string>& path) : t_(text), path_(path) {}

  found run() {
    found out;
    skip();
    if (!value(0, true) || (skip(), pos_ != t_.size())) {
      if (error_.empty()) fail("unexpected text after the document");
      out.error = error_;
      return out;
    }
    out.value = hit_;
    return out;
  }

 private:
  static constexpr int max_depth = 256;

  bool fail(std::string_view what) {
    if (!error_.empty()) return false;
    const auto [line, col] = line_column(t_, pos_);
    error_ = fmt::format("line {}, column {}: {}", line, col, what);
    return false;
  }

  // Whitespace and comments.
  void skip() {
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '/') {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else if (c == '/' && pos_ + 1 < t_.size() && t_[pos_ + 1] == '*') {
        const auto end = t_.find("*/", pos_ + 2);
        if (end == std::string_view::npos) {
          fail("unterminated /* comment");
          pos_ = t_.size();
          return;
        }
        pos_ = end + 2;
      } else {
        return;
      }
    }
  }

  // A string; its decoded text in `out` (keys are compared decoded).
  bool string(std::string* out) {
    ++pos_;  // the opening quote
    while (pos_ < t_.size()) {
      const char c = t_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        if (out) out->push_back(c);
        continue;
      }
      if (pos_ >= t_.size()) break;
      const char e = t_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          if (out) out->push_back(e);
          break;
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
          if (out) out->push_back(' ');  // keys with these are never the ones looked for
          break;
        case 'u':
          for (int i = 0; i < 4; ++i, ++pos_)
            if (pos_ >= t_.size() || !std::isxdigit(static_cast<unsigned char>(t_[pos_])))
              return fail("bad \\u escape");
          if (out) out->push_back('?');
          break;
        default:
          return fail("bad escape in a string");
      }
    }
    return fail("unterminated string");
  }

  bool literal() {
    const auto start = pos_;
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')
        ++pos_;
      else
        break;
    }
    const auto word = t_.substr(start, pos_ - start);
    if (word == "true" || word == "false" || word == "null") return true;
    // A number, as JSON writes them.
    std::size_t i = 0;
    if (i < word.size() && word[i] == '-') ++i;
    const auto digits = [&] {
      const auto from = i;
      while (i < word.size() && std::isdigit(static_cast<unsigned char>(word[i]))) ++i;
      return i > from;
    };
    bool ok = digits();
    if (ok && i < word.size() && word[i] == '.') {
      ++i;
      ok = digits();
    }
    if (ok && i < word.size() && (word[i] == 'e' || word[i] == 'E')) {
      ++i;
      if (i < word.size() && (word[i] == '+' || word[i] == '-')) ++i;
      ok = digits();
    }
    if (!ok || i != word.size() || word.empty()) {
      pos_ = start;
      return fail("not a JSON value");
    }
    return true;
  }

  // One value. `on_path`: every key so far matched the path's first `depth` elements.
  bool value(int depth, bool on_path) {
    if (depth > max_depth) return fail("nested too deeply");
    if (pos_ >= t_.size()) return fail("unexpected end of the document");
    const auto start = pos_;
    bool ok = false;
    switch (t_[pos_]) {
      case '{':
        ok = object(depth, on_path);
        break;
      case '[':
        ok = array(depth);
        break;
      case '"':
        ok = string(nullptr);
        break;
      default:
        ok = literal();
    }
    if (ok && on_path && static_cast<std::size_t>(depth) == path_.size() && !hit_)
      hit_ = span{start, pos_};
    return ok;
  }

  bool object(int depth, bool on_path) {
    ++pos_;
    for (bool first = true;; first = false) {
      skip();
      if (pos_ >= t_.size()) return fail("unterminated object");
      if (t_[pos_] == '}') {
        ++pos_;
        return true;
      }
      if (!first) {
        if (t_[pos_] != ',') return fail("expected ',' or '}'");
        ++pos_;
        skip();
        if (pos_ < t_.size() && t_[pos_] == '}') {  // a trailing comma (JSONC)
          ++pos_;
          return true;
        }
      }
      if (pos_ >= t_.size() || t_[pos_] != '"') return fail("expected a key");
      std::string key;
      if (!string(&key)) return false;
      skip();
      if (pos_ >= t_.size() || t_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      skip();
      const bool next = on_path && static_cast<std::size_t>(depth) < path_.size() &&
                        key == path_[static_cast<std::size_t>(depth)];
      if (!value(depth + 1, next)) return false;
    }
  }

  bool array(int depth) {
    ++pos_;
    for (bool first = true;; first = false) {
      skip();
      if (pos_ >= t_.size()) return fail("unterminated array");
      if (t_[pos_] == ']') {
        ++pos_;
        return true;
      }
      if (!first) {
        if (t_[pos_] != ',') return fail("expected ',' or ']'");
        ++pos_;
        skip();
        if (pos_ < t_.size() && t_[pos_] == ']') {
          ++pos_;
          return true;
        }
      }
      if (!value(depth + 1, false)) return false;
    }
  }

  std::string_view t_;
  const std::vector<std::string>& path_;
  std::size_t pos_ = 0;
  std::optional<span> hit_;
  std::string error_;
};

}  // namespace

found find(std::string_view text, const std::vector<std::string>& path) {
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") {  // a UTF-8 byte order mark
    auto f = scanner(text.substr(3), path).run();
    if (f.value) {
      f.value->begin += 3;
      f.value->end += 3;
    }
    return f;
  }
  return scanner(text, path).run();
}

std::string indentation_at(std::string_view text, std::size_t pos) {
  const auto line = text.rfind('\n', pos == 0 ? 0 : pos - 1);
  std::size_t i = line == std::string_view::npos ? 0 : line + 1;
  std::string out;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) out.push_back(text[i++]);
  return out;
}

}  // namespace mcpmux::jsonc
