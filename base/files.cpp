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

namespace {

// "cannot WHAT: the reason errno gives".
rpc_error errno_failure(std::string_view what) {
  return failure(fmt::format("cannot {}: {}", what, std::strerror(errno)));
}

// Reads the open `fd` (closed here) as read_text_file does.
result<std::string> read_open_file(int fd, std::size_t max_bytes) {
  struct fd_closer {
    int fd;
    ~fd_closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return errno_failure("stat");
  if (!S_ISREG(st.st_mode)) return failure("not a regular file");
  const auto too_big = [&] {
    return failure(fmt::format("file is larger than {} bytes", max_bytes));
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
    if (n < 0) return errno_failure("read");
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  return text;
}

int open_for_reading(const std::string& path) {
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
}

}  // namespace

result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
  const int fd = open_for_reading(path);
  if (fd < 0) return errno_failure("open");
  return read_open_file(fd, max_bytes);
}

result<std::optional<std::string>> read_text_file_if_exists(const std::string& path,
                                                            std::size_t max_bytes) {
  const int fd = open_for_reading(path);
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) return std::optional<std::string>();
  if (fd < 0) return errno_failure("open");
  auto text = read_open_file(fd, max_bytes);
  if (!text) return std::move(text.error());
  return std::optional<std::string>(std::move(*text));
}

result<> write_file_atomically(const std::string& path_in, std::string_view text, durability how) {
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
  if (auto made = make_dirs(dir, 0700); !made) return made;
  mode_t mode = 0600;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) mode = st.st_mode & 07777;
  std::string tmp = fmt::format("{}/.{}.XXXXXX", dir, base);
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return errno_failure(fmt::format("create a temporary file in {}", dir));
  auto fail = [&](std::string_view what) {
    rpc_error e = errno_failure(fmt::format("{} {}", what, tmp));
    ::close(fd);
    ::unlink(tmp.c_str());
    return e;
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
    rpc_error e = errno_failure(fmt::format("write {}", tmp));
    ::unlink(tmp.c_str());
    return e;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    rpc_error e = errno_failure(fmt::format("rename {} to {}", tmp, path));
    ::unlink(tmp.c_str());
    return e;
  }
  if (how == durability::cache) return {};
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);  // make the rename itself durable; failure here loses nothing already visible
    ::close(dfd);
  }
  return {};
}

result<> make_dirs(const std::string& dir, mode_t mode) {
  for (std::size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    if (::mkdir(prefix.c_str(), mode) != 0 && errno != EEXIST)
      return errno_failure("create directory " + prefix);
  }
  return {};
}

result<> make_private_dir(const std::string& dir) {
  const auto slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    if (auto parents = make_dirs(dir.substr(0, slash), 0700); !parents) return parents;
  }
  // mkdir() does not follow a symlink in the last component (EEXIST), and what we made is ours:
  // only then is its mode ours to set (the umask may have taken bits from 0700).
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (::chmod(dir.c_str(), 0700) != 0) return errno_failure("set the mode of " + dir);
  } else if (errno != EEXIST) {
    return errno_failure("create directory " + dir);
  }
  return check_private_dir(dir);
}

result<> check_private_dir(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0)
    return failure(fmt::format("{}: {}", dir, std::strerror(errno)));
  if (S_ISLNK(st.st_mode)) return failure(dir + " is a symbolic link, not a directory");
  if (!S_ISDIR(st.st_mode)) return failure(dir + " is not a directory");
  if (st.st_uid != ::getuid())
    return failure(fmt::format("{} belongs to uid {}, not to uid {}", dir, st.st_uid, ::getuid()));
  if ((st.st_mode & 077) != 0) {
    return failure(
        fmt::format("{} has mode {:04o}; it must be private (0700)", dir, st.st_mode & 07777));
  }
  return {};
}

}  // namespace mcpmux
