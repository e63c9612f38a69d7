// The detectors a call's results and a server's messages are redacted with (issue 46): one per
// mode, built from every secret mcpmux holds (base/redact: resolved ${secret:…} values,
// token_command and OAuth tokens, the endpoint's tokens) and built again when it learns another.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "protocol/result_redaction.hpp"

namespace mcpmux {

class redaction_detectors {
 public:
  /// The detector for `mode`, null when off. A call keeps the one it started with: a detector
  /// built again later does not change it.
  std::shared_ptr<const mcp::secret_detector> get(mcp::redaction_mode mode);

 private:
  std::optional<std::uint64_t> generation_;  ///< base/redact's, when these were built
  std::shared_ptr<const mcp::secret_detector> known_, patterns_;
};

/// The mode for a profile's clients: the profile's own when it sets one, else the server's.
inline mcp::redaction_mode effective_redaction(mcp::redaction_mode server,
                                               std::optional<mcp::redaction_mode> profile) {
  return profile.value_or(server);
}

/// "github-token 2, known-secret 1": what an audit row and a log line say was replaced.
std::string describe(const mcp::redaction_counts& counts);

}  // namespace mcpmux
