// mcpmuxd: command-line entry point of the daemon.
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "daemon/daemon.hpp"

namespace {

constexpr const char* usage = R"(usage: mcpmuxd [options]

Serves the MCP servers of the configuration to local clients over one Unix socket.

options:
  --config PATH           configuration file (default: $MCPMUX_CONFIG, else
                          $XDG_CONFIG_HOME/mcpmux/config.toml, else the embedded default)
  --socket PATH           socket to listen on (default: $MCPMUX_SOCKET, else daemon.socket,
                          else $XDG_RUNTIME_DIR/mcpmux/mcpmux.sock)
  --log-level LEVEL       trace, debug, info, warn, error or off (default: the config's)
  --check-config          validate the configuration and exit (0 = valid)
  --print-default-config  print the embedded default configuration and exit
  --version               print the version and exit
  -h, --help              show this help

signals: SIGTERM/SIGINT stop gracefully; SIGHUP reloads the configuration (as do
`mcpmux reload` and saving the file).
)";

}  // namespace

int main(int argc, char** argv) {
  mcpmux::daemon_options opt;
  bool check = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mcpmuxd: %s needs a value\n", flag);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--config")
      opt.config_path = value("--config");
    else if (a == "--socket")
      opt.socket_path = value("--socket");
    else if (a == "--log-level")
      opt.log_level = value("--log-level");
    else if (a == "--check-config")
      check = true;
    else if (a == "--print-default-config") {
      std::fwrite(mcpmux::default_config_text().data(), 1, mcpmux::default_config_text().size(),
                  stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("mcpmuxd %s\n", MCPMUX_VERSION);
      return 0;
    } else if (a == "-h" || a == "--help") {
      std::fputs(usage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "mcpmuxd: unknown option %s\n%s", argv[i], usage);
      return 2;
    }
  }
  return check ? mcpmux::check_config(opt) : mcpmux::run_daemon(opt);
}
