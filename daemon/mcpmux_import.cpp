// `mcpmux import FILE... [--write] [--config PATH]`: client server lists to mcpmux TOML.
#include "daemon/mcpmux_import.hpp"

#include <fmt/format.h>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/import.hpp"

namespace mcpmux {
namespace {

constexpr std::size_t max_stdin_bytes = 64u << 20;

constexpr std::string_view help_text =
    "Usage: mcpmux import FILE... [--write] [--config PATH]\n"
    "\n"
    "Converts the MCP server lists of other clients to mcpmux configuration:\n"
    "  Claude Desktop   claude_desktop_config.json          (mcpServers)\n"
    "  Claude Code      .mcp.json, ~/.claude.json           (mcpServers, projects.*.mcpServers)\n"
    "  Cursor           ~/.cursor/mcp.json, .cursor/mcp.json (mcpServers)\n"
    "  Windsurf         ~/.codeium/windsurf/mcp_config.json (mcpServers, serverUrl)\n"
    "  VS Code          .vscode/mcp.json, settings.json     (servers, mcp.servers)\n"
    "FILE may be - for standard input.\n"
    "\n"
    "Without --write the [servers.NAME] tables are printed on standard output. Whatever cannot\n"
    "be carried over (envFile, inputs, autoApprove, unknown keys, ...) is listed on standard\n"
    "error. Names are reduced to [A-Za-z0-9_-]; a name used twice gets a -2, -3 ... suffix.\n"
    "\n"
    "Options:\n"
    "  -w, --write        append the servers to the config file instead of printing them;\n"
    "                     a server the file already defines is never overwritten: it is\n"
    "                     skipped and reported. The result is validated first and written\n"
    "                     atomically; a missing file (and directory) is created.\n"
    "  -c, --config PATH  the config file for --write; default $MCPMUX_CONFIG, else\n"
    "                     $XDG_CONFIG_HOME/mcpmux/config.toml (~/.config/mcpmux/config.toml)\n"
    "  -h, --help         show this help\n"
    "\n"
    "To follow such a file instead of copying it, list it in the config:\n"
    "  [daemon]\n"
    "  include = [\"~/.cursor/mcp.json\"]\n"
    "\n"
    "Exit status: 0 success, 1 an input could not be read or imported, the config is invalid,\n"
    "or a server was skipped because the config already has it; 2 bad usage.\n";

int usage_error(const std::string& message) {
  fmt::print(stderr,
             "mcpmux import: {}\nusage: mcpmux import FILE... [--write] [--config PATH]\n"
             "Try 'mcpmux import --help'.\n",
             message);
  return 2;
}

struct options {
  std::vector<std::string> files;
  bool write = false;
  std::optional<std::string> config;
  bool help = false;
};

// Returns the exit status of a usage error, or nothing when the arguments are fine.
std::optional<int> parse_args(int argc, char** argv, options& o) {
  bool only_files = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (only_files || arg == "-" || !arg.starts_with("-")) {
      o.files.push_back(arg);
    } else if (arg == "--") {
      only_files = true;
    } else if (arg == "-h" || arg == "--help") {
      o.help = true;
    } else if (arg == "-w" || arg == "--write") {
      o.write = true;
    } else if (arg == "-c" || arg == "--config") {
      if (i + 1 >= argc) return usage_error(fmt::format("option '{}' needs a value", arg));
      o.config = argv[++i];
    } else if (arg.starts_with("--config=")) {
      o.config = arg.substr(9);
    } else {
      return usage_error(fmt::format("unknown option '{}'", arg));
    }
    if (o.config && o.config->empty()) return usage_error("--config needs a non-empty path");
  }
  if (o.help) return std::nullopt;
  if (o.files.empty()) return usage_error("no FILE given");
  if (o.config && !o.write) return usage_error("--config only applies with --write");
  return std::nullopt;
}

import_outcome import_one(const std::string& file) {
  if (file != "-") return import_mcp_file(file);
  std::string text;
  char buf[16384];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, stdin)) {
    text.append(buf, n);
    if (text.size() > max_stdin_bytes) {
      import_outcome out;
      out.error = fmt::format("standard input is larger than {} bytes", max_stdin_bytes);
      return out;
    }
  }
  return import_mcp_json(text);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

