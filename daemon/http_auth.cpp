#include "daemon/http_auth.hpp"

#include "base/random.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <cerrno>
#include <cstring>

#include "base/files.hpp"

namespace mcpmux {
namespace {

constexpr std::size_t token_bytes = 32;  // 256 bits

bool usable(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::getuid() ||
      (st.st_mode & 077) != 0)
    return false;
  auto text = read_text_file(path, 1024);
  if (!text) return false;
  while (!text->empty() && (text->back() == '\n' || text->back() == '\r')) text->pop_back();
  return text->size() == token_bytes * 2 &&
         text->find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

result<> ensure_http_token(const std::string& path) {
  if (usable(path)) return {};
  const auto hex = random_hex(token_bytes);
  if (!hex) return failure(fmt::format("cannot make an HTTP token: {}", std::strerror(errno)));
  // A file that is not private (or not ours) is replaced, not trusted: remove it first so that
  // the new one is created 0600.
  ::unlink(path.c_str());
  return write_file_atomically(path, *hex + "\n");
}

}  // namespace mcpmux
