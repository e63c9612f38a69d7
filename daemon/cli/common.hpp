// What every part of the mcpmux CLI shares: the exit statuses of the user contract, the failure
// a command stops with, and small look-ups (environment, errno, decimal counts).
#pragma once

#include <fmt/format.h>
#include <boost/system/result.hpp>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "base/text.hpp"

namespace mcpmux::cli {

/// Process exit status; the values are part of the user-facing contract.
enum class exit_status : int {
  ok = 0,         ///< success
  failure = 1,    ///< the daemon or the tool reported an error, or an answer timed out
  usage = 2,      ///< bad command line
  no_daemon = 3,  ///< nothing answers on the socket
};

/// Why a command stopped; printed as "mcpmux: <message>" followed by `detail` lines.
struct failure {
  // Not an aggregate: result<exit_status, failure> must not see failure as made from a status.
  failure() = default;
  failure(exit_status s, std::string m, std::string d = {})
      : status(s), message(std::move(m)), detail(std::move(d)) {}

  exit_status status = exit_status::failure;
  std::string message;
  std::string detail;
  bool from_daemon = false;  ///< the daemon answered with a JSON-RPC error
  int sys_errno = 0;         ///< errno behind a failed connect, when that is what failed
};

template <class T>
using outcome = boost::system::result<T, failure>;

inline failure fail(std::string message, std::string detail = {}) {
  return failure{exit_status::failure, std::move(message), std::move(detail)};
}

/// Writes fmt::format(f, a...) to `to` through visible_text: what a person reads of a server's or
/// a client file's text acts on no terminal (docs/security.md). Not for output that carries the
/// CLI's own colours, nor for --json.
template <class... A>
void print_visible(std::FILE* to, fmt::format_string<A...> f, A&&... a) {
  const std::string text = visible_text(fmt::format(f, std::forward<A>(a)...));
  std::fwrite(text.data(), 1, text.size(), to);
}

/// Prints the failure on stderr (after what stdout holds) and returns its exit status. Messages
/// quote the daemon's errors and so a server's words: they are shown through visible_text.
inline int report(const failure& f) {
  std::fflush(stdout);
  if (!f.message.empty()) print_visible(stderr, "mcpmux: {}\n", f.message);
  if (!f.detail.empty()) print_visible(stderr, "{}\n", f.detail);
  return static_cast<int>(f.status);
}

/// The variable's value; nullopt when it is unset or empty.
inline std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

inline std::string errno_text(int err) {
  return std::strerror(err);
}

/// Parses a non-negative decimal integer that must consume the whole string.
inline std::optional<std::int64_t> parse_count(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace mcpmux::cli
