#include "core/redaction.hpp"

#include "base/redact.hpp"

namespace mcpmux {

std::shared_ptr<const mcp::secret_detector> redaction_detectors::get(mcp::redaction_mode mode) {
  if (mode == mcp::redaction_mode::off) return nullptr;
  if (generation_ != secret_generation()) {
    generation_ = secret_generation();
    known_.reset();
    patterns_.reset();
  }
  auto& d = mode == mcp::redaction_mode::known ? known_ : patterns_;
  if (!d) d = std::make_shared<const mcp::secret_detector>(mode, secret_values());
  return d;
}

std::string describe(const mcp::redaction_counts& counts) {
  std::string out;
  for (std::size_t k = 0; k < mcp::secret_kind_count; ++k) {
    if (!counts.by_kind[k]) continue;
    if (!out.empty()) out += ", ";
    out += mcp::kind_name(static_cast<mcp::secret_kind>(k));
    out += ' ';
    out += std::to_string(counts.by_kind[k]);
  }
  return out;
}

}  // namespace mcpmux
