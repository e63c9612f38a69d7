// Byte-keeping edits of a `[servers.NAME]` table. toml++ says where the table and its values
// are (line and column), so a multi-line string that holds a `[` line cannot mislead the edit;
// everything outside the lines edited is copied as it is.
#include "config/toml_edit.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "base/text.hpp"

namespace mcpmux {
namespace {

// `s` without the blanks around it (a CRLF line's '\r' among them).
std::string_view strip(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  return first == std::string_view::npos ? std::string_view()
                                         : s.substr(first, s.find_last_not_of(" \t\r") + 1 - first);
}

/// The text as lines, with where each begins (0-based line numbers; toml++ counts from 1).
struct text_lines {
  std::string_view text;
  std::vector<std::string_view> lines = split_lines(text);

  std::size_t begin(std::size_t i) const {
    return i < lines.size() ? static_cast<std::size_t>(lines[i].data() - text.data()) : text.size();
  }
  /// Where line `i` ends, its '\n' included.
  std::size_t end(std::size_t i) const {
    return std::min(begin(i) + lines[i].size() + 1, text.size());
  }
  bool blank(std::size_t i) const { return i < lines.size() && strip(lines[i]).empty(); }
  /// The line's own end of line: "\r\n" in a file written so, else "\n".
  std::string_view eol(std::size_t i) const {
    return !lines[i].empty() && lines[i].back() == '\r' ? "\r\n" : "\n";
  }
  /// The byte offset of a toml++ position (its column counts code points).
  std::size_t offset(const toml::source_position& p) const {
    const std::size_t line = p.line - 1;
    std::size_t at = begin(line);
    for (std::size_t col = 1; col < p.column && at < text.size(); ++col) {
      const auto len = utf8_sequence(text, at);
      at += len ? len : 1;
    }
    return at;
  }
};

/// One header-defined table of the server's: its header's line and its last value's (0-based).
struct line_range {
  std::size_t first, last;
};

// The last line any value under `n` ends on (inline tables, arrays and dotted keys included).
std::size_t last_line(const toml::node& n) {
  std::size_t last = n.source().end.line;
  if (const auto* t = n.as_table())
    for (const auto& [k, v] : *t) last = std::max(last, last_line(v));
  if (const auto* a = n.as_array())
    for (const auto& v : *a) last = std::max(last, last_line(v));
  return last;
}

bool has_header(const toml::node& n, const text_lines& tl) {
  const auto* t = n.as_table();
  if (!t || t->is_inline() || n.source().begin.line == 0) return false;
  const auto line = strip(tl.lines[n.source().begin.line - 1]);
  return line.starts_with('[') && !line.starts_with("[[");
}

// The ranges of `t` (whose header is at 0-based line `header`) and of its sub-tables that have
// headers of their own.
void collect(const toml::table& t, std::size_t header, const text_lines& tl,
             std::vector<line_range>& out) {
  std::size_t last = header;
  for (const auto& [k, v] : t) {
    if (has_header(v, tl))
      collect(*v.as_table(), v.source().begin.line - 1, tl, out);
    else
      last = std::max(last, last_line(v) - 1);
  }
  out.push_back({header, last});
}

/// Where `[servers.NAME]` is in `text`: its table, and the line ranges to edit (the server's own
/// first); or why it cannot be edited.
struct located {
  std::string error;
  toml::table root;  // owns the nodes `table` points into
  const toml::table* table = nullptr;
  std::vector<line_range> ranges;
};

void locate(std::string_view text, std::string_view name, const text_lines& tl, located& out) {
  try {
    out.root = toml::parse(text);
  } catch (const toml::parse_error& e) {
    out.error = "not valid TOML: " + std::string(e.description());
    return;
  }
  const toml::node* node = out.root["servers"][name].node();
  if (!node) {
    out.error = "no server \"" + std::string(name) + "\" in this file";
    return;
  }
  if (!has_header(*node, tl)) {
    out.error = "server \"" + std::string(name) + "\" is not written as a [servers." +
                std::string(name) + "] table of its own here; edit it by hand";
    return;
  }
  out.table = node->as_table();
  collect(*out.table, node->source().begin.line - 1, tl, out.ranges);
  std::rotate(out.ranges.begin(), out.ranges.end() - 1, out.ranges.end());  // the server's first
}

}  // namespace

toml_edit remove_server_table(std::string_view text, std::string_view name) {
  const text_lines tl{text};
  located at;
  locate(text, name, tl, at);
  if (!at.error.empty()) return {{}, at.error};
  std::vector<bool> drop(tl.lines.size(), false);
  for (const auto& r : at.ranges)
    std::fill(drop.begin() + r.first, drop.begin() + r.last + 1, true);
  // The blank line that set each part apart: above it, else below it.
  for (const auto& r : at.ranges) {
    if (r.first > 0 && tl.blank(r.first - 1) && !drop[r.first - 1])
      drop[r.first - 1] = true;
    else if (tl.blank(r.last + 1))
      drop[r.last + 1] = true;
  }
  toml_edit out;
  for (std::size_t i = 0; i < tl.lines.size(); ++i)
    if (!drop[i]) out.text += text.substr(tl.begin(i), tl.end(i) - tl.begin(i));
  return out;
}

toml_edit set_server_enabled(std::string_view text, std::string_view name, bool enabled) {
  const text_lines tl{text};
  located at;
  locate(text, name, tl, at);
  if (!at.error.empty()) return {{}, at.error};
  const std::string value = enabled ? "true" : "false";
  const toml::node* key = at.table->get("enabled");
  if (!key) {
    if (enabled) return {std::string(text), {}, true};
    // Right below the header: whatever order the table's keys have, it is the server's.
    const auto header = at.ranges.front().first;
    const auto eol = tl.eol(header);
    const auto at_byte = tl.end(header);
    const bool newline = text.substr(0, at_byte).ends_with('\n');
    return {std::string(text.substr(0, at_byte)) + (newline ? "" : std::string(eol)) +
                "enabled = false" + std::string(newline ? eol : "") +
                std::string(text.substr(at_byte)),
            {}};
  }
  if (const auto* b = key->as_boolean(); b && b->get() == enabled)
    return {std::string(text), {}, true};
  const auto line = key->source().begin.line - 1;
  if (enabled && strip(tl.lines[line]) == "enabled = false")
    return {std::string(text.substr(0, tl.begin(line))) + std::string(text.substr(tl.end(line))),
            {}};
  const auto from = tl.offset(key->source().begin), to = tl.offset(key->source().end);
  return {std::string(text.substr(0, from)) + value + std::string(text.substr(to)), {}};
}

}  // namespace mcpmux
