// Unit tests of config/import: client formats, names, TOML printer, `mcpmux import`, include.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "config/import.hpp"
#include "config/secrets.hpp"
#include "daemon/mcpmux_import.hpp"
#include "tests/unit/env_guard.hpp"

#ifndef MCPMUX_SOURCE_DIR
#error "MCPMUX_SOURCE_DIR must name the source tree (set in tests/meson.build)"
#endif

namespace mcpmux {

// Readable gtest failure output: the server as TOML.
[[maybe_unused]] static void PrintTo(const server_config& s, std::ostream* os) {
  *os << "\n" << to_toml(s, toml_strings::literal) << "(line " << s.line << ")";
}

namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using namespace std::chrono_literals;

std::map<std::string, std::string, std::less<>> g_env;

std::optional<std::string> fake_env(std::string_view name) {
  auto it = g_env.find(name);
  if (it == g_env.end()) return std::nullopt;
  return it->second;
}

std::string fixture(std::string_view name) {
  return std::string(MCPMUX_SOURCE_DIR) + "/tests/fixtures/import/" + std::string(name);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mcpmux-import-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::filesystem::create_directories(std::filesystem::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

server_config stdio(std::string name, std::string command, std::vector<std::string> args,
                    std::map<std::string, std::string> env = {}) {
  server_config s;
  s.name = std::move(name);
  s.command = std::move(command);
  s.args = std::move(args);
  s.env = std::move(env);
  return s;
}

server_config remote(std::string name, server_type type, std::string url,
                     std::map<std::string, std::string> headers = {}) {
  server_config s;
  s.name = std::move(name);
  s.type = type;
  s.url = std::move(url);
  s.headers = std::move(headers);
  return s;
}

import_result imported(std::string_view file) {
  import_outcome r = import_mcp_file(fixture(file));
  EXPECT_TRUE(r.value.has_value()) << r.error;
  return r.value.value_or(import_result{});
}

import_result imported_json(std::string_view text) {
  import_outcome r = import_mcp_json(text);
  EXPECT_TRUE(r.value.has_value()) << r.error;
  return r.value.value_or(import_result{});
}

// The printed servers must be a valid config (with every variable set).
void expect_valid_toml(const import_result& r) {
  config_result p = parse_config(to_toml(r.servers), "imported.toml", fake_env);
  EXPECT_THAT(p.errors, IsEmpty()) << (p.errors.empty() ? "" : p.errors.front().to_string()) << "\n"
                                   << to_toml(r.servers);
  if (p.value) {
    EXPECT_EQ(p.value->servers.size(), r.servers.size());
  }
}

class ImportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_env = {{"HOME", "/home/me"},
             {"API_KEY", "k"},
             {"GITHUB_TOKEN", "t"},
             {"PW_TOKEN", "p"},
             {"LINEAR_TOKEN", "l"}};
  }
  void TearDown() override { g_env.clear(); }
};

// ---------------------------------------------------------------------------------------------
// Formats

class ImportFormats : public ImportTest {};

TEST_F(ImportFormats, ClaudeDesktop) {
  import_result r = imported("claude_desktop.json");
  EXPECT_EQ(r.format, "mcpServers");
  server_config fetch = stdio("fetch", "uvx", {"mcp-server-fetch"});
  fetch.enabled = false;
  EXPECT_THAT(
      r.servers,
      ElementsAre(stdio("filesystem", "npx",
                        {"-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop",
                         "/Users/me/Downloads"}),
                  // `$$` is literal in Claude Desktop, so it is doubled for mcpmux.
                  stdio("brave_search", "npx", {"-y", "@modelcontextprotocol/server-brave-search"},
                        {{"BRAVE_API_KEY", "BSA-secret-$$$$-key"}}),
                  fetch));
  EXPECT_THAT(r.notes,
              ElementsAre("server \"brave search\": renamed to \"brave_search\" (server names are "
                          "[A-Za-z0-9_-])",
                          "server \"fetch\": autoApprove: not carried over (approving calls is up "
                          "to the client using mcpmux)"));
  expect_valid_toml(r);
  config_result p = parse_config(to_toml(r.servers), "x.toml", fake_env);
  ASSERT_TRUE(p.value);
  EXPECT_EQ(p.value->servers[0].env.at("BRAVE_API_KEY"), "BSA-secret-$$-key");
}

TEST_F(ImportFormats, ClaudeCodeMcpJson) {
  import_result r = imported("claude_code.mcp.json");
  EXPECT_THAT(
      r.servers,
      ElementsAre(
          stdio("local-db", "/usr/local/bin/db-mcp",
                {"--dsn", "${DB_URL:-postgres://localhost/dev}"}, {{"API_KEY", "${API_KEY}"}}),
          remote("github", server_type::http, "https://api.githubcopilot.com/mcp/",
                 {{"Authorization", "Bearer ${GITHUB_TOKEN}"}}),
          remote("legacy", server_type::sse, "https://mcp.example.com/sse", {{"X-API-Key", "k"}})));
  EXPECT_THAT(r.notes, IsEmpty());
  expect_valid_toml(r);
  // Claude Code's ${VAR} and ${VAR:-default} mean the same in mcpmux.
  config_result p = parse_config(to_toml(r.servers), "x.toml", fake_env);
  ASSERT_TRUE(p.value);
  EXPECT_THAT(p.value->servers[2].args, ElementsAre("--dsn", "postgres://localhost/dev"));
  EXPECT_EQ(p.value->servers[2].env.at("API_KEY"), "k");
  EXPECT_EQ(p.value->servers[0].headers.at("Authorization"), "Bearer t");
}

TEST_F(ImportFormats, ClaudeJsonWithProjects) {
  import_result r = imported("claude.json");
  EXPECT_THAT(r.servers,
              ElementsAre(stdio("memory", "npx", {"-y", "@modelcontextprotocol/server-memory"}),
                          remote("sentry", server_type::http, "https://mcp.sentry.dev/mcp"),
                          remote("sentry-2", server_type::sse, "https://mcp.sentry.dev/sse")));
  EXPECT_THAT(r.notes, ElementsAre("server \"memory\" (project /home/me/app): same as server "
                                   "\"memory\" imported before; not repeated",
                                   "server \"sentry\" (project /home/me/other): name \"sentry\" "
                                   "already taken; imported as \"sentry-2\""));
  expect_valid_toml(r);
}

TEST_F(ImportFormats, CursorWithRemoteServer) {
  import_result r = imported("cursor.json");
  EXPECT_THAT(r.servers,
              ElementsAre(stdio("playwright", "npx", {"@playwright/mcp@latest", "--port", "8931"},
                                {{"HOME_DIR", "${HOME}"},
                                 {"TOKEN", "${PW_TOKEN}"},
                                 {"ROOT", "$${workspaceFolder}"}}),
                          remote("linear", server_type::http, "https://mcp.linear.app/mcp",
                                 {{"Authorization", "Bearer ${LINEAR_TOKEN}"}}),
                          remote("old-remote", server_type::sse, "http://localhost:8000/sse/")));
  EXPECT_THAT(
      r.notes,
      ElementsAre(
          "server \"playwright\": args[2]: a number written as the string \"8931\"",
          "server \"playwright\": env.ROOT: \"${workspaceFolder}\" cannot be resolved by mcpmux; "
          "kept as literal text",
          "server \"linear\": no type given; \"http\" (Streamable HTTP) assumed; use type = "
          "\"sse\" for a legacy HTTP+SSE server",
          "server \"old-remote\": no type given; \"sse\" (legacy HTTP+SSE) assumed from the URL"));
  expect_valid_toml(r);
  config_result p = parse_config(to_toml(r.servers), "x.toml", fake_env);
  ASSERT_TRUE(p.value);
  const server_config& pw = p.value->servers[2];
  ASSERT_EQ(pw.name, "playwright");
  EXPECT_EQ(pw.env.at("HOME_DIR"), "/home/me");
  EXPECT_EQ(pw.env.at("TOKEN"), "p");
  EXPECT_EQ(pw.env.at("ROOT"), "${workspaceFolder}");
}

TEST_F(ImportFormats, WindsurfServerUrl) {
  import_result r = imported("windsurf.json");
  server_config git = stdio("git", "uvx", {"mcp-server-git", "--repository", "~/src/repo"});
  git.timeout = 120000ms;
  EXPECT_THAT(r.servers,
              ElementsAre(remote("context7", server_type::http, "https://mcp.context7.com/mcp",
                                 {{"CONTEXT7_API_KEY", "ctx7-key"}}),
                          git));
  EXPECT_THAT(
      r.notes,
      ElementsAre("server \"context7\": no type given; \"http\" (Streamable HTTP) assumed; use "
                  "type = \"sse\" for a legacy HTTP+SSE server",
                  "server \"context7\": disabledTools: not carried over (mcpmux exposes every "
                  "tool of a server)",
                  "server \"git\": alwaysAllow: not carried over (approving calls is up to the "
                  "client using mcpmux)",
                  "server \"git\": timeout: 120 read as seconds (timeout_ms = 120000)"));
  expect_valid_toml(r);
}

TEST_F(ImportFormats, VscodeWithInputsAndEnvFile) {
  import_result r = imported("vscode.json");
  EXPECT_EQ(r.format, "servers");
  EXPECT_THAT(r.servers,
              ElementsAre(stdio("perplexity", "npx", {"-y", "server-perplexity-ask"},
                                {{"PERPLEXITY_API_KEY", "$${input:perplexity-key}"}}),
                          remote("github", server_type::http, "https://api.githubcopilot.com/mcp/"),
                          stdio("fetch", "uvx", {"mcp-server-fetch"})));
  EXPECT_THAT(
      r.notes,
      ElementsAre(
          "server \"perplexity\": env.PERPLEXITY_API_KEY: \"${input:perplexity-key}\" cannot be "
          "resolved by mcpmux; kept as literal text",
          "server \"perplexity\": envFile: \"${workspaceFolder}/.env\" not carried over; put "
          "these variables in env or in mcpmuxd's environment",
          "server \"fetch\": dev: unknown key, not carried over",
          "inputs: 1 prompted value (\"perplexity-key\") cannot be carried over; use ${VAR} from "
          "mcpmuxd's environment instead"));
  expect_valid_toml(r);
}

TEST_F(ImportFormats, VscodeSettingsJson) {
  import_result r = imported_json(R"({
    "editor.fontSize": 13,
    "mcp": { "servers": { "time": { "command": "uvx", "args": ["mcp-server-time"],
                                     "env": { "TZ": "${env:TZ}", "H": "${userHome}/x" } } } }
  })");
  EXPECT_EQ(r.format, "servers");
  EXPECT_THAT(r.servers, ElementsAre(stdio("time", "uvx", {"mcp-server-time"},
                                           {{"TZ", "${TZ}"}, {"H", "${HOME}/x"}})));
  EXPECT_THAT(r.notes, IsEmpty());
}

