// mcpmuxd: command-line entry point of the daemon.
#include <cstdio>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "daemon/cli/usage.hpp"
#include "daemon/daemon.hpp"

int main(int argc, char** argv) {
  CLI::App app{"Serves the MCP servers of the configuration to local clients over one Unix socket.",
               "mcpmuxd"};
  mcpmux::cli::use_conventions(app, "mcpmuxd [options]");
  app.footer(
      "Signals: SIGTERM/SIGINT stop gracefully; SIGHUP reloads the configuration (as do\n"
      "`mcpmux reload` and saving the file).");
  app.set_version_flag("--version", "mcpmuxd " MCPMUX_VERSION, "print the version and exit");

  mcpmux::daemon_options opt;
  bool check = false;
  bool print_default = false;
  app.add_option("--config", opt.config_path,
                 "configuration file (default: $MCPMUX_CONFIG, else\n"
                 "$XDG_CONFIG_HOME/mcpmux/config.toml, else the\n"
                 "embedded default)")
      ->type_name("PATH");
  app.add_option("--socket", opt.socket_path,
                 "socket to listen on (default: $MCPMUX_SOCKET, else\n"
                 "daemon.socket, else $XDG_RUNTIME_DIR/mcpmux/mcpmux.sock,\n"
                 "else /run/user/UID/mcpmux/mcpmux.sock when that directory\n"
                 "is yours, else /tmp/mcpmux-UID/mcpmux.sock)")
      ->type_name("PATH");
  app.add_option("--log-level", opt.log_level,
                 "trace, debug, info, warn, error or off (default: the\nconfig's)")
      ->type_name("LEVEL");
  app.add_option("--ready-fd", opt.ready_fd,
                 "a pipe to write one byte to, then close, once the\nsocket listens (mcpmux "
                 "connect --spawn waits on it)")
      ->type_name("N");
  app.add_flag("--check-config", check, "validate the configuration and exit (0 = valid)");
  app.add_flag("--print-default-config", print_default,
               "print the embedded default configuration and exit");

  if (auto done =
          mcpmux::cli::parse_command_line(app, std::vector<std::string>(argv + 1, argv + argc)))
    return *done;
  if (print_default) {
    const auto text = mcpmux::default_config_text();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  return check ? mcpmux::check_config(opt) : mcpmux::run_daemon(opt);
}
