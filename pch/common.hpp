// The headers most of mcpmux's sources include, compiled once per library when precompiled
// headers are on (-Db_pch=true: the build scripts/run and meson's defaults make; scripts/build,
// which builds the tests with ccache, turns them off). Only headers whose declarations every
// source may see: never toml++ (config/toml_impl.cpp compiles it) nor Boost's src.hpp files.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <fmt/format.h>