// ---------------------------------------------------------------------------------------------
// Entries and errors

class ImportJson : public ImportTest {};

TEST_F(ImportJson, SyntaxErrorNamesLineAndColumn) {
  import_outcome r = import_mcp_json("{\n  \"mcpServers\": {\n    \"a\": { \"command\": }\n}");
  ASSERT_FALSE(r.value);
  EXPECT_THAT(r.error, HasSubstr("line 3, column 23: invalid JSON"));
}

TEST_F(ImportJson, TrailingGarbage) {
  import_outcome r = import_mcp_json("{\"mcpServers\": {}}\n x");
  ASSERT_FALSE(r.value);
  EXPECT_EQ(r.error, "line 2, column 2: unexpected text after the JSON value");
}

TEST_F(ImportJson, NotAClientConfig) {
  EXPECT_EQ(import_mcp_json("[1]").error, "expected a JSON object at the top level, got an array");
  EXPECT_THAT(import_mcp_json("{\"foo\": 1}").error, HasSubstr("no \"mcpServers\" or \"servers\""));
  EXPECT_EQ(import_mcp_json("{\"mcpServers\": []}").error,
            "\"mcpServers\" is an array, expected an object");
}

TEST_F(ImportJson, EmptyListIsFine) {
  import_result r = imported_json("{\"mcpServers\": {}}");
  EXPECT_THAT(r.servers, IsEmpty());
  EXPECT_THAT(r.notes, IsEmpty());
}

