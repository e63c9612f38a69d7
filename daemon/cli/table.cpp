// Tables, pretty-printed JSON and human-readable numbers for the CLI's output.
#include "daemon/cli/table.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "daemon/cli/common.hpp"

namespace mcpmux::cli {
namespace {

// Code points, the width approximation used for alignment (the input is valid UTF-8).
std::size_t display_width(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string truncate(std::string s, std::size_t width) {
  if (display_width(s) <= width) return s;
  if (width == 0) return {};
  std::size_t seen = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((s[i] & 0xC0) == 0x80) continue;
    if (seen == width - 1) {
      s.resize(i);
      return s + "…";
    }
    ++seen;
  }
  return s;
}

void append_pretty(std::string& out, const json::value& v, std::size_t depth) {
  const bool object = v.is_object() && !v.get_object().empty();
  if (!object && !(v.is_array() && !v.get_array().empty())) {
    out += json::serialize(v);  // a scalar, {} or []
    return;
  }
  out += object ? "{\n" : "[\n";
  bool first = true;
  auto next_line = [&] {
    if (!first) out += ",\n";
    first = false;
    out.append(2 * (depth + 1), ' ');
  };
  if (object) {
    for (const auto& member : v.get_object()) {
      next_line();
      out += json::serialize(member.key());
      out += ": ";
      append_pretty(out, member.value(), depth + 1);
    }
  } else {
    for (const auto& element : v.get_array()) {
      next_line();
      append_pretty(out, element, depth + 1);
    }
  }
  out += '\n';
  out.append(2 * depth, ' ');
  out += object ? '}' : ']';
}

}  // namespace

std::size_t output_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  if (auto cols = env("COLUMNS")) {
    if (auto n = parse_count(*cols); n && *n > 0) return static_cast<std::size_t>(*n);
  }
  return 120;
}

bool use_colour() {
  // no-color.org: a NO_COLOR that is present and non-empty disables colour.
  return ::isatty(STDOUT_FILENO) && !env("NO_COLOR");
}

std::string one_line(std::string_view s, bool first_line_only) {
  if (first_line_only) s = s.substr(0, s.find('\n'));
  std::string out(s);
  std::replace_if(
      out.begin(), out.end(), [](char c) { return c == '\n' || c == '\t'; }, ' ');
  out = visible_text(out);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

void print_table(std::span<const column> columns, const std::vector<std::vector<cell>>& rows,
                 std::size_t total_width) {
  constexpr std::size_t gap = 2;
  std::vector<std::size_t> widths(columns.size());
  std::size_t used = 0;
  for (std::size_t c = 0; c < columns.size(); ++c) {
    std::size_t w = display_width(columns[c].header);
    for (const auto& row : rows) w = std::max(w, display_width(one_line(row[c].text, false)));
    if (columns[c].max_width == 0) {
      std::size_t left = total_width > used ? total_width - used : 0;
      w = std::min(w, std::max<std::size_t>(left, 16));
    } else {
      w = std::min(w, columns[c].max_width);
    }
    widths[c] = w;
    used += w + gap;
  }

  std::string out;
  auto append_cell = [&](std::size_t c, std::string_view text, std::string_view colour) {
    const bool last = c + 1 == columns.size();
    std::string shown = truncate(one_line(text, false), widths[c]);
    std::size_t pad = widths[c] - display_width(shown);
    if (columns[c].alignment == align::right) out.append(pad, ' ');
    if (!colour.empty()) out += colour;
    out += shown;
    if (!colour.empty()) out += "\x1b[0m";
    if (columns[c].alignment == align::left && !last) out.append(pad, ' ');
    if (!last) out.append(gap, ' ');
  };
  for (std::size_t c = 0; c < columns.size(); ++c) append_cell(c, columns[c].header, {});
  out += '\n';
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) append_cell(c, row[c].text, row[c].colour);
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void print_pretty(const json::value& v) {
  std::string out;
  append_pretty(out, v, 0);
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stdout);
}

std::string format_duration_ms(std::int64_t ms) {
  std::int64_t s = ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
}

std::string format_latency_us(std::int64_t us) {
  if (us < 1000) return fmt::format("{}us", us);
  if (us < 1'000'000) return fmt::format("{:.1f}ms", static_cast<double>(us) / 1e3);
  return fmt::format("{:.2f}s", static_cast<double>(us) / 1e6);
}

std::string text_or_dash(const json::value& v, std::string_view key, bool first_line_only) {
  auto s = member_string(v, key);
  return s && !s->empty() ? one_line(*s, first_line_only) : "-";
}

}  // namespace mcpmux::cli
