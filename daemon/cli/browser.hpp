// Opening a URL in the desktop's browser (`mcpmux auth login`, `mcpmux dashboard`).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace mcpmux::cli {

/// The desktop's way to open a URL: $BROWSER (the convention xdg-utils honours too), else
/// xdg-open when there is a display. nullopt: print the URL only.
std::optional<std::string> opener();

/// Starts `program` on `url` without waiting for it (a browser may run for hours); its output
/// goes to /dev/null. -1 when it could not be started.
pid_t open_url(const std::string& program, const std::string& url);

}  // namespace mcpmux::cli