TEST_F(ImportJson, MissingFile) {
  bool missing = false;
  import_outcome r = import_mcp_file(fixture("does-not-exist.json"), &missing);
  EXPECT_FALSE(r.value);
  EXPECT_TRUE(missing);
  EXPECT_EQ(r.error, "cannot open: No such file or directory");
}

TEST_F(ImportJson, BadEntriesAreSkippedWithNotes) {
  import_result r = imported_json(R"({"mcpServers": {
    "a": 5,
    "b": { "type": "websocket", "url": "ws://x" },
    "c": { "args": ["x"] },
    "d": { "type": "http", "url": "ftp://x" },
    "e": { "command": "" },
    "f": { "type": "stdio" },
    "g": { "command": "ok", "headers": { "A": "b" }, "url": "https://x" },
    "h": { "url": "https://x", "headers": { "Bad Name": "v", "X-Ok": "1\r\nInjected: y", "N": 3 },
           "env": { "A": "b" } }
  }})");
  server_config g = stdio("g", "ok", {});
  server_config h = remote("h", server_type::http, "https://x", {{"N", "3"}});
  EXPECT_THAT(r.servers, ElementsAre(g, h));
  EXPECT_THAT(
      r.notes,
      ElementsAre("server \"a\": is a number, not an object; skipped",
                  "server \"b\": type \"websocket\" is not supported; skipped",
                  "server \"c\": has neither \"command\" nor \"url\"; skipped",
                  "server \"d\": url: \"ftp://x\" is not an http:// or https:// URL; skipped",
                  "server \"e\": command: empty; skipped", "server \"f\": has no command; skipped",
                  "server \"g\": headers: does not apply to stdio servers; not carried over",
                  "server \"g\": url: does not apply to stdio servers; not carried over",
                  "server \"h\": no type given; \"http\" (Streamable HTTP) assumed; use type = "
                  "\"sse\" for a legacy HTTP+SSE server",
                  "server \"h\": headers.Bad Name: not a valid header name; dropped",
                  "server \"h\": headers.X-Ok: value contains CR, LF or NUL; dropped",
                  "server \"h\": headers.N: a number written as the string \"3\"",
                  "server \"h\": env: does not apply to remote servers; not carried over"));
  expect_valid_toml(r);
}

TEST_F(ImportJson, DollarSignsAndVariables) {
  import_result r = imported_json(R"({"mcpServers": {"s": {"command": "c", "args": [
    "${A}", "${A:-${B}}", "${env:C}", "$", "a$b", "$$", "${", "${1bad}", "${input:x}"]}}})");
  ASSERT_EQ(r.servers.size(), 1u);
  EXPECT_THAT(r.servers[0].args, ElementsAre("${A}", "${A:-${B}}", "${C}", "$", "a$b", "$$$$",
                                             "$${", "$${1bad}", "$${input:x}"));
  g_env = {{"A", ""}, {"B", "bee"}, {"C", "sea"}};
  config_result p = parse_config(to_toml(r.servers), "x.toml", fake_env);
  ASSERT_TRUE(p.value) << p.errors.front().to_string();
  EXPECT_THAT(p.value->servers[0].args,
              ElementsAre("", "bee", "sea", "$", "a$b", "$$", "${", "${1bad}", "${input:x}"));
}

