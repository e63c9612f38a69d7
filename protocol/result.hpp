// result<T>, rpc_error, failure() and the JSON-RPC codes live in the base layer
// (base/result.hpp), so that its helpers (files) report failure the way everything above does;
// protocol's code and the layers above keep including them from here.
#pragma once

#include "base/result.hpp"  // IWYU pragma: export
