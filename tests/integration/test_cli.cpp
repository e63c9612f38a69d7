// Integration tests of the command lines of mcpmux and mcpmuxd: usage errors (exit 2, a clear
// message on stderr, nothing on stdout), help and version (exit 0), and every accepted spelling
// of the options against a real daemon; what `import` shows of a client file's names.
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

/// The arguments as one line.
std::string words(const std::vector<std::string>& args) {
  std::string out;
  for (const std::string& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

std::string show(const run_result& r) {
  return "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") +
         "\n--- stdout:\n" + r.out + "\n--- stderr:\n" + r.err;
}

struct usage_case {
  std::vector<std::string> args;
  std::string message;  ///< expected on stderr
};

class cli : public daemon_test {
 protected:
  /// Each case exits 2 with its message and `hint` on stderr, and nothing on stdout.
  void expect_usage_errors(const std::string& program, const std::vector<usage_case>& cases,
                           const std::string& hint) {
    const std::string name = program.substr(program.rfind('/') + 1);
    for (const usage_case& c : cases) {
      run_result r = run(program, c.args);
      const std::string what = name + " " + words(c.args) + "\n" + show(r);
      EXPECT_EQ(r.exit_code, 2) << what;
      EXPECT_TRUE(contains(r.err, c.message)) << "expected: " << c.message << "\n" << what;
      EXPECT_TRUE(contains(r.err, hint)) << what;
      EXPECT_TRUE(r.out.empty()) << what;
    }
  }

  /// `program args...` with $MCPMUX_SOCKET naming a socket where nothing listens: a command
  /// line that wrongly parses ends with 3 (no daemon), not 2.
  run_result run(const std::string& program, const std::vector<std::string>& args) {
    std::vector<std::string> argv{program};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, {}, 10s, {{"MCPMUX_SOCKET", dir_.file("nobody.sock")}});
  }
};

TEST_F(cli, McpmuxUsageErrorsExit2WithAMessageOnStderr) {
  const std::vector<usage_case> cases = {
      {{}, "mcpmux: no command given"},
      {{"bogus"}, "mcpmux: unknown command 'bogus'"},
      {{"--bogus"}, "mcpmux: unknown option '--bogus'"},
      {{"status", "--bogus"}, "mcpmux: unknown option '--bogus'"},
      {{"status", "extra"}, "mcpmux: unexpected argument 'extra'"},
      {{"status", "--json=yes"}, "mcpmux: option '--json' takes no value"},
      {{"status", "--socket"}, "mcpmux: option '--socket' needs a value"},
      {{"--socket", "", "status"}, "--socket: needs a path"},
      {{"--socket=", "status"}, "--socket: needs a path"},
      {{"--timeout", "0", "status"}, "--timeout: wants milliseconds > 0, not '0'"},
      {{"status", "--timeout=ten"}, "--timeout: wants milliseconds > 0, not 'ten'"},
      {{"tools", "--server"}, "mcpmux: option '--server' needs a value"},
      {{"call"}, "TOOL is required"},
      {{"call", "t", "[1]"}, "JSON_ARGS must be a JSON object"},
      {{"logs"}, "SERVER is required"},
      {{"logs", "a", "-n"}, "needs a value"},
      {{"logs", "a", "-n", "0"}, "wants a positive number of lines, not '0'"},
      {{"logs", "a", "--lines=x"}, "wants a positive number of lines, not 'x'"},
      {{"restart", "a", "b"}, "mcpmux: unexpected argument 'b'"},
      {{"reload", "--json", "x"}, "mcpmux: unexpected argument 'x'"},
      {{"connect", "--spawn=1"}, "mcpmux: option '--spawn' takes no value"},
      {{"help", "bogus"}, "unknown command 'bogus'"},
      {{"import"}, "FILE is required"},
      {{"import", "x.json", "--config", "c.toml"}, "--config requires --write"},
      {{"import", "x.json", "--write", "--config"}, "option '--config' needs a value"},
      {{"import", "--config=", "--write", "x.json"}, "--config: needs a path"},
      {{"import", "--socket", "s", "x.json"}, "unknown option '--socket'"},
  };
  expect_usage_errors(mcpmux_path(), cases, "usage: mcpmux");
  // A usage error names the command's synopsis and its help.
  run_result r = run(mcpmux_path(), {"logs", "a", "--bogus"});
  EXPECT_TRUE(contains(r.err, "usage: mcpmux logs SERVER [-n N] [-f]\n")) << show(r);
  EXPECT_TRUE(contains(r.err, "Try 'mcpmux logs --help'.")) << show(r);
}

