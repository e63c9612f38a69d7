// `mcpmux import`: other MCP clients' server lists as mcpmux TOML, optionally merged.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace mcpmux {

/// What `mcpmux import` was asked to do.
struct import_options {
  std::vector<std::string> files;     ///< "-" is standard input
  bool write = false;                 ///< merge into the config instead of printing
  std::optional<std::string> config;  ///< the config file for --write (default: the usual one)
  bool keep_plaintext = false;        ///< --write: tokens into the config, not the secret store
};

/// Declares import's arguments, options and help on `app` (the `import` subcommand of mcpmux, or
/// an app of its own), parsed into `o`.
void add_import_options(CLI::App& app, import_options& o);

/// Runs the import. Returns the exit status: 0 ok, 1 an input could not be read or a server was
/// skipped because the config already has it.
int run_import(const import_options& o);

/// Parses `argv`, the arguments after the word "import" (argv[argc] need not be null), then runs
/// the import; 2 on bad usage. The same parser as `mcpmux import`, without the rest of mcpmux.
int run_import(int argc, char** argv);

}  // namespace mcpmux
