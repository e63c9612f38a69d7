#include "base/files.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace mcpmux {

std::optional<std::string> read_text_file(const std::string& path, std::size_t max_bytes,
                                          std::string& error, bool* missing) {
  if (missing) *missing = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (missing) *missing = errno == ENOENT || errno == ENOTDIR;
    error = fmt::format("cannot open: {}", std::strerror(errno));
    return std::nullopt;
  }
  struct fd_closer {
    int fd;
    ~fd_closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = fmt::format("cannot stat: {}", std::strerror(errno));
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    error = "not a regular file";
    return std::nullopt;
  }
  const auto too_big = [&] {
    error = fmt::format("file is larger than {} bytes", max_bytes);
    return std::nullopt;
  };
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) return too_big();
  // Read at the size fstat gave (one read for most files), one byte more to see growth.
  std::string text(static_cast<std::size_t>(st.st_size) + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    if (got == text.size()) {
      if (text.size() > max_bytes) return too_big();  // the file grew after fstat
      text.resize(std::min(text.size() * 2, max_bytes + 1));
    }
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = fmt::format("cannot read: {}", std::strerror(errno));
      return std::nullopt;
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

std::string write_file_atomically(const std::string& path_in, std::string_view text,
                                  durability how) {
  std::string path = path_in;
  // Dotfile managers link config files; replacing the link itself would detach it.
  if (char* real = ::realpath(path_in.c_str(), nullptr)) {
    path = real;
    std::free(real);
  }
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  // Each new level private: the file may hold tokens.
  if (std::string error; !make_dirs(dir, 0700, &error)) return error;
  mode_t mode = 0600;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
  std::string tmp = fmt::format("{}/.{}.XXXXXX", dir, base);
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0)
    return fmt::format("cannot create a temporary file in {}: {}", dir, std::strerror(errno));
  auto fail = [&](std::string_view what) {
    std::string msg = fmt::format("cannot {} {}: {}", what, tmp, std::strerror(errno));
    ::close(fd);
    ::unlink(tmp.c_str());
    return msg;
  };
  if (::fchmod(fd, mode) != 0) return fail("set the mode of");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write");
    done += static_cast<std::size_t>(n);
  }
  if (how == durability::synced && ::fsync(fd) != 0) return fail("sync");
  if (::close(fd) != 0) {
    std::string msg = fmt::format("cannot write {}: {}", tmp, std::strerror(errno));
    ::unlink(tmp.c_str());
    return msg;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = fmt::format("cannot rename {} to {}: {}", tmp, path, std::strerror(errno));
    ::unlink(tmp.c_str());
    return msg;
  }
  if (how == durability::cache) return {};
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // make the rename itself durable; failure here loses nothing already visible
    ::close(dfd);
  }
  return {};
}

bool make_dirs(const std::string& dir, mode_t mode, std::string* error) {
  for (std::size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST) {
      if (error)
        *error = fmt::format("cannot create directory {}: {}", prefix, std::strerror(errno));
      return false;
    }
  }
  return true;
}

bool make_private_dir(const std::string& dir, std::string* error) {
  const auto slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_dirs(dir.substr(0, slash), 0700, error))
    return false;
  // mkdir() does not follow a symlink in the last component (EEXIST), and what we made is ours:
  // only then is its mode ours to set (the umask may have taken bits from 0700).
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (::chmod(dir.c_str(), 0700) != 0) {
      *error = fmt::format("cannot set the mode of {}: {}", dir, std::strerror(errno));
      return false;
    }
  } else if (errno != EEXIST) {
    *error = fmt::format("cannot create directory {}: {}", dir, std::strerror(errno));
    return false;
  }
  if (auto problem = private_dir_problem(dir); !problem.empty()) {
    *error = std::move(problem);
    return false;
  }
  return true;
}

std::string private_dir_problem(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return fmt::format("{}: {}", dir, std::strerror(errno));
  if (S_ISLNK(st.st_mode)) return dir + " is a symbolic link, not a directory";
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (st.st_uid != ::getuid()) {
    return fmt::format("{} belongs to uid {}, not to uid {}", dir, st.st_uid, ::getuid());
  }
  if ((st.st_mode & 077) != 0) {
    return fmt::format("{} has mode {:04o}; it must be private (0700)", dir, st.st_mode & 07777);
  }
  return {};
}

}  // namespace mcpmux
