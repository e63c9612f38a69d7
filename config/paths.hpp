// Where mcpmux's files are: XDG directories, the home directory, `~` in paths given on the
// command line or in the environment.
#pragma once

#include "base/files.hpp"  // private_dir_problem, where the paths are checked

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
/// The directory `path` is in: "/" for "/x", "." for a bare name.
std::string parent_dir(const std::string& path);
/// The current directory ("." when it cannot be read).
std::string current_dir();
/// `path` made absolute against the current directory ("" stays "").
std::string absolute_path(const std::string& path);
/// $XDG_<kind>_HOME per the XDG spec (ignored unless absolute), else ~/<fallback>.
std::string xdg_dir(const char* env_name, std::string_view fallback);

}  // namespace mcpmux
