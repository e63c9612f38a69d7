// mcpmux's command line on CLI11: the global options, every subcommand with its options and
// help, and which function runs it.
#pragma once

#include <optional>
#include <variant>

#include "daemon/cli/commands.hpp"
#include "daemon/mcpmux_import.hpp"

namespace mcpmux::cli {

/// What a valid command line asks for: a daemon command, or an import.
struct invocation {
  command_fn run = nullptr;  ///< null for `import`
  context ctx;               ///< for `run`: the socket (resolved) and the answer timeout
  command_args args;         ///< for `run`
  import_options import;     ///< for `import`
};

/// Parses argv. The invocation, or the exit status the program ends with: 0 after help or the
/// version was printed, 2 after a usage error was reported on stderr.
std::variant<int, invocation> parse_args(int argc, char** argv);

}  // namespace mcpmux::cli
