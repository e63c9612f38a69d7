// Redaction: values that must never be shown (resolved ${secret:NAME} values, bearer tokens)
// are registered once and replaced by "[redacted]" wherever text leaves mcpmux for a person —
// log lines, a server's stderr ring (`mcpmux logs`, status), last errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {

/// Values shorter than this are not registered: redacting "1" or "yes" everywhere would garble
/// every line and protect nothing.
inline constexpr std::size_t min_secret_bytes = 6;

/// Registers a value to redact from now on (for the life of the process).
void add_secret(std::string_view value);
/// `text` with every registered value replaced by "[redacted]".
std::string redact(std::string_view text);
/// Redacts `text` in place; true when something was replaced.
bool redact_in_place(std::string& text);
/// How many values are registered (for tests).
std::size_t secret_count();
/// Every registered value, longest first (to build a result's detector: what mcpmux holds).
const std::vector<std::string>& secret_values();
/// Moves on with every value registered: a detector built at an older generation is stale.
std::uint64_t secret_generation();

}  // namespace mcpmux
