// Files: bounded reads, atomic writes that survive a crash, private directories. The one place
// mcpmux reads and writes its own files (config, tool cache, imported configs, token files).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace mcpmux {

/// Reads a whole file of at most `max_bytes` (regular files only; a FIFO does not block), or
/// fails saying why ("cannot open: ...", without the path: callers name the file their way).
result<std::string> read_text_file(const std::string& path, std::size_t max_bytes);

/// As read_text_file, but a file that does not exist (nor a directory on its way) is no failure:
/// nullopt, for a file the caller creates when it is missing (a config, a client's file).
result<std::optional<std::string>> read_text_file_if_exists(const std::string& path,
                                                            std::size_t max_bytes);

/// How hard a write insists on reaching the disk.
enum class durability {
  synced,  ///< fsync the file and its directory: survives a power loss (configs the user edits)
  cache,   ///< rename only: a crash leaves the old or the new file, never a mix, but the newest
           ///< write may be lost; for caches, rebuilt anyway, written on the daemon's loop
};

/// Replaces `path` with `text` atomically (temporary file in the same directory, rename),
/// creating missing directories (mode 0700). A symlink is followed, so the file it points to is
/// replaced. Keeps the old file's mode; a new file gets 0600. Fails with what could not be done
/// (naming the file or directory); the old file is then left as it was.
result<> write_file_atomically(const std::string& path, std::string_view text,
                               durability how = durability::synced);

/// `mkdir -p`: creates the missing directories of `dir`, each with `mode`; fails naming the
/// directory and the reason.
result<> make_dirs(const std::string& dir, mode_t mode);

/// A directory for a socket or a lock that only this user may reach: made (mode 0700, missing
/// parents too) when it does not exist; else it must already be private (`private_dir_problem`:
/// the user's own, 0700, not a symlink). The mode of a directory that was there before is never
/// changed. Fails saying why otherwise.
result<> make_private_dir(const std::string& dir);

/// Succeeds when `dir` is a private directory of this user, else fails saying why not: the path
/// itself must be a directory (lstat: a symlink is refused, whatever it points to), owned by the
/// effective uid, with no permission for group or others (0700, or less).
result<> check_private_dir(const std::string& dir);

}  // namespace mcpmux
