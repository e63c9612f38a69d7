// Secrets kept out of what clients receive (issue 46): a detector built once from a mode and the
// secret values mcpmux holds, which replaces each of them and, in `patterns` mode, each
// well-known credential shape by "[redacted: KIND]"; and the walk over an MCP result or
// notification that applies it to every string a client would see. Sans-io, linear in the text:
// hand-written scanners (no std::regex), one pass over a text with no trigger in it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boost::json {
class value;
}

namespace mcpmux::mcp {

/// What a server's words are checked for (`redact_results`).
enum class redaction_mode {
  off,       ///< nothing is replaced
  known,     ///< the secret values mcpmux holds
  patterns,  ///< those, and the well-known credential shapes
};

/// "off", "known" or "patterns"; nullopt for anything else.
std::optional<redaction_mode> parse_redaction_mode(std::string_view name);
std::string_view to_string(redaction_mode mode);

/// What a replaced value was; its name is the KIND in "[redacted: KIND]".
enum class secret_kind : std::uint8_t {
  known_secret,    ///< a value mcpmux holds (a resolved ${secret:…}, a token)
  private_key,     ///< a PEM "-----BEGIN … PRIVATE KEY-----" block
  aws_access_key,  ///< AKIA… / ASIA… access key id
  aws_secret_key,  ///< the value of an aws_secret_access_key assignment
  github_token,    ///< ghp_/gho_/ghu_/ghs_/ghr_…, github_pat_…
  gitlab_token,    ///< glpat-…
  slack_token,     ///< xoxb-/xoxa-/xoxp-/xoxr-/xoxs-…
  stripe_key,      ///< sk_live_… / rk_live_…
  openai_key,      ///< sk-…, sk-proj-…
  anthropic_key,   ///< sk-ant-…
  google_api_key,  ///< AIza… (39 characters)
  jwt,             ///< three base64url segments, the first a JSON header with "alg"
  password,        ///< a high-entropy value assigned to password/passwd/pwd
  secret,          ///< … to a name ending in secret, secret_key, private_key
  token,           ///< … to a name ending in token
  api_key,         ///< … to a name ending in api_key
};
inline constexpr std::size_t secret_kind_count = 16;

/// "known-secret", "private-key", "aws-access-key", …
std::string_view kind_name(secret_kind kind);

/// How many values of each kind were replaced (never the values).
struct redaction_counts {
  std::array<std::uint32_t, secret_kind_count> by_kind{};
  std::uint64_t all = 0;  ///< the sum of by_kind (a call's counts are most often none)

  std::uint32_t operator[](secret_kind kind) const {
    return by_kind[static_cast<std::size_t>(kind)];
  }
  void add(secret_kind kind) {
    ++by_kind[static_cast<std::size_t>(kind)];
    ++all;
  }
  redaction_counts& operator+=(const redaction_counts& other) {
    if (other.all) add_all(other);
    return *this;
  }
  std::uint64_t total() const { return all; }
  bool empty() const { return all == 0; }

 private:
  void add_all(const redaction_counts& other);
};

/// Known values shorter than this are ignored: they would match everywhere.
inline constexpr std::size_t min_known_secret_bytes = 8;

/// Built once (per server and profile, when the secrets change); redact() is then const and may
/// be shared between threads.
class secret_detector {
 public:
  secret_detector(redaction_mode mode, const std::vector<std::string>& known_secrets);

  redaction_mode mode() const { return mode_; }
  /// Replaces, in place, every known value (anywhere, also inside a longer word) and, in
  /// `patterns` mode, every credential shape by "[redacted: KIND]". A text with nothing to
  /// replace is not written to.
  redaction_counts redact(std::string& text) const;
  /// The same for a text held elsewhere: `out` is written (the redacted text) only when
  /// something was replaced, that is when the counts are not empty.
  redaction_counts redact(std::string_view text, std::string& out) const;

 private:
  /// The length of the longest known value at `at` of `text`, 0 when none is there.
  std::size_t known_at(std::string_view text, std::size_t at) const;

  redaction_mode mode_;
  std::vector<std::string> known_;  ///< longest first
  /// Which bytes may start a match: one test per byte on the fast path.
  std::array<bool, 256> trigger_{};
  /// The first two bytes of each known value (a 64 Ki-bit set): a cheap filter before comparing.
  std::vector<std::uint64_t> known_pairs_;
};

/// Whether an MCP answer's JSON text, as a server sent it, may hold something `detector` replaces
/// in its strings: the detector run over the text itself (known values are also looked for in
/// their JSON-escaped form), and the shapes JSON's escapes hide (a private key's lines, letters
/// written as \u00XX). False means redact_result would change nothing: the answer may be relayed
/// without a parse. A server that hides a value on purpose (encoded, split) is not caught here or
/// anywhere: redaction keeps accidents out of a model's context, not a hostile server's words.
bool may_hold_secret(std::string_view json_text, const secret_detector& detector);

/// Redacts every string of an MCP result that a client would see: tool results (content[].text,
/// embedded resource text, resource_link descriptions, structuredContent strings at any depth),
/// resources/read contents[].text, prompts/get messages and their description. Blobs are left
/// alone. The result is changed in place; nothing is done when the mode is off.
redaction_counts redact_result(boost::json::value& result, const secret_detector& detector);

/// The same for a JSON-RPC error object a server answered: its message and every string of its
/// data.
redaction_counts redact_error(boost::json::value& error, const secret_detector& detector);

/// The same for a server's notification: notifications/message `data` (strings at any depth)
/// and notifications/progress `message`. Other methods are left alone.
redaction_counts redact_notification(std::string_view method, boost::json::value& params,
                                     const secret_detector& detector);

}  // namespace mcpmux::mcp
