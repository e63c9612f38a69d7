// mcpmux: the command-line client of mcpmuxd (stdio bridge, status, tools, call, logs, control)
// and the importer of other clients' server lists. Parses argv, runs one command, exits with
// its status (0 ok, 1 the daemon or tool reported an error, 2 bad usage, 3 no daemon).
#include <cstdio>
#include <exception>

#include "config/secret_service.hpp"
#include "daemon/cli/args.hpp"

int main(int argc, char** argv) {
  using namespace mcpmux::cli;
  try {
    mcpmux::derive_session_bus();  // `secret`, `adopt`: an agent's bare environment has no bus
    auto parsed = parse_args(argc, argv);
    if (const int* done = std::get_if<int>(&parsed)) return *done;
    const invocation& inv = std::get<invocation>(parsed);
    if (inv.run == nullptr) return mcpmux::run_import(inv.import);
    auto status = inv.run(inv.ctx, inv.args);
    if (!status) return report(status.error());
    if (std::fflush(stdout) != 0 && *status == exit_status::ok) return 1;
    return static_cast<int>(*status);
  } catch (const std::exception& e) {
    print_visible(stderr, "mcpmux: internal error: {}\n", e.what());
    return 1;
  }
}
