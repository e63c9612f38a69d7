// Where mcpmux's files are: XDG directories, the home directory, `~` in paths given on the
// command line or in the environment.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace mcpmux {

/// The variable's value, or nothing when it is unset or empty.
std::optional<std::string> getenv_nonempty(const char* name);
/// $HOME, else the passwd entry's home, else "/".
std::string home_dir();
/// `~` or `~/...` made absolute.
std::string expand_tilde(std::string p);
/// $XDG_<kind>_HOME per the XDG spec (ignored unless absolute), else ~/<fallback>.
std::string xdg_dir(const char* env_name, std::string_view fallback);

}  // namespace mcpmux
