// mcpmux's command line: the subcommand table, their options on CLI11, and the global options
// (--socket, --timeout), which may come before or after the command.
#include "daemon/cli/args.hpp"

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "daemon/cli/usage.hpp"

namespace mcpmux::cli {
namespace {

constexpr milliseconds control_timeout{10'000};
constexpr milliseconds call_timeout{60'000};

/// A decimal count in [min, max], as `target`. (CLI11's own integer parse would read "010" as
/// octal and accept " 5" and "0x5".)
CLI::Option* add_count(CLI::App& app, const std::string& names, std::int64_t& target,
                       std::int64_t min, std::int64_t max, const std::string& what,
                       const std::string& description) {
  auto check = [=](std::string& value) -> std::string {
    auto n = parse_count(value);
    return n && *n >= min && *n <= max ? "" : "wants " + what + ", not '" + value + "'";
  };
  auto store = [&target](const std::string& value) { target = *parse_count(value); };
  return app.add_option_function<std::string>(names, store, description)
      ->check(CLI::Validator(check, ""));
}

// What adopt and unadopt both take: the agent, --dry-run, --yes, --config.
void add_agent_options(CLI::App& c, command_args& a, const char* config_help) {
  c.add_option("AGENT", a.target, "an agent id (see `mcpmux agents`) or a file's path")->required();
  c.add_flag("--dry-run", a.dry_run, "show what would change; write nothing");
  c.add_flag("-y,--yes", a.yes, "apply without asking");
  c.add_option("-c,--config", a.config, config_help)->type_name("PATH");
}

void add_config_option(CLI::App& c, command_args& a) {
  c.add_option("-c,--config", a.config, "mcpmux's config file (default as the daemon's)")
      ->type_name("PATH");
}

// What remove, enable and disable take: the server's name, --config.
void declare_server_edit(CLI::App& c, command_args& a) {
  c.add_option("NAME", a.target, "the server's name")->required();
  add_config_option(c, a);
}

struct command_spec {
  const char* name;
  const char* synopsis;  ///< after "mcpmux "
  const char* summary;   ///< one line, for the command list and the command's help
  const char* details;   ///< "" or text shown before the options in the command's help
  milliseconds default_timeout;
  command_fn run;
  void (*declare)(CLI::App&, command_args&);  ///< the command's arguments and options
};

// The subcommands that talk to the daemon; `import` is added by daemon/mcpmux_import.cpp.
const command_spec commands[] = {
    {"connect", "connect [--spawn] [--profile NAME]",
     "bridge stdin/stdout to the daemon (use as a stdio MCP server)",
     "Copies bytes between stdin/stdout and the daemon's socket, unchanged, so that any MCP\n"
     "client that launches stdio servers can use mcpmux:\n"
     "  command = \"mcpmux\", args = [\"connect\", \"--spawn\"]\n"
     "Ends when the daemon closes the connection (after stdin's EOF has been passed on).\n"
     "--timeout bounds only the connection attempt.\n",
     control_timeout, run_connect,
     [](CLI::App& c, command_args& a) {
       c.add_flag("--spawn", a.spawn,
                  "when no daemon answers, start mcpmuxd (from this program's\n"
                  "directory, else PATH) in the background with --socket, and wait\n"
                  "up to 5 s for it; clients starting together share one daemon\n"
                  "(they queue on SOCKET.lock). Its output goes to\n"
                  "$XDG_STATE_HOME/mcpmux/mcpmuxd.log.");
       c.add_option("--profile", a.profile,
                    "see what [profiles.NAME] shows (default: the profile whose\n"
                    "`match` fits the agent, else `default`, else everything)")
           ->type_name("NAME");
     }},
    {"status", "status [--json]", "show the daemon and the state of every server", "",
     control_timeout, run_status,
     [](CLI::App& c, command_args& a) {
       c.add_flag("--json", a.json, "print the daemon's status object as JSON");
     }},
    {"tools", "tools [--json] [--server NAME [--hidden]] [--profile NAME]",
     "list the combined tools",
     "With --server NAME --hidden, every tool the server offers is listed with its state:\n"
     "shown, hidden by its `tools` filter, or quarantined by trust (see `mcpmux trust`); and\n"
     "whether its definition changed since it was trusted.\n",
     control_timeout, run_tools,
     [](CLI::App& c, command_args& a) {
       c.add_flag("--json", a.json, "print the tool list as a JSON array");
       auto* server =
           c.add_option("--server", a.server, "only the tools of server NAME")->type_name("NAME");
       c.add_flag("--hidden", a.hidden,
                  "also the tools of --server NAME that clients do not see, with their state")
           ->needs(server);
       c.add_option("--profile", a.profile, "the tools profile NAME shows")->type_name("NAME");
     }},
    {"call", "call TOOL [JSON_ARGS] [--json]", "call a tool and print its result",
     "Text content is printed as text, other content as JSON; a tool error goes to stderr\n"
     "and exits 1.\n",
     call_timeout, run_call,
     [](CLI::App& c, command_args& a) {
       c.add_option("TOOL", a.target, "the exposed tool (see `mcpmux tools`)")->required();
       c.add_option("JSON_ARGS", a.json_args, "its arguments, a JSON object (default {})");
       c.add_flag("--json", a.json, "print the raw result object (including\nstructuredContent)");
     }},
    {"logs", "logs SERVER [-n N] [-f]", "print a server's recent log lines", "", control_timeout,
     run_logs,
     [](CLI::App& c, command_args& a) {
       c.add_option("SERVER", a.target, "the server's name")->required();
       add_count(c, "-n,--lines", a.lines, 1, INT32_MAX, "a positive number of lines",
                 "how many of the latest lines (default 100)")
           ->type_name("N");
       c.add_flag("-f,--follow", a.follow,
                  "then keep printing new lines as they come, until the\n"
                  "daemon closes the connection or Ctrl-C (no timeout applies)");
     }},
    {"sandbox", "sandbox SERVER [--json]", "print what a server's sandbox lets it reach",
     "The mounts (what it may read and write; mcpmux's own files are always hidden), the\n"
     "network, the limits and what enforces them, as the server's last start got them.\n",
     control_timeout, run_sandbox,
     [](CLI::App& c, command_args& a) {
       c.add_option("SERVER", a.target, "the server's name")->required();
       c.add_flag("--json", a.json, "print the daemon's answer as JSON");
     }},
    {"restart", "restart SERVER", "restart one server", "", control_timeout, run_restart,
     [](CLI::App& c, command_args& a) {
       c.add_option("SERVER", a.target, "the server's name")->required();
     }},
    {"reload", "reload [--json]", "reload the configuration and print what changed",
     "Unchanged servers keep running; changed ones restart; added ones start; removed ones\n"
     "stop. An invalid file changes nothing: its errors are printed and the exit status is 1.\n",
     control_timeout, run_reload,
     [](CLI::App& c, command_args& a) {
       c.add_flag("--json", a.json, "print the daemon's answer as JSON");
     }},
    {"auth", "auth login|status|logout [SERVER] [--json] [--no-browser]",
     "log in to, show or log out of OAuth servers",
     "login SERVER   start an OAuth login: prints the authorization URL, opens it with\n"
     "               $BROWSER (else xdg-open when there is a display) and waits until\n"
     "               the daemon has the tokens; the server comes up without a restart\n"
     "status         every OAuth server: method, state, scope, expiry, last refresh\n"
     "logout SERVER  revoke the tokens where the server offers it, then forget them\n",
     control_timeout, run_auth,
     [](CLI::App& c, command_args& a) {
       c.add_option("ACTION", a.action, "login, status or logout")
           ->required()
           ->check(CLI::IsMember({"login", "status", "logout"}));
       c.add_option("SERVER", a.target, "the server's name (status: optional)");
       c.add_flag("--json", a.json, "status: print the daemon's answer as JSON");
       c.add_flag("--no-browser", a.no_browser, "login: print the URL only");
     }},
    {"history",
     "history [TOOL] [--tool TOOL] [--server NAME] [--since AGE] [--run ID] [-n N] [--json]",
     "show the audit log: calls, reads and spawns",
     "Every tools/call, prompts/get and resources/read (who, profile, server, name, outcome,\n"
     "duration, sizes) and every spawn of a server (its command line), newest last.\n"
     "Kept in $XDG_STATE_HOME/mcpmux/state.db ([daemon] audit, audit_arguments,\n"
     "audit_retention_days, audit_max_rows).\n",
     control_timeout, run_history,
     [](CLI::App& c, command_args& a) {
       c.add_option("TOOL,--tool", a.target, "only this exposed tool, prompt or URI")
           ->type_name("TOOL");
       c.add_option("--server", a.server, "only this server")->type_name("NAME");
       c.add_option("--since", a.since, "only the last AGE (90s, 15m, 1h, 2d)")->type_name("AGE");
       c.add_option("--run", a.run, "only this code-mode run: its program and its tool calls")
           ->type_name("ID");
       add_count(c, "-n,--lines", a.lines, 1, 100000, "a positive number of entries",
                 "how many of the newest entries (default 100)")
           ->type_name("N");
       c.add_flag("--json", a.json, "print the entries as JSON");
     }},
    {"trust", "trust [SERVER] [--diff] [--all | NAME...] [--json]",
     "show what trust holds back, and approve it",
     "The first time a server is seen (or its command, args, env, URL or headers change),\n"
     "its tools, prompts and resource templates are pinned. A definition that changes after,\n"
     "one pinned under another name, and a new item are held back from clients as the\n"
     "server's on_change says (default quarantine); a server with trust = \"ask\" is held\n"
     "back whole until approved. Without NAMEs or --all this lists what is held back;\n"
     "with them it shows the word diff of what it approves and approves it: it is pinned as\n"
     "offered now and shown to clients at once.\n",
     control_timeout, run_trust,
     [](CLI::App& c, command_args& a) {
       c.add_option("SERVER", a.target, "the server's name (listing: optional)");
       c.add_option("NAME", a.names, "the server's own names of the items to approve");
       c.add_flag("--all", a.all, "approve everything the server has held back, and trust it");
       c.add_flag("--diff", a.diff, "show the word diff of each held item");
       c.add_flag("--json", a.json, "print the daemon's answer as JSON");
     }},
    {"dashboard", "dashboard [--no-browser] [--json]", "open the dashboard in the browser",
     "Prints a one-time login link to the page mcpmuxd serves on its HTTP endpoint (without\n"
     "[daemon] http, on a loopback port of its own, the page alone) and opens it with\n"
     "$BROWSER (else xdg-open when there is a display).\n"
     "The link works once, within 2 minutes; it leaves the browser a session cookie.\n",
     control_timeout, run_dashboard,
     [](CLI::App& c, command_args& a) {
       c.add_flag("--no-browser", a.no_browser, "print the link only");
       c.add_flag("--json", a.json, "print the daemon's answer as JSON");
     }},
    {"secret", "secret set|list|rm [NAME]", "keep the secrets ${secret:NAME} in the config names",
     "set NAME   read the value from the terminal (not echoed) or from stdin, and keep it\n"
     "           in the secrets file (mode 0600; $MCPMUX_SECRETS_FILE, else\n"
     "           $XDG_CONFIG_HOME/mcpmux/secrets.json)\n"
     "list       the names of the secrets kept (never their values)\n"
     "rm NAME    forget a secret\n"
     "`mcpmux reload` (or saving the config) makes the daemon use a changed secret.\n",
     control_timeout, run_secret,
     [](CLI::App& c, command_args& a) {
       c.add_option("ACTION", a.action, "set, list or rm")
           ->required()
           ->check(CLI::IsMember({"set", "list", "rm"}));
       c.add_option("NAME", a.target, "the secret's name ([A-Za-z0-9_.-])");
     }},
    {"agents", "agents [--json]",
     "list the MCP clients configured here and whether they use mcpmux", "", control_timeout,
     run_agents,
     [](CLI::App& c, command_args& a) { c.add_flag("--json", a.json, "print the list as JSON"); }},
    {"adopt", "adopt AGENT|FILE [--dry-run] [--yes] [--config PATH] [--keep-plaintext]",
     "move a client's servers into mcpmux and point the client at mcpmux",
     "The client's servers are added to mcpmux's config (a server mcpmux already runs, the\n"
     "same definition, is not added twice; one that cannot be carried over stays in the\n"
     "client's file); its server list becomes one entry running `mcpmux connect --spawn`\n"
     "(this program's absolute path). Claude Code's per-project (local scope) lists in\n"
     "~/.claude.json each get one with --profile, a profile of that project's servers.\n"
     "Tokens in env and headers (*TOKEN, *_KEY, *SECRET, *PASSWORD*, Authorization) move\n"
     "to the secret store as ${secret:SERVER_KEY}; the backup keeps the plain text until\n"
     "unadopt.\n"
     "Every other byte of its file is kept, comments included; a backup FILE.mcpmux-backup-TIME\n"
     "is written beside it, and a file that changed meanwhile is not written. The diff is shown\n"
     "first; without --yes you are asked. The daemon reloads and the servers are up before the\n"
     "command returns. AGENT is an id from `mcpmux agents`.\n",
     control_timeout, run_adopt,
     [](CLI::App& c, command_args& a) {
       add_agent_options(c, a, "mcpmux's config file (default as the daemon's)");
       c.add_flag("--keep-plaintext", a.keep_plaintext,
                  "copy tokens into the config as they are, instead of into\n"
                  "the secret store (see `mcpmux secret`)");
     }},
    {"unadopt", "unadopt AGENT|FILE [--dry-run] [--yes] [--remove]",
     "give a client its own servers back",
     "Restores the client's server lists from the backup adopt made (then removes the\n"
     "backup), else rebuilds them from the servers in mcpmux's config. mcpmux keeps its\n"
     "copies unless --remove.\n",
     control_timeout, run_unadopt,
     [](CLI::App& c, command_args& a) {
       add_agent_options(c, a, "mcpmux's config file, when adopt left no record");
       c.add_flag("--remove", a.remove,
                  "also remove the adopted servers (and the projects' profiles)\n"
                  "from mcpmux's config (and reload)");
     }},
    {"add",
     "add NAME [--env K=V]... [--cwd DIR] -- COMMAND [ARGS...] | add NAME --url URL "
     "[--header K=V]...",
     "add a server to the config and start it",
     "Appends a [servers.NAME] table to mcpmux's config (every other byte kept), checked as\n"
     "`mcpmuxd --check-config` checks it before the file is replaced; a name in use is refused.\n"
     "Credentials in --env and --header (*TOKEN, *_KEY, *SECRET, *PASSWORD*, Authorization)\n"
     "go to the secret store as ${secret:NAME_KEY}. A running daemon reloads; the command\n"
     "returns when the server is ready, or with its error (exit 1) when its start failed.\n"
     "A URL server that asks for OAuth waits for `mcpmux auth login NAME`.\n",
     control_timeout, run_add,
     [](CLI::App& c, command_args& a) {
       c.add_option("NAME", a.target, "the server's name ([A-Za-z0-9_-])")->required();
       c.add_option("COMMAND", a.command, "the program and its arguments, after --");
       c.add_option("--url", a.url, "a Streamable HTTP server's URL")->type_name("URL");
       c.add_option("--env", a.env, "an environment variable of the command")
           ->type_name("K=V")
           ->allow_extra_args(false);  // one K=V each: a `--` after it is the command's
       c.add_option("--cwd", a.cwd, "the command's working directory")->type_name("DIR");
       c.add_option("--header", a.headers, "a request header for the URL")
           ->type_name("K=V")
           ->allow_extra_args(false);
       add_config_option(c, a);
     }},
    {"remove", "remove NAME", "remove a server from the config and stop it",
     "Takes its [servers.NAME] table out of mcpmux's config, every other byte kept.\n",
     control_timeout, run_remove, declare_server_edit},
    {"enable", "enable NAME", "start a server the config has disabled",
     "Removes `enabled = false` from its table (or sets it true); a running daemon reloads and\n"
     "the command returns when the server is ready, or with its error.\n",
     control_timeout, run_enable, declare_server_edit},
    {"disable", "disable NAME", "stop a server and keep it in the config",
     "Sets `enabled = false` in its table: it is not started, and its tools are not listed.\n",
     control_timeout, run_disable, declare_server_edit},
    {"doctor", "doctor [--json]", "check the setup and say how to fix what is wrong",
     "Checks the config, the socket directory, the daemon (reachable, one per user, the same\n"
     "version), each stdio server's command on its PATH (node 18 or later for npx and node),\n"
     "the servers' states (crash loop, held back by trust, waiting for a login), the Secret\n"
     "Service when the config uses ${secret:...}, the HTTP token file, and the systemd user\n"
     "units. Each problem is printed with the command that fixes it. Exit status 1 when a\n"
     "problem was found (warnings alone: 0).\n",
     control_timeout, run_doctor,
     [](CLI::App& c, command_args& a) {
       c.add_flag("--json", a.json,
                  "print the checks as a JSON array of {check, status, detail, fix}");
     }},
};

constexpr const char* global_footer =
    "Exit status: 0 success, 1 the daemon or the tool reported an error (or timed out),\n"
    "2 bad usage, 3 no daemon answers.";

}  // namespace

std::variant<int, invocation> parse_args(int argc, char** argv) {
  CLI::App app{
      "Client of mcpmuxd, the daemon that shares one set of MCP servers among many "
      "clients.",
      "mcpmux"};
  use_conventions(app, "mcpmux [--socket PATH] [--timeout MS] COMMAND [ARGS...]");
  app.require_subcommand(1);  // also: after the command, other command names are arguments
  app.set_version_flag("-V,--version", "mcpmux " MCPMUX_VERSION, "show the version and exit");
  app.footer([] {
    return "Global options may come before or after the command. `mcpmux COMMAND --help` for\n"
           "one command.\nThe socket here: " +
           default_socket_location().path + "\n\n" + global_footer;
  });

  std::optional<std::string> socket;
  std::int64_t timeout_ms = 0;
  app.add_option("--socket", socket,
                 "the daemon's socket; default $MCPMUX_SOCKET, else\n"
                 "daemon.socket of the config ($MCPMUX_CONFIG or\n"
                 "~/.config/mcpmux/config.toml), else\n"
                 "$XDG_RUNTIME_DIR/mcpmux/mcpmux.sock (unset: the\n"
                 "user's own /run/user/UID), else\n"
                 "/tmp/mcpmux-UID/mcpmux.sock; without --socket and\n"
                 "$MCPMUX_SOCKET, the socket the running daemon\n"
                 "recorded in ~/.local/state/mcpmux/daemon-socket\n"
                 "comes first")
      ->type_name("PATH")
      ->check(non_empty("a path"));
  add_count(app, "--timeout", timeout_ms, 1, INT32_MAX, "milliseconds > 0",
            fmt::format("how long to wait for each answer (default {}\nfor call, {} otherwise)",
                        call_timeout.count(), control_timeout.count()))
      ->type_name("MS");

  invocation inv;
  std::vector<std::pair<const CLI::App*, const command_spec*>> subs;
  for (const command_spec& spec : commands) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.summary);
    use_conventions(*sub, fmt::format("mcpmux {}", spec.synopsis), spec.details);
    sub->group("Commands")->fallthrough();  // the global options also after the command
    sub->footer(fmt::format(
        "Global options: --socket PATH, --timeout MS (default {} ms). See `mcpmux --help`.",
        spec.default_timeout.count()));
    spec.declare(*sub, inv.args);
    subs.emplace_back(sub, &spec);
  }
  CLI::App* import = app.add_subcommand(
      "import", "convert mcpServers JSON (Claude, Cursor, VS Code, ...) to mcpmux TOML");
  add_import_options(*import, inv.import);
  import->group("Commands");

