// `mcpmux import FILE... [--write] [--config PATH]`: client server lists to mcpmux TOML.
#include "daemon/mcpmux_import.hpp"

#include <fmt/format.h>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/import.hpp"
#include "config/secrets.hpp"
#include "daemon/cli/common.hpp"
#include "daemon/cli/usage.hpp"

namespace mcpmux {
namespace {

constexpr std::size_t max_stdin_bytes = 64u << 20;

constexpr const char* details =
    "Understands the MCP server lists of:\n"
    "  Claude Desktop   claude_desktop_config.json          (mcpServers)\n"
    "  Claude Code      .mcp.json, ~/.claude.json           (mcpServers, projects.*.mcpServers)\n"
    "  Cursor           ~/.cursor/mcp.json, .cursor/mcp.json (mcpServers)\n"
    "  Windsurf         ~/.codeium/windsurf/mcp_config.json (mcpServers, serverUrl)\n"
    "  VS Code          .vscode/mcp.json, settings.json     (servers, mcp.servers)\n"
    "\n"
    "Without --write the [servers.NAME] tables are printed on standard output. Whatever cannot\n"
    "be carried over (envFile, inputs, autoApprove, unknown keys, ...) is listed on standard\n"
    "error. Names are reduced to [A-Za-z0-9_-]; a name used twice gets a -2, -3 ... suffix.\n";

constexpr const char* footer =
    "To follow such a file instead of copying it, list it in the config:\n"
    "  [daemon]\n"
    "  include = [\"~/.cursor/mcp.json\"]\n"
    "\n"
    "Exit status: 0 success, 1 an input could not be read or imported, the config is invalid,\n"
    "or a server was skipped because the config already has it; 2 bad usage.";

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

int run(const import_options& o) {
  // Every input is read before anything is printed or written: all or nothing.
  std::vector<server_config> servers;
  std::vector<std::string> notes;
  bool failed = false;
  for (const std::string& file : o.files) {
    const std::string name = file == "-" ? "<stdin>" : file;
    import_outcome im = import_one(file);
    if (!im.value) {
      cli::print_visible(stderr, "mcpmux import: {}: {}\n", name, im.error);
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
  for (const std::string& n : notes) cli::print_visible(stderr, "mcpmux import: {}\n", n);
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
  auto read = read_text_file_if_exists(path, 4u << 20);
  if (!read) {
    cli::print_visible(stderr, "mcpmux import: {}: {}\n", path, read.error().message);
    return 1;
  }
  const bool missing = !*read;
  const std::string existing = read->value_or("");
  merge_outcome m = merge_into_config(
      existing, path, servers, comment, process_env,
      o.keep_plaintext ? credentials::keep_plaintext : credentials::to_secret_store);
  if (!m.errors.empty()) {
    for (const config_error& e : m.errors) cli::print_visible(stderr, "{}\n", e.to_string());
    cli::print_visible(
        stderr, "mcpmux import: {} would not be a valid configuration; nothing written\n", path);
    return 1;
  }
  for (const std::string& name : m.skipped)
    cli::print_visible(
        stderr, "mcpmux import: server \"{}\" already exists in {}; skipped (not overwritten)\n",
        name, path);
  if (m.added.empty()) {
    fmt::print(stderr, "mcpmux import: nothing to add to {}\n", path);
    return m.skipped.empty() ? 0 : 1;
  }
  // The secrets first: the config that names them does not load without them.
  if (!m.secrets.empty()) {
    std::vector<std::string> names;
    for (const moved_secret& s : m.secrets) names.push_back(s.name);
    const kept_secrets kept = keep_moved_secrets(m.secrets);
    if (!kept.unavailable.empty())
      cli::print_visible(stderr, "mcpmux import: {}\n", kept.unavailable);
    if (!kept.error.empty()) {
      fmt::print(stderr, "mcpmux import: {}; nothing written (--keep-plaintext copies them)\n",
                 kept.error);
      return 1;
    }
    cli::print_visible(stderr, "mcpmux import: moved to {} (named as ${{secret:NAME}} in {}): {}\n",
                       kept.where, path, join(names));
  }
  if (auto written = write_file_atomically(path, m.text); !written) {
    cli::print_visible(stderr, "mcpmux import: {}\n", written.error().message);
    return 1;
  }
  cli::print_visible(stderr, "mcpmux import: added {} server{} to {}{}: {}\n", m.added.size(),
                     m.added.size() == 1 ? "" : "s", path, missing ? " (new file)" : "",
                     join(m.added));
  return m.skipped.empty() ? 0 : 1;
}

}  // namespace

void add_import_options(CLI::App& app, import_options& o) {
  cli::use_conventions(app, "mcpmux import FILE... [--write [--keep-plaintext]] [--config PATH]",
                       details);
  app.footer(footer);
  app.add_option("FILE", o.files, "a client's configuration file; - for standard input")
      ->required();
  CLI::Option* write = app.add_flag("-w,--write", o.write,
                                    "append the servers to the config file instead of printing\n"
                                    "them; a server the file already defines is never\n"
                                    "overwritten: it is skipped and reported. The result is\n"
                                    "validated first and written atomically; a missing file\n"
                                    "(and directory) is created.");
  app.add_option("-c,--config", o.config,
                 "the config file for --write; default $MCPMUX_CONFIG, else\n"
                 "$XDG_CONFIG_HOME/mcpmux/config.toml\n"
                 "(~/.config/mcpmux/config.toml)")
      ->type_name("PATH")
      ->check(cli::non_empty("a path"))
      ->needs(write);
  app.add_flag("--keep-plaintext", o.keep_plaintext,
               "with --write: copy tokens (env *TOKEN, *_KEY, *SECRET,\n"
               "*PASSWORD*, Authorization headers) into the config as they\n"
               "are; by default they move to the secret store (the Secret\n"
               "Service, else the secrets file) as ${secret:SERVER_KEY}")
      ->needs(write);
}

int run_import(const import_options& o) {
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mcpmux import: internal error: {}\n", e.what());
    return 1;
  }
}

int run_import(int argc, char** argv) {
  CLI::App app{"", "mcpmux import"};
  import_options o;
  add_import_options(app, o);
  if (auto done = cli::parse_command_line(app, std::vector<std::string>(argv, argv + argc)))
    return *done;
  return run_import(o);
}

}  // namespace mcpmux