TEST_F(cli, McpmuxHelpAndVersionExit0OnStdout) {
  run_result help = run(mcpmux_path(), {"--help"});
  EXPECT_EQ(help.exit_code, 0) << show(help);
  EXPECT_TRUE(help.out.starts_with("Usage: mcpmux [--socket PATH] [--timeout MS] COMMAND"))
      << show(help);
  EXPECT_TRUE(help.err.empty()) << show(help);
  // The socket the CLI would use here is shown.
  EXPECT_TRUE(contains(help.out, dir_.file("nobody.sock"))) << show(help);

  for (const char* command :
       {"connect", "status", "tools", "call", "logs", "restart", "reload", "import"}) {
    EXPECT_TRUE(contains(help.out, "\n  " + std::string(command) + " ")) << command << show(help);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{command, "--help"}, {command, "-h"}, {"help", command}}) {
      run_result r = run(mcpmux_path(), args);
      EXPECT_EQ(r.exit_code, 0) << words(args) << "\n" << show(r);
      EXPECT_TRUE(r.out.starts_with("Usage: mcpmux " + std::string(command))) << show(r);
    }
  }
  EXPECT_EQ(run(mcpmux_path(), {"-h"}).out, help.out);
  EXPECT_EQ(run(mcpmux_path(), {"help"}).out, help.out);
  // --help wins over anything else on the line.
  EXPECT_EQ(run(mcpmux_path(), {"status", "--json", "--help"}).exit_code, 0);

  for (const char* flag : {"-V", "--version"}) {
    run_result v = run(mcpmux_path(), {flag});
    EXPECT_EQ(v.exit_code, 0) << show(v);
    EXPECT_TRUE(v.out.starts_with("mcpmux ")) << show(v);
  }
}

TEST_F(cli, ImportNotesShowTheEscapesOfAServerName) {
  // A project's .mcp.json names a server with SGR 8 (invisible), BEL and U+202E.
  const std::string file = dir_.write(
      "evil.json", R"({"mcpServers":{"a\u001b[8mb\u0007\u202e":{"command":"x\u001b[2K"}}})");
  run_result r = run(mcpmux_path(), {"import", file});
  EXPECT_EQ(r.exit_code, 0) << show(r);
  EXPECT_TRUE(contains(r.err, "server \"a\\x1b[8mb\\x07\\u202e\": renamed to")) << show(r);
  // The TOML on stdout is exact, its strings in TOML's own escapes.
  EXPECT_TRUE(contains(r.out, "command = \"x\\u001B[2K\"")) << show(r);
  for (std::string_view raw : {"\x1b", "\x07", "\xE2\x80\xAE"}) {
    EXPECT_FALSE(contains(r.err, raw)) << show(r);
    EXPECT_FALSE(contains(r.out, raw)) << show(r);
  }
}

TEST_F(cli, McpmuxdUsageErrorsExit2AndHelpExits0) {
  const std::vector<usage_case> cases = {
      {{"--bogus"}, "mcpmuxd: unknown option '--bogus'"},
      {{"stray"}, "mcpmuxd: unexpected argument 'stray'"},
      {{"--config"}, "mcpmuxd: option '--config' needs a value"},
      {{"--socket"}, "mcpmuxd: option '--socket' needs a value"},
      {{"--log-level"}, "mcpmuxd: option '--log-level' needs a value"},
      {{"--check-config=yes"}, "mcpmuxd: option '--check-config' takes no value"},
  };
  expect_usage_errors(mcpmuxd_path(), cases, "Try 'mcpmuxd --help'.");

  for (const char* flag : {"-h", "--help"}) {
    run_result help = run(mcpmuxd_path(), {flag});
    EXPECT_EQ(help.exit_code, 0) << show(help);
    EXPECT_TRUE(help.out.starts_with("Usage: mcpmuxd [options]")) << show(help);
    for (const char* option : {"--config PATH", "--socket PATH", "--log-level LEVEL",
                               "--check-config", "--print-default-config", "--version"})
      EXPECT_TRUE(contains(help.out, option)) << option << show(help);
  }
  run_result version = run(mcpmuxd_path(), {"--version"});
  EXPECT_EQ(version.exit_code, 0) << show(version);
  EXPECT_TRUE(version.out.starts_with("mcpmuxd ")) << show(version);

  run_result def = run(mcpmuxd_path(), {"--print-default-config"});
  EXPECT_EQ(def.exit_code, 0) << show(def);
  EXPECT_TRUE(contains(def.out, "[daemon]")) << show(def);

  // Both spellings of a value, and the options in any order.
  const std::string config = dir_.write("check.toml", fake_server_table("alpha", {}));
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--check-config", "--config", config},
        {"--config=" + config, "--check-config"}}) {
    run_result r = run(mcpmuxd_path(), args);
    EXPECT_EQ(r.exit_code, 0) << words(args) << "\n" << show(r);
  }
}

