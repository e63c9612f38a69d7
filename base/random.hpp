// Unguessable identifiers from the kernel's CSPRNG (getrandom): session ids, request states,
// login codes, cookies, tokens. The one system call of this layer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace mcpmux {

/// `bytes` random bytes as lowercase hex (2 × bytes digits); nullopt (errno set) when the
/// kernel gives none.
std::optional<std::string> random_hex(std::size_t bytes);

}  // namespace mcpmux
