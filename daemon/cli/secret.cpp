// `mcpmux secret set|list|rm NAME`: the secrets file behind ${secret:NAME} (config/secrets.hpp).
// No daemon is needed; a value is never printed.
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "config/secrets.hpp"
#include "daemon/cli/commands.hpp"

namespace mcpmux::cli {
namespace {

// The value: typed at the terminal without echo, else all of stdin; one trailing newline is
// not part of it.
std::optional<std::string> read_value(const std::string& name) {
  std::string value;
  if (::isatty(STDIN_FILENO)) {
    termios old{};
    const bool tty = ::tcgetattr(STDIN_FILENO, &old) == 0;
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    if (tty) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
    fmt::print(stderr, "value of {}: ", name);
    std::fflush(stderr);
    const bool got = static_cast<bool>(std::getline(std::cin, value));
    if (tty) ::tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
    fmt::print(stderr, "\n");
    if (!got) return std::nullopt;
  } else {
    value.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  if (!value.empty() && value.back() == '\n') value.pop_back();
  if (!value.empty() && value.back() == '\r') value.pop_back();
  return value;
}

}  // namespace

outcome<exit_status> run_secret(const context&, const command_args& args) {
  const std::string path = secrets_path();
  const bool named = args.action != "list";
  if (named && !is_secret_name(args.target))
    return failure{exit_status::usage,
                   args.target.empty()
                       ? "secret " + args.action + " needs a NAME"
                       : "a secret's name is 1 to 128 characters of [A-Za-z0-9_.-]"};
  auto file = read_secrets(path);
  if (!file.error.empty()) return failure{exit_status::failure, file.error};
  if (args.action == "list") {
    for (const auto& [name, value] : file.values) fmt::print("{}\n", name);
    return exit_status::ok;
  }
  if (args.action == "rm") {
    if (file.values.erase(args.target) == 0)
      return failure{exit_status::failure, "no secret named \"" + args.target + "\""};
  } else {
    auto value = read_value(args.target);
    if (!value || value->empty())
      return failure{exit_status::failure, "no value given; nothing changed"};
    file.values[args.target] = std::move(*value);
  }
  if (auto error = write_secrets(path, file.values); !error.empty())
    return failure{exit_status::failure, error};
  fmt::print(stderr, "{} {} {} {}; `mcpmux reload` makes the daemon use it\n",
             args.action == "rm" ? "removed" : "kept", args.target,
             args.action == "rm" ? "from" : "in", path);
  return exit_status::ok;
}

}  // namespace mcpmux::cli
