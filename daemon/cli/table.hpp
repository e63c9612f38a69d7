// Output of the CLI: column layout for the terminal, JSON pretty-printing, and the formatting of
// durations, latencies and the daemon's strings.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/cli/json.hpp"

namespace mcpmux::cli {

/// Display columns of the terminal, or of an assumed one ($COLUMNS, else 120) when stdout is not
/// a terminal.
std::size_t output_width();
/// Colour only on a terminal, and not when $NO_COLOR is set.
bool use_colour();

/// One line for a table cell: newlines and tabs as spaces, everything else through visible_text
/// (so escape sequences from a server are shown, not obeyed).
std::string one_line(std::string_view s, bool first_line_only);

enum class align { left, right };

struct column {
  std::string_view header;
  std::size_t max_width;  ///< 0: take what the row width leaves (only for the last column)
  align alignment = align::left;
};

struct cell {
  std::string text;
  std::string_view colour;  ///< SGR sequence or empty
};

/// Prints a header line and the rows on stdout, each cell made one_line and truncated with "…" to
/// fit; only `cell::colour` reaches the terminal as a sequence.
void print_table(std::span<const column> columns, const std::vector<std::vector<cell>>& rows,
                 std::size_t total_width);

/// Pretty-prints with two-space indentation on stdout, keeping object keys in the order received.
void print_pretty(const json::value& v);

std::string format_duration_ms(std::int64_t ms);  ///< "42s", "3m07s", "5h02m", "2d03h"
std::string format_latency_us(std::int64_t us);   ///< "850us", "1.2ms", "3.40s"

/// The string member as one line, or "-" when it is absent or empty.
std::string text_or_dash(const json::value& v, std::string_view key, bool first_line_only);

/// The integer member formatted by `format`, or "-" when it is absent.
template <class Format>
std::string int_or_dash(const json::value& v, std::string_view key, Format format) {
  auto n = member_int(v, key);
  return n ? format(*n) : "-";
}

inline std::string plain_int(std::int64_t n) {
  return std::to_string(n);
}

}  // namespace mcpmux::cli
