// The loop driver's write batch (write_batch.hpp).
#include "transports/write_batch.hpp"

namespace mcpmux {

void write_batch::flush() {
  // Taken out first: a member's write may run handlers that hold and release the batch again.
  auto members = std::move(members_);
  members_.clear();
  for (auto& m : members) m->flush_batched();
}

}  // namespace mcpmux
