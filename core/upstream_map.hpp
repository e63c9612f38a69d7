// The shared upstreams by server name: the manager owns them; its services look them up.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

namespace mcpmux {

class upstream;
using upstream_map = std::map<std::string, std::shared_ptr<upstream>, std::less<>>;

}  // namespace mcpmux
