#include "daemon/cli/browser.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

#include "daemon/cli/common.hpp"

extern char** environ;

namespace mcpmux::cli {

std::optional<std::string> opener() {
  if (auto b = env("BROWSER")) return b;
  if (env("DISPLAY") || env("WAYLAND_DISPLAY")) return std::string("xdg-open");
  return std::nullopt;
}

pid_t open_url(const std::string& program, const std::string& url) {
  pid_t pid = -1;
  std::string prog = program, arg = url;
  char* argv[] = {prog.data(), arg.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  const int rc = posix_spawnp(&pid, prog.c_str(), &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

}  // namespace mcpmux::cli