TEST_F(cli, McpmuxAcceptsEveryOptionSpelling) {
  // A server named like a command: after the command, command names are arguments.
  start(fake_server_table("alpha", {}) + fake_server_table("status", {}));
  ASSERT_TRUE(daemon_->started());
  const std::string sock = daemon_->socket();
  const std::vector<std::vector<std::string>> lines = {
      {"--socket=" + sock, "status", "--json"},
      {"status", "--socket", sock, "--timeout", "5000"},
      {"status", "--json", "--socket=" + sock, "--timeout=5000"},
      {"--timeout", "5000", "--socket", sock, "tools", "--server=alpha"},
      {"--socket", sock, "tools", "--json", "--server", "alpha", "--server", "status"},
      {"--socket", sock, "logs", "alpha", "-n3"},
      {"--socket", sock, "logs", "alpha", "-n", "3"},
      {"--socket", sock, "logs", "--lines=3", "alpha"},
      {"--socket", sock, "logs", "status", "--lines", "3"},
      {"--socket", sock, "call", "--", "alpha__echo", R"({"text":"-x"})"},
      {"--socket", sock, "call", "status__echo", R"({"text":"y"})", "--json"},
      {"--socket", sock, "reload", "--json"},
      {"--socket", sock, "restart", "status"},
  };
  for (const auto& args : lines) {
    std::vector<std::string> argv{mcpmux_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    run_result r = run_process(argv);
    EXPECT_EQ(r.exit_code, 0) << "mcpmux " << words(args) << "\n" << show(r);
  }
  // The last --server counts.
  run_result last = run_process({mcpmux_path(), "--socket", sock, "tools", "--json", "--server",
                                 "alpha", "--server", "status"});
  EXPECT_TRUE(contains(last.out, "status__echo")) << show(last);
  EXPECT_FALSE(contains(last.out, "alpha__echo")) << show(last);
  // An argument after -- that looks like an option.
  run_result dash = run_process(
      {mcpmux_path(), "--socket", sock, "call", "alpha__echo", "--", R"({"text":"--json"})"});
  EXPECT_EQ(dash.exit_code, 0) << show(dash);
  EXPECT_EQ(dash.out, "--json\n");
  // $MCPMUX_SOCKET when there is no --socket.
  run_result from_env = run_process({mcpmux_path(), "status", "--json"}, {}, 10s,
                                    {{"MCPMUX_SOCKET", sock}, {"MCPMUX_CONFIG", std::nullopt}});
  EXPECT_EQ(from_env.exit_code, 0) << show(from_env);
}

}  // namespace
}  // namespace mcpmux::test
