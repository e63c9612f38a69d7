// The loop driver's write batch (write_batch.hpp).
#include "transports/write_batch.hpp"

#include <utility>

namespace mcpmux {

void write_batch::flush() {
  if (members_.empty()) return;
  // Taken out first: a member's write may run handlers that hold and release the batch again
  // (they join the spare list, which becomes members_). The list's storage is kept for the next
  // batch: a batch a read of a call makes has one member, and a vector made for it each time
  // cost a malloc and a free.
  auto members = std::exchange(members_, std::move(spare_));
  members_.clear();
  for (auto& m : members) m->flush_batched();
  members.clear();
  spare_ = std::move(members);
}

}  // namespace mcpmux