int run(const options& o) {
  // Every input is read before anything is printed or written: all or nothing.
  std::vector<server_config> servers;
  std::vector<std::string> notes;
  bool failed = false;
  for (const std::string& file : o.files) {
    const std::string name = file == "-" ? "<stdin>" : file;
    import_outcome im = import_one(file);
    if (!im.value) {
      fmt::print(stderr, "mcpmux import: {}: {}\n", name, im.error);
      failed = true;
      continue;
    }
    for (const std::string& n : im.value->notes) notes.push_back(fmt::format("{}: {}", name, n));
    if (im.value->servers.empty()) notes.push_back(fmt::format("{}: no servers", name));
    for (server_config& s : im.value->servers) {
      std::vector<std::string> dedup;
      add_unique_server(servers, std::move(s), dedup);
      for (const std::string& n : dedup) notes.push_back(fmt::format("{}: {}", name, n));
    }
  }
  if (failed) {
    fmt::print(stderr, "mcpmux import: nothing {}\n", o.write ? "written" : "printed");
    return 1;
  }
  for (const std::string& n : notes) fmt::print(stderr, "mcpmux import: {}\n", n);
  std::vector<std::string> sources;
  for (const std::string& f : o.files) sources.push_back(f == "-" ? "<stdin>" : f);
  std::string comment = fmt::format("Imported from {} by `mcpmux import`.", join(sources));
  // A file name with a newline must not end the comment line.
  for (char& c : comment) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  }

  if (!o.write) {
    fmt::print("# {}\n", comment);
    if (!servers.empty()) fmt::print("\n{}", to_toml(servers));
    return std::fflush(stdout) == 0 ? 0 : 1;
  }

  const std::string path = resolve_config_path(o.config.value_or(""));
  std::string error;
  bool missing = false;
  std::string existing;
  if (auto text = read_text_file(path, 4u << 20, error, &missing)) {
    existing = std::move(*text);
  } else if (!missing) {
    fmt::print(stderr, "mcpmux import: {}: {}\n", path, error);
    return 1;
  }
  merge_outcome m = merge_into_config(existing, path, servers, comment);
  if (!m.errors.empty()) {
    for (const config_error& e : m.errors) fmt::print(stderr, "{}\n", e.to_string());
    fmt::print(stderr, "mcpmux import: {} would not be a valid configuration; nothing written\n",
               path);
    return 1;
  }
  for (const std::string& name : m.skipped)
    fmt::print(stderr,
               "mcpmux import: server \"{}\" already exists in {}; skipped (not overwritten)\n",
               name, path);
  if (m.added.empty()) {
    fmt::print(stderr, "mcpmux import: nothing to add to {}\n", path);
    return m.skipped.empty() ? 0 : 1;
  }
  if (std::string err = write_file_atomically(path, m.text); !err.empty()) {
    fmt::print(stderr, "mcpmux import: {}\n", err);
    return 1;
  }
  fmt::print(stderr, "mcpmux import: added {} server{} to {}{}: {}\n", m.added.size(),
             m.added.size() == 1 ? "" : "s", path, missing ? " (new file)" : "", join(m.added));
  return m.skipped.empty() ? 0 : 1;
}

}  // namespace

int run_import(int argc, char** argv) {
  try {
    options o;
    if (auto status = parse_args(argc, argv, o)) return *status;
    if (o.help) {
      std::fwrite(help_text.data(), 1, help_text.size(), stdout);
      return 0;
    }
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mcpmux import: internal error: {}\n", e.what());
    return 1;
  }
}

}  // namespace mcpmux
