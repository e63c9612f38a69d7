// `mcpmux secret set|list|rm NAME`: the secrets behind ${secret:NAME} — in the desktop's Secret
// Service when one answers (config/secret_service.hpp), else in the secrets file
// (config/secrets.hpp). No daemon is needed; a value is never printed.
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <set>
#include <string>

#include "config/secret_service.hpp"
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
  // The Secret Service when one answers; the file besides (and alone when there is none).
  const bool service = secret_service_wanted();
  auto note_unavailable = [&](const secret_service_result& r) {
    if (!r.available) fmt::print(stderr, "{}; using {}\n", r.error, path);
    return r.available;
  };
  auto file = read_secrets(path);
  if (args.action == "set") {
    auto value = read_value(args.target);
    if (!value || value->empty())
      return failure{exit_status::failure, "no value given; nothing changed"};
    const auto kept = keep_secrets({{args.target, *value}});
    if (!kept.unavailable.empty()) fmt::print(stderr, "{}; using {}\n", kept.unavailable, path);
    if (!kept.error.empty()) return failure{exit_status::failure, kept.error};
    fmt::print(stderr, "kept {} in {}; `mcpmux reload` makes the daemon use it\n", args.target,
               kept.where);
    return exit_status::ok;
  }
  if (args.action == "list") {
    std::set<std::string> names;
    if (service) {
      secret_service_result r;
      for (auto& n : secret_service_names(r)) names.insert(std::move(n));
      if (r.available && !r.error.empty()) return failure{exit_status::failure, r.error};
      note_unavailable(r);
    }
    if (!file.error.empty()) return failure{exit_status::failure, file.error};
    for (const auto& [name, value] : file.values) names.insert(name);
    for (const auto& name : names) fmt::print("{}\n", name);
    return exit_status::ok;
  }
  // rm: from wherever it is kept.
  bool removed = false;
  if (service) {
    const auto r = secret_service_clear(args.target, removed);
    if (r.available && !r.error.empty()) return failure{exit_status::failure, r.error};
    note_unavailable(r);
    if (removed) fmt::print(stderr, "removed {} from the Secret Service\n", args.target);
  }
  if (file.error.empty() && file.values.erase(args.target) > 0) {
    if (auto written = write_secrets(path, file.values); !written)
      return failure{exit_status::failure, written.error().message};
    fmt::print(stderr, "removed {} from {}\n", args.target, path);
    removed = true;
  }
  if (!removed)
    return failure{exit_status::failure,
                   file.error.empty() ? "no secret named \"" + args.target + "\"" : file.error};
  fmt::print(stderr, "`mcpmux reload` makes the daemon forget it\n");
  return exit_status::ok;
}

}  // namespace mcpmux::cli
