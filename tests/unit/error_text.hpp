// The words of a result's failure, for tests that compare them: "" for a success.
#pragma once

#include <string>

#include "protocol/result.hpp"

namespace mcpmux {

template <class T>
std::string error_text(const result<T>& r) {
  return r ? std::string() : r.error().message;
}

}  // namespace mcpmux
