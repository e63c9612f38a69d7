#include "core/guard.hpp"

#include <exception>

#include "base/log.hpp"

namespace mcpmux {

const char* what_of(std::exception_ptr e) noexcept {
  try {
    std::rethrow_exception(std::move(e));
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

std::size_t guarded(const std::function<std::size_t()>& step) noexcept {
  try {
    return step();
  } catch (...) {
    try {
      logger("loop").error("a handler failed: {}; the daemon goes on",
                           what_of(std::current_exception()));
    } catch (...) {  // the log itself failed (out of memory): nothing more to do
    }
    return 1;
  }
}

}  // namespace mcpmux
