// Files: bounded reads, atomic writes that survive a crash, private directories. The one place
// mcpmux reads and writes its own files (config, tool cache, imported configs, token files).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace mcpmux {

/// Reads a whole file of at most `max_bytes` (regular files only; a FIFO does not block). On
/// failure returns nothing and sets `error` ("cannot open: ..."); `*missing` (if given) tells
/// whether the file does not exist.
std::optional<std::string> read_text_file(const std::string& path, std::size_t max_bytes,
                                          std::string& error, bool* missing = nullptr);

/// How hard a write insists on reaching the disk.
enum class durability {
  synced,  ///< fsync the file and its directory: survives a power loss (configs the user edits)
  cache,   ///< rename only: a crash leaves the old or the new file, never a mix, but the newest
           ///< write may be lost; for caches, rebuilt anyway, written on the daemon's loop
};

/// Replaces `path` with `text` atomically (temporary file in the same directory, rename),
/// creating missing directories (mode 0700). A symlink is followed, so the file it points to is
/// replaced. Keeps the old file's mode; a new file gets 0600. Returns "" on success, else an
/// error message.
std::string write_file_atomically(const std::string& path, std::string_view text,
                                  durability how = durability::synced);

/// `mkdir -p`: creates the missing directories of `dir`, each with `mode`. False, with `*error`
/// (if given) naming the directory and the reason, on failure.
bool make_dirs(const std::string& dir, mode_t mode, std::string* error = nullptr);

/// A directory for a socket or a lock that only this user may reach: made (mode 0700, missing
/// parents too) when it does not exist; else it must already be private (`private_dir_problem`:
/// the user's own, 0700, not a symlink). The mode of a directory that was there before is never
/// changed. False, with `*error` saying why, otherwise.
bool make_private_dir(const std::string& dir, std::string* error);

/// Why `dir` is not a private directory of this user, or "" when it is: the path itself must be
/// a directory (lstat: a symlink is refused, whatever it points to), owned by the effective uid,
/// with no permission for group or others (0700, or less).
std::string private_dir_problem(const std::string& dir);

}  // namespace mcpmux
