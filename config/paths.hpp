// Where mcpmux's files are: XDG directories, the home directory, `~` in paths given on the
// command line or in the environment.
#pragma once

#include "base/files.hpp"  // check_private_dir, where the paths are checked

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

/// Where a daemon on a default socket records the path it listens on:
/// ~/.local/state/mcpmux/daemon-socket, from the home directory alone (not $XDG_STATE_HOME,
/// not the socket's path), so that a client started with a bare environment finds it.
std::string daemon_record_path();
/// Writes the record (atomically, 0600, in a private directory), or fails saying why.
result<> write_daemon_record(const std::string& socket_path);
/// The recorded socket path, when the record is a regular file of this user (not a symlink)
/// holding an absolute path.
std::optional<std::string> read_daemon_record();
/// Removes the record if it still names `socket_path` (a newer daemon's record is left).
void remove_daemon_record(const std::string& socket_path);

}  // namespace mcpmux