TEST_F(ImportJson, DisabledTimeoutAndCwd) {
  import_result r = imported_json(R"({"mcpServers": {
    "a": {"command": "c", "disabled": true, "timeout": 1.5, "cwd": "/srv"},
    "b": {"command": "c", "enabled": false, "timeout": 0, "cwd": "rel/dir"}}})");
  server_config a = stdio("a", "c", {});
  a.enabled = false;
  a.timeout = 1500ms;
  a.cwd = "/srv";
  server_config b = stdio("b", "c", {});
  b.enabled = false;
  EXPECT_THAT(r.servers, ElementsAre(a, b));
  EXPECT_THAT(r.notes,
              ElementsAre("server \"a\": timeout: 1.5E0 read as seconds (timeout_ms = 1500)",
                          "server \"b\": timeout: 0 is not positive; not carried over",
                          "server \"b\": cwd: \"rel/dir\" is not an absolute path; not carried "
                          "over"));
}

// ---------------------------------------------------------------------------------------------
// Names

TEST(ImportNames, Sanitize) {
  EXPECT_EQ(sanitize_server_name("files"), "files");
  EXPECT_EQ(sanitize_server_name("my server.v2"), "my_server_v2");
  EXPECT_EQ(sanitize_server_name("caf\xC3\xA9"), "caf__");
  EXPECT_EQ(sanitize_server_name(""), "server");
  EXPECT_EQ(sanitize_server_name(std::string(100, 'x')), std::string(64, 'x'));
}

TEST(ImportNames, DedupIsDeterministic) {
  std::vector<server_config> list;
  std::vector<std::string> notes;
  EXPECT_TRUE(add_unique_server(list, stdio("a", "one", {}), notes));
  EXPECT_TRUE(add_unique_server(list, stdio("a", "two", {}), notes));
  EXPECT_TRUE(add_unique_server(list, stdio("a", "three", {}), notes));
  EXPECT_FALSE(add_unique_server(list, stdio("a", "one", {}), notes));
  const std::string long_name(64, 'n');
  EXPECT_TRUE(add_unique_server(list, stdio(long_name, "x", {}), notes));
  EXPECT_TRUE(add_unique_server(list, stdio(long_name, "y", {}), notes));
  ASSERT_EQ(list.size(), 5u);
  EXPECT_EQ(list[1].name, "a-2");
  EXPECT_EQ(list[2].name, "a-3");
  EXPECT_EQ(list[4].name, std::string(62, 'n') + "-2");
  EXPECT_THAT(notes,
              ElementsAre("server \"a\": name \"a\" already taken; imported as \"a-2\"",
                          "server \"a\": name \"a\" already taken; imported as \"a-3\"",
                          "server \"a\": same as server \"a\" imported before; not repeated",
                          "server \"" + long_name + "\": name \"" + long_name +
                              "\" already taken; imported as \"" + std::string(62, 'n') + "-2\""));
}

TEST(ImportNames, SanitisedCollisionsGetSuffixes) {
  import_result r = imported_json(
      R"({"mcpServers": {"my server": {"command": "a"}, "my.server": {"command": "b"},
                         "my_server": {"command": "c"}}})");
  ASSERT_EQ(r.servers.size(), 3u);
  EXPECT_EQ(r.servers[0].name, "my_server");
  EXPECT_EQ(r.servers[1].name, "my_server-2");
  EXPECT_EQ(r.servers[2].name, "my_server-3");
}

// ---------------------------------------------------------------------------------------------
// TOML printer