  // `mcpmux help [COMMAND]`, not listed: the same as `mcpmux [COMMAND] --help`.
  CLI::App* help = app.add_subcommand("help", "show the help of mcpmux or of one command");
  use_conventions(*help, "mcpmux help [COMMAND]");
  help->group("")->fallthrough();
  std::string topic;
  help->add_option("COMMAND", topic, "a command")
      ->check(CLI::Validator(
          [&app](std::string& name) -> std::string {
            for (const CLI::App* c : app.get_subcommands({}))
              if (c->get_name() == name) return "";
            return "unknown command '" + name + "'";
          },
          ""));

  if (auto done = parse_command_line(app, std::vector<std::string>(argv + 1, argv + argc)))
    return *done;

  const CLI::App& chosen = selected(app);
  if (&chosen == help) {
    // app.help() would show the selected subcommand's: `help` itself.
    const std::string text =
        topic.empty() ? app.get_formatter()->make_help(&app, "mcpmux", CLI::AppFormatMode::Normal)
                      : app.get_subcommand(topic)->help();
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  for (const auto& [sub, spec] : subs) {
    if (sub != &chosen) continue;
    inv.run = spec->run;
    if (socket) {
      inv.ctx.socket_path = *socket;
    } else {
      const auto where = default_socket_location();
      inv.ctx.socket_path = where.path;
      inv.ctx.default_socket = where.is_default();
    }
    inv.ctx.timeout = timeout_ms > 0 ? milliseconds(timeout_ms) : spec->default_timeout;
  }
  return inv;
}

}  // namespace mcpmux::cli
