// `mcpmux import`: other MCP clients' server lists as mcpmux TOML, optionally merged.
#pragma once

namespace mcpmux {

/// Runs `mcpmux import`; `argv` holds the arguments after the word "import" (argv[argc] need not
/// be null). Returns the exit status: 0 ok, 1 an input could not be read or a server was skipped
/// because the config already has it, 2 bad usage.
int run_import(int argc, char** argv);

}  // namespace mcpmux