TEST(ImportToml, Quote) {
  EXPECT_EQ(toml_quote("plain"), "\"plain\"");
  EXPECT_EQ(toml_quote("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(toml_quote("l1\nl2\r\t\b\f"), R"("l1\nl2\r\t\b\f")");
  EXPECT_EQ(toml_quote(std::string("nul\0bell\x07"
                                   "del\x7f",
                                   13)),
            R"("nul\u0000bell\u0007del\u007F")");
  EXPECT_EQ(toml_quote("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "\"caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80\"");
  // Invalid UTF-8: a stray continuation byte, an overlong form, a surrogate, a truncated tail.
  EXPECT_EQ(toml_quote("a\x80"
                       "b\xC0\xAF"
                       "c\xED\xA0\x80"
                       "d\xE2\x82"),
            R"("a\uFFFDb\uFFFD\uFFFDc\uFFFD\uFFFD\uFFFDd\uFFFD\uFFFD")");
  // Characters that hide or reorder text, as TOML escapes of the same string.
  EXPECT_EQ(toml_quote("a\xE2\x80\xAE"
                       "b\xC2\x9B"
                       "c\xF3\xA0\x81\xA8"),
            R"("a\u202eb\u009bc\U000e0068")");
}

TEST(ImportToml, FixedKeyOrder) {
  server_config s = stdio("files", "npx", {"-y", "fs"}, {{"B", "2"}, {"A", "1"}});
  s.cwd = "/home/me";
  s.timeout = 60000ms;
  s.enabled = false;
  s.prefix = "fs";
  s.roots = {"file:///home/me/src"};
  s.retry = retry_mode::never;
  s.ping_interval = 5000ms;
  EXPECT_EQ(to_toml(s),
            "[servers.files]\n"
            "command = \"npx\"\n"
            "args = [\"-y\", \"fs\"]\n"
            "env = { A = \"1\", B = \"2\" }\n"
            "cwd = \"/home/me\"\n"
            "timeout_ms = 60000\n"
            "enabled = false\n"
            "prefix = \"fs\"\n"
            "roots = [\"file:///home/me/src\"]\n"
            "retry = \"never\"\n"
            "ping_interval_ms = 5000\n");
  server_config r = remote("web", server_type::sse, "https://x/sse", {{"X-Key", "v"}});
  r.ca_file = "/etc/ca.pem";
  r.token_command = "pass show token";
  EXPECT_EQ(to_toml(std::vector<server_config>{stdio("a", "b", {}), r}),
            "[servers.a]\n"
            "command = \"b\"\n"
            "\n"
            "[servers.web]\n"
            "type = \"sse\"\n"
            "url = \"https://x/sse\"\n"
            "headers = { X-Key = \"v\" }\n"
            "ca_file = \"/etc/ca.pem\"\n"
            "token_command = \"pass show token\"\n");
}

TEST(ImportToml, RoundTripThroughParseConfig) {
  const std::string tricky =
      "quote\" backslash\\ $dollar ${NOT_A_VAR} $$ tab\t newline\n cr\r unicode caf\xC3\xA9 "
      "\xF0\x9F\x98\x80 ctrl\x01 del\x7f '''single''' \"\"\"triple\"\"\"";
  server_config a = stdio("a_b-c", tricky, {tricky, "", "x"},
                          {{"K", tricky}, {"with space", "v"}, {"dotted.key", "w"}});
  a.cwd = "/dir with \"quotes\"/and\\backslash";
  a.timeout = 0ms;
  a.enabled = false;
  a.prefix = "";
  a.roots = {"file:///home/me/caf%C3%A9"};
  a.retry = retry_mode::always;
  a.ping_interval = 1234ms;
  server_config b = remote("remote", server_type::http, "https://example.com/mcp?q=\"x\"",
                           {{"Authorization", "Bearer " + tricky.substr(0, 20)}, {"X-Y", "z"}});
  b.ca_file = "/etc/ssl/\xC3\xA9.pem";
  b.token_command = "printf '%s\\n' \"$TOKEN\"";
  b.timeout = 5ms;
  b.headers["X-Y"] = "multi word; value=\"q\"";
  server_config c = remote("legacy", server_type::sse, "http://127.0.0.1:8080/sse");

  const std::vector<server_config> in = {a, b, c};
  const std::string text = to_toml(in, toml_strings::literal);
  config_result p =
      parse_config(text, "rt.toml", [](std::string_view) { return std::optional<std::string>{}; });
  ASSERT_TRUE(p.value) << p.errors.front().to_string() << "\n" << text;
  EXPECT_THAT(p.warnings, IsEmpty());
  std::vector<server_config> out = p.value->servers;
  for (server_config& s : out) s.line = 0;
  // The loader gives a stdio server that names no sandbox the daemon's ([daemon] sandbox).
  a.sandbox.mode = sandbox_mode::standard;
  // parse_config sorts by name.
  EXPECT_THAT(out, ElementsAre(a, c, b));
  // And printing the parsed result again gives the same text.
  EXPECT_EQ(to_toml(std::vector<server_config>{out[0], out[2], out[1]}, toml_strings::literal),
            text);
}

TEST(ImportToml, TemplatesAreExpandedByParseConfig) {
  server_config s = stdio("s", "${CMD}", {"$${lit}"});
  config_result p = parse_config(to_toml(s), "t.toml", [](std::string_view n) {
    return n == "CMD" ? std::optional<std::string>("run") : std::nullopt;
  });
  ASSERT_TRUE(p.value);
  EXPECT_EQ(p.value->servers[0].command, "run");
  EXPECT_THAT(p.value->servers[0].args, ElementsAre("${lit}"));
}

// ---------------------------------------------------------------------------------------------
// `mcpmux import` and --write

struct run_result {
  int status;
  std::string out, err;
};

run_result run_cli(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  const int status = run_import(static_cast<int>(args.size()), argv.data());
  run_result r{status, ::testing::internal::GetCapturedStdout(),
               ::testing::internal::GetCapturedStderr()};
  return r;
}

TEST(ImportCli, PrintsTomlAndNotes) {
  run_result r = run_cli({fixture("claude_desktop.json")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("[servers.brave_search]\ncommand = \"npx\"\n"));
  EXPECT_THAT(r.out, AllOf(HasSubstr("[servers.filesystem]"), HasSubstr("[servers.fetch]")));
  EXPECT_THAT(r.err, HasSubstr("claude_desktop.json: server \"fetch\": autoApprove"));
  EXPECT_THAT(r.out, Not(HasSubstr("autoApprove")));
  config_result p = parse_config(r.out, "out.toml");
  EXPECT_TRUE(p.value);
}

TEST(ImportCli, UsageErrors) {
  EXPECT_EQ(run_cli({}).status, 2);
  EXPECT_EQ(run_cli({"--bogus", fixture("cursor.json")}).status, 2);
  EXPECT_EQ(run_cli({fixture("cursor.json"), "--config"}).status, 2);
  EXPECT_EQ(run_cli({fixture("cursor.json"), "--config", "/tmp/x.toml"}).status, 2);
  run_result help = run_cli({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_THAT(help.out, HasSubstr("Usage: mcpmux import FILE... [--write [--keep-plaintext]] "
                                  "[--config PATH]"));
}

TEST(ImportCli, MissingOrInvalidInputFails) {
  temp_dir dir;
  const std::string bad = dir.write("bad.json", "{ nope");
  const std::string config = dir.path() + "/config.toml";
  run_result r = run_cli(
      {fixture("cursor.json"), dir.path() + "/missing.json", bad, "--write", "--config", config});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("missing.json: cannot open: No such file or directory"));
  EXPECT_THAT(r.err, HasSubstr("bad.json: line 1, column 3: invalid JSON"));
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_FALSE(std::filesystem::exists(config));  // all or nothing
}

TEST(ImportCli, WriteMergesAndSkipsExisting) {
  temp_dir dir, store;
  env_guard secrets("MCPMUX_SECRETS_FILE", (store.path() + "/secrets.json").c_str());
  const std::string original =
      "[daemon]\nlog_level = \"debug\"\n\n# mine\n[servers.sentry]\ncommand = \"my-sentry\"";
  const std::string config = dir.write("config.toml", original);
  ::chmod(config.c_str(), 0640);
  run_result r = run_cli({"--write", fixture("claude.json"), "--config", config});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("server \"sentry\" already exists in " + config +
                               "; skipped (not overwritten)"));
  EXPECT_THAT(r.err, HasSubstr("added 2 servers to " + config + ": memory, sentry-2"));
  EXPECT_THAT(r.out, IsEmpty());
  const std::string text = read_all(config);
  EXPECT_TRUE(text.starts_with(original + "\n\n# Imported from "));
  config_result p = parse_config(text, config);
  ASSERT_TRUE(p.value) << p.errors.front().to_string();
  ASSERT_EQ(p.value->servers.size(), 3u);
  EXPECT_EQ(p.value->servers[0].name, "memory");
  EXPECT_EQ(p.value->servers[1].name, "sentry");
  EXPECT_EQ(p.value->servers[1].command, "my-sentry");  // not overwritten
  EXPECT_EQ(p.value->servers[2].name, "sentry-2");
  EXPECT_EQ(p.value->daemon.log_level, "debug");
  struct stat st {};
  ASSERT_EQ(::stat(config.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);  // mode kept
  // Nothing left behind by the atomic write.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()),
                          std::filesystem::directory_iterator()),
            1);

  // Importing the same again adds nothing and reports every server.
  run_result again = run_cli({"--write", fixture("claude.json"), "--config", config});
  EXPECT_EQ(again.status, 1);
  EXPECT_THAT(again.err, HasSubstr("nothing to add"));
  EXPECT_EQ(read_all(config), text);
}

TEST(ImportCli, WriteCreatesFileAndDirectory) {
  temp_dir dir;
  const std::string secrets_file = dir.path() + "/secrets.json";
  env_guard secrets("MCPMUX_SECRETS_FILE", secrets_file.c_str());
  const std::string config = dir.path() + "/new/sub/config.toml";
  run_result r = run_cli({"-w", "-c", config, fixture("windsurf.json"), fixture("cursor.json")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("(new file)"));
  // The tokens went to the secrets file, by name; the config names them.
  EXPECT_THAT(r.err, HasSubstr("moved to " + secrets_file + " (named as ${secret:NAME} in " +
                               config + "): context7_CONTEXT7_API_KEY"));
  EXPECT_THAT(read_all(config), Not(HasSubstr("ctx7-key")));
  EXPECT_THAT(read_all(config),
              HasSubstr("CONTEXT7_API_KEY = \"${secret:context7_CONTEXT7_API_KEY}\""));
  EXPECT_EQ(read_secrets(secrets_file).values.at("context7_CONTEXT7_API_KEY"), "ctx7-key");
  EXPECT_THAT(r.err + r.out, Not(HasSubstr("ctx7-key")));
  config_result p = parse_config(read_all(config), config, fake_env);
  ASSERT_TRUE(p.value) << p.errors.front().to_string();
  EXPECT_EQ(p.value->servers.size(), 5u);
  struct stat st {};
  ASSERT_EQ(::stat(config.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir.path() + "/new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(ImportCli, WriteRefusesAnInvalidConfig) {
  temp_dir dir;
  const std::string original = "[servers.x]\ncomand = \"typo\"\n";
  const std::string config = dir.write("config.toml", original);
  run_result r = run_cli({"--write", "--config=" + config, fixture("cursor.json")});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, HasSubstr("unknown key; did you mean \"command\"?"));
  EXPECT_THAT(r.err, HasSubstr("nothing written"));
  EXPECT_EQ(read_all(config), original);
}

TEST(ImportCli, WriteFollowsSymlink) {
  temp_dir dir, store;
  env_guard secrets("MCPMUX_SECRETS_FILE", (store.path() + "/secrets.json").c_str());
  const std::string real = dir.write("dotfiles/config.toml", "");
  const std::string link = dir.path() + "/config.toml";
  ASSERT_EQ(::symlink(real.c_str(), link.c_str()), 0);
  run_result r = run_cli({"--write", "--config", link, fixture("claude_code.mcp.json")});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_THAT(read_all(real), HasSubstr("[servers.local-db]"));
}

TEST(ImportMerge, InlineServersTableCannotBeExtended) {
  // Appending [servers.NAME] after `servers = {...}` is invalid TOML: caught before writing.
  merge_outcome m = merge_into_config("servers = { a = { command = \"x\" } }\n", "c.toml",
                                      {stdio("b", "y", {})}, "imported", fake_env);
  EXPECT_THAT(m.errors, Not(IsEmpty()));
  EXPECT_TRUE(m.text.empty());
}

// ---------------------------------------------------------------------------------------------
// [daemon] include

class ImportInclude : public ImportTest {};

TEST_F(ImportInclude, ParseConfigOnlyRecordsPaths) {
  g_env["DIR"] = "/etc/mcp";
  config_result r = parse_config(
      "[daemon]\ninclude = [\"~/.cursor/mcp.json\", \"${DIR}/x.json\", \"rel.json\"]\n", "t.toml",
      fake_env);
  ASSERT_TRUE(r.value);
  EXPECT_THAT(r.value->daemon.include,
              ElementsAre("/home/me/.cursor/mcp.json", "/etc/mcp/x.json", "rel.json"));
  EXPECT_THAT(r.value->servers, IsEmpty());
  config_result bad = parse_config("daemon.include = \"x.json\"\n", "t.toml", fake_env);
  ASSERT_EQ(bad.errors.size(), 1u);
  EXPECT_EQ(bad.errors[0].to_string(),
            "t.toml:1: daemon.include: expected an array of strings, got a string");
  config_result empty = parse_config("daemon.include = [\"\"]\n", "t.toml", fake_env);
  ASSERT_EQ(empty.errors.size(), 1u);
  EXPECT_EQ(empty.errors[0].key, "daemon.include[0]");
}

TEST_F(ImportInclude, ServersAddedTomlWinsMissingWarns) {
  temp_dir dir;
  g_env["HOME"] = dir.path();
  dir.write(".cursor/mcp.json", read_all(fixture("cursor.json")));
  dir.write("conf/windsurf.json", read_all(fixture("windsurf.json")));
  const std::string config = dir.write("conf/config.toml",
                                       "[daemon]\n"
                                       "include = [\"~/.cursor/mcp.json\", \"missing.json\",\n"
                                       "           \"windsurf.json\"]\n"
                                       "\n"
                                       "[servers.linear]\n"
                                       "command = \"my-linear\"\n");
  config_result r = load_config_file(config, fake_env);
  ASSERT_TRUE(r.value) << r.errors.front().to_string();
  std::vector<std::string> names;
  for (const server_config& s : r.value->servers) names.push_back(s.name);
  EXPECT_THAT(names, ElementsAre("context7", "git", "linear", "old-remote", "playwright"));
  const server_config& linear = r.value->servers[2];
  EXPECT_EQ(linear.command, "my-linear");
  EXPECT_EQ(linear.line, 5);
  const server_config& pw = r.value->servers[4];
  EXPECT_EQ(pw.line, 0);
  EXPECT_EQ(pw.env.at("HOME_DIR"), dir.path());  // ${userHome} → ${HOME}, expanded at load
  EXPECT_EQ(pw.env.at("TOKEN"), "p");
  EXPECT_EQ(r.value->servers[1].timeout, 120000ms);
  const std::string cursor = dir.path() + "/.cursor/mcp.json";
  EXPECT_THAT(
      r.warnings,
      AllOf(::testing::Contains(cursor + ": server \"linear\" ignored: [servers.linear] in " +
                                config + " takes precedence"),
            ::testing::Contains("daemon.include[1]: " + dir.path() +
                                "/conf/missing.json does not exist; skipped"),
            ::testing::Contains(HasSubstr("windsurf.json: server \"git\": timeout"))));
  EXPECT_EQ(r.value->source, config);
}

TEST_F(ImportInclude, UnparsableIncludeIsAnError) {
  temp_dir dir;
  const std::string bad = dir.write("bad.json", "{\"mcpServers\": {\"a\": }");
  const std::string config = dir.write("config.toml", "daemon.include = [\"bad.json\"]\n");
  config_result r = load_config_file(config, fake_env);
  EXPECT_FALSE(r.value);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(),
            config + ": daemon.include[0]: cannot import " + dir.path() +
                "/bad.json: line 1, column 22: invalid JSON: syntax error");
}

TEST_F(ImportInclude, IncludedServerFailingValidationIsSkipped) {
  temp_dir dir;
  dir.write("a.json", R"({"mcpServers": {
    "u": {"type": "http", "url": "${UNSET_URL}"},
    "ok": {"command": "x"}}})");
  dir.write("b.json", R"({"servers": {"ok": {"command": "y"}}})");
  const std::string config =
      dir.write("config.toml", "[daemon]\ninclude = [\"a.json\", \"b.json\"]\n");
  config_result r = load_config_file(config, fake_env);
  ASSERT_TRUE(r.value) << r.errors.front().to_string();
  ASSERT_EQ(r.value->servers.size(), 1u);
  EXPECT_EQ(r.value->servers[0].command, "x");  // the first include wins
  const std::string a = dir.path() + "/a.json";
  EXPECT_THAT(r.warnings,
              AllOf(::testing::Contains(a + ": servers.u.url: ${UNSET_URL} is not set; using \"\""),
                    ::testing::Contains(a + ": server \"u\" skipped: servers.u.url: must start "
                                            "with http:// or https:// (got \"\")"),
                    ::testing::Contains(dir.path() +
                                        "/b.json: server \"ok\" ignored: already "
                                        "included from " +
                                        a)));
}

// Every key to_toml writes comes back the same through the parser, isolation included (an
// included server is carried through to_toml).
TEST(ToToml, EveryNonDefaultKeyRoundTrips) {
  server_config s;
  s.name = "all";
  s.command = "run";
  s.args = {"a", "b c"};
  s.env = {{"K", "v"}};
  s.cwd = "/tmp";
  s.timeout = std::chrono::milliseconds(1234);
  s.enabled = false;
  s.prefix = "p";
  s.retry = retry_mode::never;
  s.reset_timeout_on_progress = !server_config{}.reset_timeout_on_progress;
  s.max_timeout = std::chrono::milliseconds(99000);
  s.ping_interval = std::chrono::milliseconds(4000);
  s.per_client = true;
  s.era = era_setting::legacy;
  s.tools_shown = {"*", "!delete_*"};
  s.prompts_shown = {"review"};
  s.resources_shown = {"file:///pub/*"};
  config_result p = parse_config(to_toml(s), "x.toml", fake_env);
  ASSERT_TRUE(p.value) << to_toml(s);
  const server_config& back = p.value->servers.at(0);
  EXPECT_EQ(back.command, s.command);
  EXPECT_EQ(back.args, s.args);
  EXPECT_EQ(back.env, s.env);
  EXPECT_EQ(back.cwd, s.cwd);
  EXPECT_EQ(back.timeout, s.timeout);
  EXPECT_EQ(back.enabled, s.enabled);
  EXPECT_EQ(back.prefix, s.prefix);
  EXPECT_EQ(back.retry, s.retry);
  EXPECT_EQ(back.reset_timeout_on_progress, s.reset_timeout_on_progress);
  EXPECT_EQ(back.max_timeout, s.max_timeout);
  EXPECT_EQ(back.ping_interval, s.ping_interval);
  EXPECT_TRUE(back.per_client) << to_toml(s);
  EXPECT_EQ(back.era, s.era);
  EXPECT_EQ(back.tools_shown, s.tools_shown);
  EXPECT_EQ(back.prompts_shown, s.prompts_shown);
  EXPECT_EQ(back.resources_shown, s.resources_shown);
}

TEST_F(ImportInclude, DefaultConfigDocumentsInclude) {
  EXPECT_THAT(std::string(default_config_text()), HasSubstr("# include = ["));
  config_result r = parse_config(default_config_text(), "<default>", fake_env);
  ASSERT_TRUE(r.value);
  EXPECT_THAT(r.value->daemon.include, IsEmpty());
}

TEST(ImportOAuth, ClaudeCodeOAuthFieldsAreCarriedOverAndPrinted) {
  import_result r = imported_json(R"({"mcpServers": {
    "notion": {"type": "http", "url": "https://mcp.notion.com/mcp",
               "oauth": {"clientId": "notion-client", "callbackPort": 8765, "scopes": "read write",
                         "clientSecret": "inline-SECRET",
                         "authServerMetadataUrl": "https://auth.notion.com/meta"}},
    "plain": {"type": "http", "url": "https://x.example/mcp", "oauth": {}},
    "local": {"command": "srv", "oauth": {"clientId": "x"}}}})");
  ASSERT_EQ(r.servers.size(), 3u);
  const auto& notion = r.servers[0];
  EXPECT_TRUE(notion.oauth.enabled);
  EXPECT_EQ(notion.oauth.client_id, "notion-client");
  EXPECT_EQ(notion.oauth.redirect_port, 8765u);
  EXPECT_EQ(notion.oauth.scope, "read write");
  EXPECT_TRUE(notion.oauth.client_secret_file.empty());  // never inline, never guessed
  EXPECT_TRUE(r.servers[1].oauth.enabled);
  EXPECT_FALSE(r.servers[2].oauth.enabled);
  const std::string notes = ::testing::PrintToString(r.notes);
  EXPECT_THAT(notes, HasSubstr("oauth.clientSecret: a secret written inline is not carried over"));
  EXPECT_THAT(notes, HasSubstr("oauth.authServerMetadataUrl: not carried over"));
  EXPECT_THAT(notes, HasSubstr("oauth: does not apply to stdio servers"));
  EXPECT_THAT(notes, Not(HasSubstr("inline-SECRET")));

  const auto toml = to_toml(r.servers);
  EXPECT_THAT(toml, HasSubstr("oauth = { client_id = \"notion-client\", scope = \"read write\", "
                              "redirect_port = 8765 }"));
  EXPECT_THAT(toml, HasSubstr("oauth = true"));
  config_result p = parse_config(toml, "imported.toml", fake_env);
  ASSERT_TRUE(p.value) << (p.errors.empty() ? "" : p.errors.front().to_string());
  const auto back = std::find_if(p.value->servers.begin(), p.value->servers.end(),
                                 [](const server_config& c) { return c.name == "notion"; });
  ASSERT_NE(back, p.value->servers.end());
  EXPECT_TRUE(back->oauth == notion.oauth);  // what is printed reads back the same
}

}  // namespace
}  // namespace mcpmux
