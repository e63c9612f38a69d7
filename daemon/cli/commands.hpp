// The subcommands of mcpmux that talk to the daemon, one function each: given where the daemon
// is and their typed arguments, they print their result and return the exit status or the
// failure. (`import` works on files: daemon/mcpmux_import.hpp.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "daemon/cli/client.hpp"

namespace mcpmux::cli {

/// The arguments of the daemon's subcommands, parsed (daemon/cli/args.cpp); each command reads
/// its own fields.
struct command_args {
  bool json = false;                     ///< status, tools, call, reload, doctor: --json
  bool spawn = false;                    ///< connect: --spawn
  std::optional<std::string> server;     ///< tools: --server NAME
  std::string profile;                   ///< connect, tools: --profile NAME
  std::optional<std::string> since;      ///< history: --since AGE
  std::optional<std::string> run;        ///< history: --run ID (a code-mode run)
  std::string target;                    ///< call: TOOL; logs, restart: SERVER
  std::optional<std::string> json_args;  ///< call: JSON_ARGS
  std::int64_t lines = 100;              ///< logs: -n N
  bool follow = false;                   ///< logs: -f
  std::string action;                    ///< auth: login, status or logout
  bool no_browser = false;               ///< auth login, dashboard: --no-browser
  bool yes = false;                      ///< adopt, unadopt: --yes
  bool dry_run = false;                  ///< adopt, unadopt: --dry-run
  bool remove = false;                   ///< unadopt: --remove
  bool keep_plaintext = false;           ///< adopt: --keep-plaintext
  std::optional<std::string> config;     ///< adopt, unadopt, add, remove, ...: --config PATH
  std::vector<std::string> names;        ///< trust: NAME...
  bool all = false;                      ///< trust: --all
  bool diff = false;                     ///< trust: --diff
  bool hidden = false;                   ///< tools: --hidden
  std::vector<std::string> command;      ///< add: COMMAND [ARGS...] (after --)
  std::optional<std::string> url;        ///< add: --url URL
  std::optional<std::string> cwd;        ///< add: --cwd DIR
  std::vector<std::string> env;          ///< add: --env K=V...
  std::vector<std::string> headers;      ///< add: --header K=V...
};

using command_fn = outcome<exit_status> (*)(const context&, const command_args&);

/// The failure of a command whose answer from the daemon is not what `method` gives.
failure unexpected_answer(std::string_view method);

outcome<exit_status> run_connect(const context& ctx, const command_args& args);
outcome<exit_status> run_status(const context& ctx, const command_args& args);
outcome<exit_status> run_tools(const context& ctx, const command_args& args);
outcome<exit_status> run_call(const context& ctx, const command_args& args);
outcome<exit_status> run_logs(const context& ctx, const command_args& args);
outcome<exit_status> run_sandbox(const context& ctx, const command_args& args);
outcome<exit_status> run_restart(const context& ctx, const command_args& args);
outcome<exit_status> run_reload(const context& ctx, const command_args& args);
outcome<exit_status> run_auth(const context& ctx, const command_args& args);     // cli/auth.cpp
outcome<exit_status> run_secret(const context& ctx, const command_args& args);   // cli/secret.cpp
outcome<exit_status> run_history(const context& ctx, const command_args& args);  // cli/history.cpp
outcome<exit_status> run_trust(const context& ctx, const command_args& args);    // cli/trust.cpp
outcome<exit_status> run_dashboard(const context& ctx, const command_args& args);
// cli/adopt.cpp
outcome<exit_status> run_agents(const context& ctx, const command_args& args);
outcome<exit_status> run_adopt(const context& ctx, const command_args& args);
outcome<exit_status> run_unadopt(const context& ctx, const command_args& args);
// cli/edit.cpp
outcome<exit_status> run_add(const context& ctx, const command_args& args);
outcome<exit_status> run_remove(const context& ctx, const command_args& args);
outcome<exit_status> run_enable(const context& ctx, const command_args& args);
outcome<exit_status> run_disable(const context& ctx, const command_args& args);
outcome<exit_status> run_doctor(const context& ctx, const command_args& args);  // cli/doctor.cpp

}  // namespace mcpmux::cli
