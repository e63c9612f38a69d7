// Unit tests of config/: TOML parsing, validation errors, ${VAR} expansion, path resolution.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cctype>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "base/files.hpp"
#include "base/redact.hpp"
#include "config/config.hpp"
#include "config/import.hpp"
#include "config/paths.hpp"
#include "config/secrets.hpp"
#include "tests/unit/env_guard.hpp"
#include "tests/unit/error_text.hpp"

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using namespace std::chrono_literals;

// env_lookup is a plain function pointer, so the fake environment lives in a global that each
// fixture resets.
std::map<std::string, std::string, std::less<>> g_env;

std::optional<std::string> fake_env(std::string_view name) {
  auto it = g_env.find(name);
  if (it == g_env.end()) return std::nullopt;
  return it->second;
}

// A fresh directory under /tmp, removed with everything in it.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mcpmux-config-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
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

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { g_env = {{"HOME", "/home/me"}}; }
  void TearDown() override { g_env.clear(); }

  static config_result parse(std::string_view text) {
    return parse_config(text, "test.toml", fake_env);
  }
  // Parses text expected to be valid and returns the config.
  static config ok(std::string_view text) {
    config_result r = parse(text);
    EXPECT_THAT(r.errors, IsEmpty()) << (r.errors.empty() ? "" : r.errors.front().to_string());
    EXPECT_TRUE(r.value.has_value());
    return r.value.value_or(config{});
  }
  // Parses text expected to fail with exactly one error and returns it.
  static config_error one_error(std::string_view text) {
    config_result r = parse(text);
    EXPECT_FALSE(r.value.has_value());
    EXPECT_EQ(r.errors.size(), 1u) << all(r);
    return r.errors.empty() ? config_error{} : r.errors.front();
  }
  static std::string all(const config_result& r) {
    std::string s;
    for (const auto& e : r.errors) s += e.to_string() + "\n";
    return s;
  }
};

class ConfigParse : public ConfigTest {};

TEST_F(ConfigParse, EmptyTextGivesDefaults) {
  config c = ok("");
  EXPECT_EQ(c.daemon.timeout, 30000ms);
  EXPECT_EQ(c.daemon.tool_separator, "__");
  EXPECT_EQ(c.daemon.max_tool_name, 64u);
  EXPECT_EQ(c.daemon.log_level, "info");
  EXPECT_EQ(c.daemon.socket, "");
  EXPECT_EQ(c.daemon.max_message_bytes, 16u << 20);
  EXPECT_EQ(c.daemon.max_client_queue_bytes, 64u << 20);
  EXPECT_EQ(c.daemon.max_instructions_bytes, 16u << 10);
  EXPECT_THAT(c.servers, IsEmpty());
  EXPECT_EQ(c.source, "test.toml");
}

TEST_F(ConfigParse, ServerDefaults) {
  config c = ok("[servers.a]\ncommand = \"prog\"\n");
  ASSERT_EQ(c.servers.size(), 1u);
  const server_config& s = c.servers[0];
  EXPECT_EQ(s.name, "a");
  EXPECT_EQ(s.type, server_type::stdio);
  EXPECT_EQ(s.command, "prog");
  EXPECT_THAT(s.args, IsEmpty());
  EXPECT_THAT(s.env, IsEmpty());
  EXPECT_EQ(s.cwd, "");
  EXPECT_FALSE(s.timeout.has_value());
  EXPECT_TRUE(s.enabled);
  EXPECT_FALSE(s.prefix.has_value());
  EXPECT_EQ(s.effective_prefix(), "a");
  EXPECT_THAT(s.roots, IsEmpty());
  EXPECT_EQ(s.line, 1);
}

TEST_F(ConfigParse, ParsesEveryDaemonKey) {
  config c = ok(R"(
[daemon]
timeout_ms = 1500
tool_separator = "-x_"
max_tool_name = 128
log_level = "debug"
socket = "~/run/mux.sock"
max_message_bytes = 2048
max_client_queue_bytes = 4096
max_instructions_bytes = 0
)");
  EXPECT_EQ(c.daemon.timeout, 1500ms);
  EXPECT_EQ(c.daemon.tool_separator, "-x_");
  EXPECT_EQ(c.daemon.max_tool_name, 128u);
  EXPECT_EQ(c.daemon.log_level, "debug");
  EXPECT_EQ(c.daemon.socket, "/home/me/run/mux.sock");
  EXPECT_EQ(c.daemon.max_message_bytes, 2048u);
  EXPECT_EQ(c.daemon.max_client_queue_bytes, 4096u);
  EXPECT_EQ(c.daemon.max_instructions_bytes, 0u);
}

TEST_F(ConfigParse, ParsesEveryStdioServerKey) {
  config c = ok(R"(
[servers.files]
type = "stdio"
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/src"]
env = { API_KEY = "k1", OTHER = "" }
cwd = "/home/me"
timeout_ms = 60000
enabled = false
prefix = "fs"
roots = ["/home/me/src", "file:///srv/data"]
)");
  ASSERT_EQ(c.servers.size(), 1u);
  const server_config& s = c.servers[0];
  EXPECT_EQ(s.name, "files");
  EXPECT_EQ(s.type, server_type::stdio);
  EXPECT_EQ(s.command, "npx");
  EXPECT_THAT(s.args, ElementsAre("-y", "@modelcontextprotocol/server-filesystem", "/home/me/src"));
  EXPECT_THAT(s.env, ElementsAre(Pair("API_KEY", "k1"), Pair("OTHER", "")));
  EXPECT_EQ(s.cwd, "/home/me");
  EXPECT_EQ(s.timeout, 60000ms);
  EXPECT_FALSE(s.enabled);
  EXPECT_EQ(s.prefix, "fs");
  EXPECT_EQ(s.effective_prefix(), "fs");
  EXPECT_THAT(s.roots, ElementsAre("file:///home/me/src", "file:///srv/data"));
  EXPECT_EQ(s.line, 2);
}

TEST_F(ConfigParse, ParsesHttpAndSseServers) {
  config c = ok(R"(
[servers.remote]
type = "http"
url = "https://example.com/mcp"
headers = { Authorization = "Bearer abc", "X-Trace" = "1" }
timeout_ms = 0

[servers.old]
type = "sse"
url = "http://127.0.0.1:8080/sse"
)");
  ASSERT_EQ(c.servers.size(), 2u);
  EXPECT_EQ(c.servers[0].name, "old");
  EXPECT_EQ(c.servers[0].type, server_type::sse);
  EXPECT_EQ(c.servers[0].url, "http://127.0.0.1:8080/sse");
  EXPECT_EQ(c.servers[1].name, "remote");
  EXPECT_EQ(c.servers[1].type, server_type::http);
  EXPECT_EQ(c.servers[1].url, "https://example.com/mcp");
  EXPECT_THAT(c.servers[1].headers,
              ElementsAre(Pair("Authorization", "Bearer abc"), Pair("X-Trace", "1")));
  EXPECT_EQ(c.servers[1].timeout, 0ms);
}

TEST_F(ConfigParse, OauthSettingsOfRemoteServers) {
  config c = ok(R"(
[servers.plain]
type = "http"
url = "https://example.com/mcp"
oauth = true

[servers.full]
type = "http"
url = "https://api.example.com/mcp"
oauth = { client_id = "mcpmux-1", client_secret_file = "/run/secrets/api", scope = "repo read:org", redirect_port = 33418 }

[servers.machine]
type = "sse"
url = "https://svc.example.com/sse"
[servers.machine.oauth]
client_id = "svc"
client_secret_file = "/run/secrets/svc"
grant = "client_credentials"
client_metadata_url = "https://mcpmux.example/client.json"
)");
  ASSERT_EQ(c.servers.size(), 3u);
  const auto& full = c.servers[0];
  EXPECT_TRUE(full.oauth.enabled);
  EXPECT_EQ(full.oauth.client_id, "mcpmux-1");
  EXPECT_EQ(full.oauth.client_secret_file, "/run/secrets/api");
  EXPECT_EQ(full.oauth.scope, "repo read:org");
  EXPECT_EQ(full.oauth.redirect_port, 33418u);
  EXPECT_FALSE(full.oauth.client_credentials);
  const auto& machine = c.servers[1];
  EXPECT_TRUE(machine.oauth.client_credentials);
  EXPECT_EQ(machine.oauth.client_metadata_url, "https://mcpmux.example/client.json");
  const auto& plain = c.servers[2];
  EXPECT_TRUE(plain.oauth.enabled);
  EXPECT_EQ(plain.oauth.client_id, "");
}

// Unset, a server's 401 tells whether it wants a login; `oauth = false` says it never does.
TEST_F(ConfigParse, OauthFalseIsKeptApartFromUnset) {
  config c = ok(R"(
[servers.off]
type = "http"
url = "https://example.com/mcp"
oauth = false

[servers.unset]
type = "http"
url = "https://example.com/mcp"
headers = { authorization = "Bearer x" }
)");
  ASSERT_EQ(c.servers.size(), 2u);
  EXPECT_FALSE(c.servers[0].oauth.enabled);
  EXPECT_TRUE(c.servers[0].oauth.opted_out);
  EXPECT_FALSE(c.servers[1].oauth.opted_out);
  EXPECT_TRUE(c.servers[1].sends_own_authorization());
  EXPECT_FALSE(c.servers[0].sends_own_authorization());
  EXPECT_THAT(to_toml(c.servers[0]), HasSubstr("oauth = false"));
}

TEST_F(ConfigParse, OauthMistakesAreErrors) {
  const auto errors_of = [&](std::string_view text) { return all(parse(text)); };
  // A secret written inline is refused, with the way to do it right.
  auto e = errors_of(R"([servers.a]
type = "http"
url = "https://a.example/mcp"
oauth = { client_id = "x", client_secret = "s3cret" }
)");
  EXPECT_THAT(e, HasSubstr("client_secret_file"));
  EXPECT_THAT(e, Not(HasSubstr("s3cret")));
  EXPECT_THAT(errors_of(R"([servers.a]
command = "x"
oauth = true
)"),
              HasSubstr("only applies to http and sse servers"));
  EXPECT_THAT(errors_of(R"([servers.a]
type = "http"
url = "https://a.example/mcp"
token_command = "pass show a"
oauth = true
)"),
              HasSubstr("either oauth or token_command"));
  EXPECT_THAT(errors_of(R"([servers.a]
type = "http"
url = "https://a.example/mcp"
headers = { authorization = "Bearer x" }
oauth = true
)"),
              HasSubstr("Authorization header"));
  EXPECT_THAT(errors_of(R"([servers.a]
type = "http"
url = "https://a.example/mcp"
oauth = { grant = "client_credentials" }
)"),
              HasSubstr("needs client_id and client_secret_file"));
  EXPECT_THAT(errors_of(R"([servers.a]
type = "http"
url = "https://a.example/mcp"
oauth = { client_metadata_url = "http://x.example/c.json", redirect_port = 70000, grant = "implicit", scopes = "a" }
)"),
              AllOf(HasSubstr("https:// URL with a path"), HasSubstr("redirect_port"),
                    HasSubstr("authorization_code"), HasSubstr("did you mean \"scope\"")));
}

TEST_F(ConfigParse, ServersAreSortedByNameAndKeepTheirTableLine) {
  config c = ok(R"([servers.zeta]
command = "z"

[servers.alpha]
command = "a"

[servers.Mid-1_x]
command = "m"
)");
  ASSERT_EQ(c.servers.size(), 3u);
  EXPECT_EQ(c.servers[0].name, "Mid-1_x");
  EXPECT_EQ(c.servers[0].line, 7);
  EXPECT_EQ(c.servers[1].name, "alpha");
  EXPECT_EQ(c.servers[1].line, 4);
  EXPECT_EQ(c.servers[2].name, "zeta");
  EXPECT_EQ(c.servers[2].line, 1);
}

TEST_F(ConfigParse, EmptyPrefixExposesToolNamesUnchanged) {
  config c = ok("[servers.a]\ncommand = \"x\"\nprefix = \"\"\n");
  ASSERT_EQ(c.servers.size(), 1u);
  EXPECT_EQ(c.servers[0].prefix, "");
  EXPECT_EQ(c.servers[0].effective_prefix(), "");
}

TEST_F(ConfigParse, TomlSyntaxErrorIsOneErrorWithItsLine) {
  config_result r = parse("[daemon]\ntimeout_ms = 10\nlog_level = \"info\n");
  EXPECT_FALSE(r.value);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, "test.toml");
  EXPECT_EQ(r.errors[0].line, 3);
  EXPECT_EQ(r.errors[0].key, "");
  EXPECT_FALSE(r.errors[0].message.empty());
}

TEST_F(ConfigParse, DuplicateKeyIsSyntaxError) {
  config_result r = parse("[daemon]\ntimeout_ms = 1\ntimeout_ms = 2\n");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].line, 3);
}

TEST_F(ConfigParse, ReportsAllErrorsAtOnceWithFileLineAndKey) {
  config_result r = parse(R"([daemon]
timeout_ms = -1
max_tool_name = 8
log_level = "debgu"

[servers.files]
command = "npx"
timeout_ms = "slow"

[servers.web]
type = "http"
url = "ftp://example.com"
)");
  EXPECT_FALSE(r.value);
  ASSERT_EQ(r.errors.size(), 5u) << all(r);
  const std::vector<std::pair<int, std::string>> expected = {
      {2, "daemon.timeout_ms"},        {3, "daemon.max_tool_name"}, {4, "daemon.log_level"},
      {8, "servers.files.timeout_ms"}, {12, "servers.web.url"},
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(r.errors[i].file, "test.toml");
    EXPECT_EQ(r.errors[i].line, expected[i].first) << r.errors[i].to_string();
    EXPECT_EQ(r.errors[i].key, expected[i].second) << r.errors[i].to_string();
  }
  EXPECT_THAT(r.errors[0].message, HasSubstr(">= 0"));
  EXPECT_THAT(r.errors[1].message, HasSubstr("between 16 and 1024"));
  EXPECT_THAT(r.errors[2].message, HasSubstr("did you mean"));
  EXPECT_THAT(r.errors[3].message, HasSubstr("expected an integer, got a string"));
  EXPECT_THAT(r.errors[4].message, HasSubstr("http:// or https://"));
}

TEST_F(ConfigParse, UnknownKeysAnywhereAreErrors) {
  config_result r = parse(R"(deamon = 1
[daemon]
timeout = 5
[servers.a]
command = "x"
comand = "y"
bogus = true
)");
  ASSERT_EQ(r.errors.size(), 4u) << all(r);
  EXPECT_EQ(r.errors[0].key, "deamon");
  EXPECT_EQ(r.errors[0].line, 1);
  EXPECT_EQ(r.errors[0].message, "unknown key; did you mean \"daemon\"?");
  EXPECT_EQ(r.errors[1].key, "daemon.timeout");
  EXPECT_EQ(r.errors[1].message, "unknown key; did you mean \"timeout_ms\"?");
  EXPECT_EQ(r.errors[2].key, "servers.a.comand");
  EXPECT_EQ(r.errors[2].line, 6);
  EXPECT_EQ(r.errors[2].message, "unknown key; did you mean \"command\"?");
  EXPECT_EQ(r.errors[3].key, "servers.a.bogus");
  EXPECT_EQ(r.errors[3].line, 7);
  EXPECT_EQ(r.errors[3].message, "unknown key");
}

TEST_F(ConfigParse, TypeMismatchesNameExpectedAndActualType) {
  config_result r = parse(R"(daemon = 5
servers = { a = 1, b = { command = 3, args = "x", env = [1], enabled = "yes", prefix = 1 } }
)");
  ASSERT_EQ(r.errors.size(), 7u) << all(r);
  EXPECT_EQ(r.errors[0].key, "daemon");
  EXPECT_EQ(r.errors[0].message, "expected a table, got an integer");
  EXPECT_EQ(r.errors[1].key, "servers.a");
  EXPECT_EQ(r.errors[1].message, "expected a table, got an integer");
  EXPECT_EQ(r.errors[1].line, 2);
  // Errors on one line keep toml++'s (alphabetical) key order.
  EXPECT_EQ(r.errors[2].key, "servers.b.args");
  EXPECT_EQ(r.errors[2].message, "expected an array of strings, got a string");
  EXPECT_EQ(r.errors[3].key, "servers.b.command");
  EXPECT_EQ(r.errors[3].message, "expected a string, got an integer");
  EXPECT_EQ(r.errors[4].key, "servers.b.enabled");
  EXPECT_EQ(r.errors[4].message, "expected a boolean, got a string");
  EXPECT_EQ(r.errors[5].key, "servers.b.env");
  EXPECT_EQ(r.errors[5].message, "expected a table of strings, got an array");
  EXPECT_EQ(r.errors[6].key, "servers.b.prefix");
}

TEST_F(ConfigParse, ArrayAndTableElementsAreTypeChecked) {
  config_result r = parse(R"([servers.a]
command = "x"
args = ["ok",
  2]
env = { A = "1", B = false }
)");
  ASSERT_EQ(r.errors.size(), 2u) << all(r);
  EXPECT_EQ(r.errors[0].key, "servers.a.args[1]");
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_EQ(r.errors[1].key, "servers.a.env.B");
  EXPECT_EQ(r.errors[1].message, "expected a string, got a boolean");
}

TEST_F(ConfigParse, ServersMustBeTableOfTables) {
  config_error e = one_error("[[servers]]\ncommand = \"x\"\n");
  EXPECT_EQ(e.key, "servers");
  EXPECT_EQ(e.message, "expected a table of server tables, got an array");
}

TEST_F(ConfigParse, DaemonValueRangesAreChecked) {
  EXPECT_EQ(one_error("daemon.max_tool_name = 15").key, "daemon.max_tool_name");
  EXPECT_EQ(one_error("daemon.max_tool_name = 1025").key, "daemon.max_tool_name");
  ok("daemon.max_tool_name = 16");
  ok("daemon.max_tool_name = 1024");

  EXPECT_EQ(one_error("daemon.tool_separator = \"\"").key, "daemon.tool_separator");
  EXPECT_EQ(one_error("daemon.tool_separator = \"123456789\"").key, "daemon.tool_separator");
  EXPECT_EQ(one_error("daemon.tool_separator = \".\"").key, "daemon.tool_separator");
  ok("daemon.tool_separator = \"12345678\"");

  for (const char* level : {"trace", "debug", "info", "warn", "error", "off"})
    EXPECT_EQ(ok(std::string("daemon.log_level = \"") + level + "\"").daemon.log_level, level);
  EXPECT_EQ(one_error("daemon.log_level = \"warning\"").message,
            "must be one of trace, debug, info, warn, error, off (got \"warning\"); did you mean "
            "\"warn\"?");

  EXPECT_EQ(one_error("daemon.max_message_bytes = 1023").key, "daemon.max_message_bytes");
  EXPECT_EQ(one_error("daemon.max_message_bytes = 1073741825").key, "daemon.max_message_bytes");
  ok("daemon.max_message_bytes = 1024");
  ok("daemon.max_message_bytes = 1073741824\ndaemon.max_client_queue_bytes = 1073741824");

  EXPECT_EQ(one_error("daemon.max_instructions_bytes = -1").key, "daemon.max_instructions_bytes");
  EXPECT_EQ(one_error("daemon.max_instructions_bytes = 1048577").key,
            "daemon.max_instructions_bytes");
  ok("daemon.max_instructions_bytes = 1048576");

  EXPECT_EQ(one_error("daemon.timeout_ms = 1.5").message, "expected an integer, got a float");
  ok("daemon.timeout_ms = 0");
}

TEST_F(ConfigParse, ClientQueueMustHoldOneMessage) {
  config_error e = one_error("[daemon]\nmax_message_bytes = 4096\nmax_client_queue_bytes = 2048\n");
  EXPECT_EQ(e.key, "daemon.max_client_queue_bytes");
  EXPECT_EQ(e.line, 3);
  EXPECT_THAT(e.message, HasSubstr("max_message_bytes (4096)"));

  // Raising only the message cap above the default queue size is caught too.
  e = one_error("[daemon]\nmax_message_bytes = 1073741824\n");
  EXPECT_EQ(e.key, "daemon.max_message_bytes");
  EXPECT_EQ(e.line, 2);
}

TEST_F(ConfigParse, SocketMustBeAbsoluteAndFitSockaddr) {
  EXPECT_EQ(one_error("daemon.socket = \"rel/mux.sock\"").key, "daemon.socket");
  EXPECT_THAT(one_error("daemon.socket = \"/" + std::string(120, 's') + "\"").message,
              HasSubstr("Unix socket path"));
  EXPECT_EQ(ok("daemon.socket = \"/run/x.sock\"").daemon.socket, "/run/x.sock");
}

TEST_F(ConfigParse, ServerNamesAreValidated) {
  EXPECT_EQ(one_error("[servers.\"a b\"]\ncommand = \"x\"\n").key, "servers.\"a b\"");
  EXPECT_EQ(one_error("[servers.\"\"]\ncommand = \"x\"\n").key, "servers.\"\"");
  const std::string long_name(65, 'n');
  EXPECT_EQ(one_error("[servers." + long_name + "]\ncommand = \"x\"\n").key,
            "servers." + long_name);
  EXPECT_EQ(ok("[servers." + std::string(64, 'n') + "]\ncommand = \"x\"\n").servers.size(), 1u);
}

TEST_F(ConfigParse, CommandIsRequiredAndNonEmptyForStdio) {
  config_error e = one_error("\n[servers.a]\nargs = []\n");
  EXPECT_EQ(e.key, "servers.a.command");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.message, "is required for stdio servers");

  e = one_error("[servers.a]\ncommand = \"\"\n");
  EXPECT_EQ(e.key, "servers.a.command");
  EXPECT_EQ(e.message, "must not be empty");
}

TEST_F(ConfigParse, UrlIsRequiredForHttpAndSse) {
  config_error e = one_error("[servers.a]\ntype = \"http\"\n");
  EXPECT_EQ(e.key, "servers.a.url");
  EXPECT_EQ(e.line, 1);
  EXPECT_EQ(e.message, "is required for http servers");
  EXPECT_EQ(one_error("[servers.a]\ntype = \"sse\"\n").message, "is required for sse servers");
  EXPECT_EQ(one_error("[servers.a]\ntype = \"sse\"\nurl = \"https://\"\n").key, "servers.a.url");
}

TEST_F(ConfigParse, StdioOnlyKeysAreRejectedOnRemoteServers) {
  config_result r = parse(R"([servers.web]
type = "http"
url = "https://x/mcp"
command = "npx"
args = []
env = {}
cwd = "/"
)");
  ASSERT_EQ(r.errors.size(), 4u) << all(r);
  for (const auto& e : r.errors)
    EXPECT_THAT(e.message, HasSubstr("only applies to stdio servers (this server has type = "
                                     "\"http\")"));
  // Errors come in file order even though toml++ iterates keys alphabetically.
  EXPECT_EQ(r.errors[0].key, "servers.web.command");
  EXPECT_EQ(r.errors[0].line, 4);
  EXPECT_EQ(r.errors[1].key, "servers.web.args");
  EXPECT_EQ(r.errors[1].line, 5);
}

TEST_F(ConfigParse, UrlAndHeadersAreRejectedOnStdioServers) {
  config_result r = parse(R"([servers.local]
command = "x"
url = "https://x/mcp"
headers = { A = "b" }
)");
  ASSERT_EQ(r.errors.size(), 2u) << all(r);
  EXPECT_EQ(r.errors[0].key, "servers.local.url");
  EXPECT_EQ(r.errors[1].key, "servers.local.headers");
  EXPECT_THAT(r.errors[0].message, HasSubstr("only applies to http and sse servers"));
}

TEST_F(ConfigParse, UnknownServerTypeIsRejectedWithSuggestion) {
  config_error e = one_error("[servers.a]\ntype = \"htpp\"\nurl = \"https://x\"\n");
  EXPECT_EQ(e.key, "servers.a.type");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.message,
            "must be \"stdio\", \"http\" or \"sse\" (got \"htpp\"); did you mean \"http\"?");
}

TEST_F(ConfigParse, HeaderNamesAndValuesAreChecked) {
  config_result r = parse(R"([servers.w]
type = "http"
url = "https://x"
headers = { "Bad Name" = "v", Good = "a\r\nInjected: 1" }
)");
  ASSERT_EQ(r.errors.size(), 2u) << all(r);
  EXPECT_EQ(r.errors[0].key, "servers.w.headers.\"Bad Name\"");
  EXPECT_EQ(r.errors[1].key, "servers.w.headers.Good");
  EXPECT_THAT(r.errors[1].message, HasSubstr("CR, LF"));
}

TEST_F(ConfigParse, EnvNamesMustNotContainEquals) {
  EXPECT_EQ(one_error("[servers.a]\ncommand = \"x\"\nenv = { \"A=B\" = \"1\" }\n").key,
            "servers.a.env.\"A=B\"");
}

TEST_F(ConfigParse, PrefixMustBeToolNameCharacters) {
  EXPECT_EQ(one_error("[servers.a]\ncommand = \"x\"\nprefix = \"a.b\"\n").key, "servers.a.prefix");
}

TEST_F(ConfigParse, RetryIsSafeAlwaysOrNeverAndRetryCallsStillWorks) {
  const auto retry_of = [](std::string_view line) {
    return ok("[servers.a]\ncommand = \"x\"\n" + std::string(line) + "\n").servers.at(0).retry;
  };
  EXPECT_EQ(retry_of(""), retry_mode::safe);
  EXPECT_EQ(retry_of("retry = \"safe\""), retry_mode::safe);
  EXPECT_EQ(retry_of("retry = \"always\""), retry_mode::always);
  EXPECT_EQ(retry_of("retry = \"never\""), retry_mode::never);
  EXPECT_EQ(retry_of("retry_calls = true"), retry_mode::always);
  EXPECT_EQ(retry_of("retry_calls = false"), retry_mode::never);
  const auto bad = one_error("[servers.a]\ncommand = \"x\"\nretry = \"twice\"\n");
  EXPECT_EQ(bad.key, "servers.a.retry");
  EXPECT_THAT(bad.message, HasSubstr("\"safe\", \"always\" or \"never\""));
  const auto both =
      one_error("[servers.a]\ncommand = \"x\"\nretry = \"safe\"\nretry_calls = true\n");
  EXPECT_THAT(both.message, HasSubstr("not both"));
}

TEST_F(ConfigParse, CallLimitsAreWholeNumbersPerServerAndProfile) {
  const auto c =
      ok("[servers.a]\ncommand = \"x\"\nmax_calls_per_minute = 60\n"
         "max_concurrent_calls = 2\n[profiles.agents]\nmax_calls_per_minute = 5\n");
  EXPECT_EQ(c.servers.at(0).max_calls_per_minute, 60u);
  EXPECT_EQ(c.servers.at(0).max_concurrent_calls, 2u);
  EXPECT_EQ(c.profiles.at(0).max_calls_per_minute, 5u);
  EXPECT_EQ(c.profiles.at(0).max_concurrent_calls, 0u);  // no limit
  const auto negative = one_error("[servers.a]\ncommand = \"x\"\nmax_concurrent_calls = -1\n");
  EXPECT_EQ(negative.key, "servers.a.max_concurrent_calls");
  EXPECT_EQ(negative.line, 3);
  EXPECT_THAT(negative.message, HasSubstr("(got -1)"));
  const auto fraction = one_error("[profiles.p]\nmax_calls_per_minute = 1.5\n");
  EXPECT_EQ(fraction.key, "profiles.p.max_calls_per_minute");
  EXPECT_EQ(fraction.line, 2);
  EXPECT_THAT(fraction.message, HasSubstr("expected an integer"));
}

TEST_F(ConfigParse, AnnotationFiltersAreKnownWordsInToolsListsOnly) {
  const auto c =
      ok("[servers.a]\ncommand = \"x\"\ntools = [\"@read-only\", \"!@destructive\"]\n"
         "[profiles.p]\ntools = [\"@idempotent\", \"@open-world\", \"gh__*\"]\n");
  EXPECT_EQ(c.servers.at(0).tools_shown, (std::vector<std::string>{"@read-only", "!@destructive"}));
  EXPECT_EQ(c.profiles.at(0).tools.size(), 3u);
  const auto typo = one_error("[servers.a]\ncommand = \"x\"\ntools = [\"*\", \"!@destructiv\"]\n");
  EXPECT_EQ(typo.key, "servers.a.tools[1]");
  EXPECT_EQ(typo.line, 3);
  EXPECT_THAT(typo.message, HasSubstr("unknown tool annotation \"@destructiv\""));
  EXPECT_THAT(typo.message, HasSubstr("did you mean \"@destructive\""));
  EXPECT_THAT(one_error("[profiles.p]\ntools = [\"@readonly\"]\n").message,
              HasSubstr("did you mean \"@read-only\""));
  EXPECT_THAT(one_error("[profiles.p]\nprompts = [\"@read-only\"]\n").message,
              HasSubstr("belongs in a tools list only"));
}

TEST_F(ConfigParse, RedactResultsIsPatternsKnownOrOffPerServerAndProfile) {
  using mcp::redaction_mode;
  const auto mode_of = [](std::string_view line) {
    return ok("[servers.a]\ncommand = \"x\"\n" + std::string(line) + "\n")
        .servers.at(0)
        .redact_results;
  };
  EXPECT_EQ(mode_of(""), redaction_mode::patterns);
  EXPECT_EQ(mode_of("redact_results = \"known\""), redaction_mode::known);
  EXPECT_EQ(mode_of("redact_results = \"off\""), redaction_mode::off);
  EXPECT_EQ(mode_of("redact_results = \"patterns\""), redaction_mode::patterns);
  const auto bad = one_error("[servers.a]\ncommand = \"x\"\nredact_results = \"pattern\"\n");
  EXPECT_EQ(bad.key, "servers.a.redact_results");
  EXPECT_THAT(bad.message, HasSubstr("\"patterns\", \"known\" or \"off\""));
  EXPECT_THAT(bad.message, HasSubstr("did you mean \"patterns\""));

  const auto profiles = ok("[profiles.strict]\nredact_results = \"patterns\"\n"
                           "[profiles.trusted]\nredact_results = \"off\"\n[profiles.z]\n")
                            .profiles;
  ASSERT_EQ(profiles.size(), 3u);
  EXPECT_EQ(profiles[0].redact_results, redaction_mode::patterns);
  EXPECT_EQ(profiles[1].redact_results, redaction_mode::off);
  EXPECT_EQ(profiles[2].redact_results, std::nullopt);  // each server's own
  const auto bad_profile = one_error("[profiles.p]\nredact_results = true\n");
  EXPECT_EQ(bad_profile.key, "profiles.p.redact_results");
}

TEST_F(ConfigParse, ConfirmTakesDestructiveAndGlobsOverExposedNames) {
  EXPECT_TRUE(ok("").daemon.confirm.empty());
  EXPECT_EQ(ok("[daemon]\nconfirm = [\"destructive\"]\n").daemon.confirm,
            std::vector<std::string>{"destructive"});
  const auto profiles = ok("[profiles.work]\nconfirm = [\"destructive\", \"github__delete_*\", "
                           "\"db__drop_?\"]\n[profiles.free]\nconfirm = []\n[profiles.z]\n")
                            .profiles;
  ASSERT_EQ(profiles.size(), 3u);
  EXPECT_EQ(profiles[0].confirm, std::vector<std::string>{});  // free: asks nothing
  EXPECT_EQ(profiles[1].confirm,
            (std::vector<std::string>{"destructive", "github__delete_*", "db__drop_?"}));
  EXPECT_EQ(profiles[2].confirm, std::nullopt);  // z: [daemon] confirm

  // Each bad entry is an error naming the file, its line and the entry's key.
  const auto selector = one_error("[profiles.p]\n\nconfirm = [\"@read-only\"]\n");
  EXPECT_EQ(selector.key, "profiles.p.confirm[0]");
  EXPECT_EQ(selector.line, 3);
  EXPECT_EQ(selector.file, "test.toml");
  EXPECT_THAT(selector.message,
              HasSubstr("takes \"destructive\" or globs over exposed tool names"));
  const auto typo = one_error("[daemon]\nconfirm = [\"x\", \"Destructiv\"]\n");
  EXPECT_EQ(typo.key, "daemon.confirm[1]");
  EXPECT_THAT(typo.message, HasSubstr("did you mean \"destructive\""));
  const auto not_a_name = one_error("[profiles.p]\nconfirm = [\"github/delete\"]\n");
  EXPECT_THAT(not_a_name.message, HasSubstr("not a glob over exposed tool names: '/'"));
  EXPECT_THAT(one_error("[profiles.p]\nconfirm = [\"!x\"]\n").message, HasSubstr("negations"));
  EXPECT_EQ(one_error("[profiles.p]\nconfirm = [\"\"]\n").key, "profiles.p.confirm[0]");
  EXPECT_EQ(one_error("[profiles.p]\nconfirm = \"destructive\"\n").key, "profiles.p.confirm");
}

TEST_F(ConfigParse, MaxResultBytesPerDaemonServerAndProfile) {
  const auto c =
      ok("[daemon]\nmax_result_bytes = 5000\n"
         "[servers.a]\ncommand = \"x\"\nmax_result_bytes = 0\n"
         "[servers.b]\ncommand = \"x\"\n"
         "[profiles.p]\nmax_result_bytes = 20000\n[profiles.q]\n");
  EXPECT_EQ(c.daemon.max_result_bytes, 5000u);
  EXPECT_EQ(c.servers.at(0).max_result_bytes, 0u);            // no cap
  EXPECT_EQ(c.servers.at(1).max_result_bytes, std::nullopt);  // the daemon's
  EXPECT_EQ(c.profiles.at(0).max_result_bytes, 20000u);
  EXPECT_EQ(c.profiles.at(1).max_result_bytes, std::nullopt);  // each server's
  EXPECT_EQ(ok("").daemon.max_result_bytes, 100000u);

  const auto negative = one_error("[servers.a]\ncommand = \"x\"\nmax_result_bytes = -1\n");
  EXPECT_EQ(negative.key, "servers.a.max_result_bytes");
  EXPECT_EQ(negative.line, 3);
  const auto text = one_error("[profiles.p]\nmax_result_bytes = \"100k\"\n");
  EXPECT_EQ(text.key, "profiles.p.max_result_bytes");
  EXPECT_EQ(text.line, 2);
  const auto fraction = one_error("[daemon]\nmax_result_bytes = 1.5\n");
  EXPECT_EQ(fraction.key, "daemon.max_result_bytes");
}

TEST_F(ConfigParse, HttpLimitsAreKeysWithGenerousDefaults) {
  const auto d = ok("").daemon;
  EXPECT_EQ(d.http_max_requests_per_session, 64u);
  EXPECT_EQ(d.http_max_sessions, 128u);
  EXPECT_EQ(d.http_max_connections, 256u);
  const auto set = ok("[daemon]\nhttp_max_requests_per_session = 200\nhttp_max_sessions = 8\n"
                      "http_max_connections = 16\n")
                       .daemon;
  EXPECT_EQ(set.http_max_requests_per_session, 200u);
  EXPECT_EQ(set.http_max_sessions, 8u);
  EXPECT_EQ(set.http_max_connections, 16u);
  EXPECT_EQ(one_error("[daemon]\nhttp_max_requests_per_session = 0\n").key,
            "daemon.http_max_requests_per_session");
}

TEST_F(ConfigParse, RootsBecomeFileUris) {
  config c = ok(R"([servers.a]
command = "x"
roots = ["/home/me/My Projects/c++", "file:///already/a%20uri", "~/src", "/tmp/%#?é"]
)");
  ASSERT_EQ(c.servers.size(), 1u);
  EXPECT_THAT(c.servers[0].roots,
              ElementsAre("file:///home/me/My%20Projects/c++", "file:///already/a%20uri",
                          "file:///home/me/src", "file:///tmp/%25%23%3F%C3%A9"));
}

TEST_F(ConfigParse, ShownToolsPromptsAndResources) {
  config c = ok(R"([servers.a]
command = "x"
tools = ["*", "!delete_*"]
prompts = ["review"]
resources = ["file:///pub/*"]
)");
  ASSERT_EQ(c.servers.size(), 1u);
  EXPECT_THAT(c.servers[0].tools_shown, ElementsAre("*", "!delete_*"));
  EXPECT_THAT(c.servers[0].prompts_shown, ElementsAre("review"));
  EXPECT_THAT(c.servers[0].resources_shown, ElementsAre("file:///pub/*"));
  EXPECT_EQ(one_error("[servers.a]\ncommand = \"x\"\ntools = [\"!\"]\n").key, "servers.a.tools[0]");
  EXPECT_EQ(one_error("[servers.a]\ncommand = \"x\"\ntools = \"*\"\n").key, "servers.a.tools");
}

TEST_F(ConfigParse, RelativeRootsAreRejected) {
  config_result r =
      parse("[servers.a]\ncommand = \"x\"\nroots = [\"src\", \"/ok\", \"http://x\"]\n");
  ASSERT_EQ(r.errors.size(), 2u) << all(r);
  EXPECT_EQ(r.errors[0].key, "servers.a.roots[0]");
  EXPECT_EQ(r.errors[1].key, "servers.a.roots[2]");
  EXPECT_THAT(r.errors[0].message, HasSubstr("absolute path or a file:// URI"));
}

TEST_F(ConfigParse, CwdExpandsHomeAndMustBeAbsolute) {
  EXPECT_EQ(ok("[servers.a]\ncommand = \"x\"\ncwd = \"~/work\"\n").servers[0].cwd, "/home/me/work");
  EXPECT_EQ(ok("[servers.a]\ncommand = \"x\"\ncwd = \"~\"\n").servers[0].cwd, "/home/me");
  EXPECT_EQ(one_error("[servers.a]\ncommand = \"x\"\ncwd = \"work\"\n").key, "servers.a.cwd");
  g_env.erase("HOME");
  EXPECT_EQ(one_error("[servers.a]\ncommand = \"x\"\ncwd = \"~/w\"\n").message,
            "starts with ~ but HOME is not set");
}

TEST_F(ConfigParse, VariablesAreExpandedInEveryStringKey) {
  g_env["BIN"] = "/opt/bin";
  g_env["TOKEN"] = "t0k";
  g_env["DIR"] = "/data";
  g_env["HOST"] = "example.com";
  config c = ok(R"([servers.a]
command = "${BIN}/server"
args = ["--token=${TOKEN}", "$$HOME"]
env = { KEY = "${TOKEN}" }
cwd = "${DIR}"
roots = ["${DIR}/sub dir"]

[servers.b]
type = "http"
url = "https://${HOST}/mcp"
headers = { Authorization = "Bearer ${TOKEN}" }
)");
  ASSERT_EQ(c.servers.size(), 2u);
  const server_config& a = c.servers[0];
  EXPECT_EQ(a.command, "/opt/bin/server");
  EXPECT_THAT(a.args, ElementsAre("--token=t0k", "$HOME"));
  EXPECT_EQ(a.env.at("KEY"), "t0k");
  EXPECT_EQ(a.cwd, "/data");
  EXPECT_THAT(a.roots, ElementsAre("file:///data/sub%20dir"));
  EXPECT_EQ(c.servers[1].url, "https://example.com/mcp");
  EXPECT_EQ(c.servers[1].headers.at("Authorization"), "Bearer t0k");
}

TEST_F(ConfigParse, SocketIsNotVariableExpanded) {
  config c = ok("daemon.socket = \"/run/${X}\"\n");
  EXPECT_EQ(c.daemon.socket, "/run/${X}");
}

TEST_F(ConfigParse, UndefinedVariableWarnsWithKeyAndExpandsToEmpty) {
  config_result r = parse("[servers.x]\ncommand = \"x\"\nenv = { API_KEY = \"${API_KEY}\" }\n");
  ASSERT_TRUE(r.value) << all(r);
  EXPECT_EQ(r.value->servers[0].env.at("API_KEY"), "");
  EXPECT_THAT(r.warnings, ElementsAre("servers.x.env.API_KEY: ${API_KEY} is not set; using \"\""));
}

TEST_F(ConfigParse, UnterminatedReferenceIsErrorNamingKey) {
  config_error e = one_error("[servers.x]\ncommand = \"x\"\nargs = [\"a\", \"${OOPS\"]\n");
  EXPECT_EQ(e.key, "servers.x.args[1]");
  EXPECT_EQ(e.line, 3);
  EXPECT_THAT(e.message, HasSubstr("unterminated"));
}

TEST_F(ConfigParse, InvalidReferenceIsError) {
  EXPECT_THAT(one_error("[servers.x]\ncommand = \"${A:=b}\"\n").message,
              HasSubstr("invalid variable reference"));
  EXPECT_EQ(one_error("[servers.x]\ncommand = \"${}\"\n").key, "servers.x.command");
}

class ConfigExpand : public ConfigTest {
 protected:
  static std::string expand(std::string_view in, std::vector<std::string>* undefined = nullptr) {
    return expand_vars(in, fake_env, undefined);
  }
};

TEST_F(ConfigExpand, SubstitutesVariables) {
  g_env["A"] = "alpha";
  g_env["B_2"] = "beta";
  EXPECT_EQ(expand("${A}"), "alpha");
  EXPECT_EQ(expand("x${A}y${B_2}z"), "xalphaybetaz");
  EXPECT_EQ(expand("no vars"), "no vars");
  EXPECT_EQ(expand(""), "");
}

TEST_F(ConfigExpand, DefaultUsedWhenUnsetOrEmpty) {
  g_env["SET"] = "v";
  g_env["EMPTY"] = "";
  std::vector<std::string> undefined;
  EXPECT_EQ(expand("${SET:-d}", &undefined), "v");
  EXPECT_EQ(expand("${UNSET:-d}", &undefined), "d");
  EXPECT_EQ(expand("${EMPTY:-d}", &undefined), "d");
  EXPECT_EQ(expand("${UNSET:-}", &undefined), "");
  EXPECT_EQ(expand("${UNSET:-a b:-c}", &undefined), "a b:-c");
  EXPECT_THAT(undefined, IsEmpty());
}

TEST_F(ConfigExpand, DefaultMayReferenceAnotherVariable) {
  g_env["FALLBACK"] = "fb";
  EXPECT_EQ(expand("${UNSET:-${FALLBACK}}/x"), "fb/x");
  std::vector<std::string> undefined;
  EXPECT_EQ(expand("${UNSET:-${ALSO_UNSET}}", &undefined), "");
  EXPECT_THAT(undefined, ElementsAre("ALSO_UNSET"));
}

TEST_F(ConfigParse, DeeplyNestedDefaultsAreRejected) {
  std::string value = "x";
  for (int i = 0; i < 20; ++i) value = "${U" + std::to_string(i) + ":-" + value + "}";
  EXPECT_THAT(one_error("[servers.a]\ncommand = \"" + value + "\"\n").message,
              HasSubstr("nested too deeply"));
}

TEST_F(ConfigExpand, DoubleDollarIsLiteralDollar) {
  g_env["A"] = "alpha";
  EXPECT_EQ(expand("$$"), "$");
  EXPECT_EQ(expand("$${A}"), "${A}");
  EXPECT_EQ(expand("cost: $$5"), "cost: $5");
  EXPECT_EQ(expand("$$$${A}"), "$${A}");
}

TEST_F(ConfigExpand, LoneDollarIsKept) {
  EXPECT_EQ(expand("$"), "$");
  EXPECT_EQ(expand("a$b"), "a$b");
  EXPECT_EQ(expand("^x$"), "^x$");
  EXPECT_EQ(expand("$HOME"), "$HOME");
}

TEST_F(ConfigExpand, UnsetVariableExpandsToEmptyAndIsReported) {
  std::vector<std::string> undefined;
  EXPECT_EQ(expand("[${NOPE}][${NOPE}][${NADA}]", &undefined), "[][][]");
  EXPECT_THAT(undefined, ElementsAre("NOPE", "NADA"));
  EXPECT_EQ(expand("${NOPE}", nullptr), "");  // a null sink is allowed
}

TEST_F(ConfigExpand, SetButEmptyVariableIsNotUndefined) {
  g_env["EMPTY"] = "";
  std::vector<std::string> undefined;
  EXPECT_EQ(expand("[${EMPTY}]", &undefined), "[]");
  EXPECT_THAT(undefined, IsEmpty());
}

TEST_F(ConfigExpand, UnterminatedReferenceIsKeptLiterally) {
  g_env["A"] = "alpha";
  EXPECT_EQ(expand("${A}-${A"), "alpha-${A");
}

TEST_F(ConfigExpand, ProcessEnvReadsTheEnvironment) {
  env_guard g("MCPMUX_TEST_VAR", "from-env");
  env_guard u("MCPMUX_TEST_UNSET", nullptr);
  EXPECT_EQ(process_env("MCPMUX_TEST_VAR"), "from-env");
  EXPECT_EQ(process_env("MCPMUX_TEST_UNSET"), std::nullopt);
  EXPECT_EQ(expand_vars("${MCPMUX_TEST_VAR}", process_env, nullptr), "from-env");
}

TEST(ConfigError, ToStringOmitsMissingParts) {
  EXPECT_EQ((config_error{"c.toml", 7, "servers.a.url", "bad"}).to_string(),
            "c.toml:7: servers.a.url: bad");
  EXPECT_EQ((config_error{"c.toml", 0, "servers.a.url", "bad"}).to_string(),
            "c.toml: servers.a.url: bad");
  EXPECT_EQ((config_error{"c.toml", 3, "", "syntax"}).to_string(), "c.toml:3: syntax");
  EXPECT_EQ((config_error{"c.toml", 0, "", "cannot open"}).to_string(), "c.toml: cannot open");
}

TEST(ConfigServerType, ToStringNamesEachType) {
  EXPECT_EQ(to_string(server_type::stdio), "stdio");
  EXPECT_EQ(to_string(server_type::http), "http");
  EXPECT_EQ(to_string(server_type::sse), "sse");
}

class ConfigTimeout : public ConfigTest {};

TEST_F(ConfigTimeout, ServerOverridesDaemon) {
  daemon_config d;
  d.timeout = 1000ms;
  server_config s;
  EXPECT_EQ(effective_timeout(s, d, fake_env), 1000ms);
  s.timeout = 250ms;
  EXPECT_EQ(effective_timeout(s, d, fake_env), 250ms);
  s.timeout = 0ms;  // 0 = no timeout, still an explicit choice that beats the daemon's
  EXPECT_EQ(effective_timeout(s, d, fake_env), 0ms);
}

TEST_F(ConfigTimeout, EnvOverridesServerAndDaemon) {
  daemon_config d;
  server_config s;
  s.timeout = 250ms;
  g_env["MCPMUX_TIMEOUT_MS"] = "5000";
  EXPECT_EQ(effective_timeout(s, d, fake_env), 5000ms);
  g_env["MCPMUX_TIMEOUT_MS"] = "0";
  EXPECT_EQ(effective_timeout(s, d, fake_env), 0ms);
}

TEST_F(ConfigTimeout, InvalidEnvIsIgnored) {
  daemon_config d;
  server_config s;
  s.timeout = 250ms;
  for (const char* bad : {"", "-1", "abc", "12ms", " 5", "+5", "1.5"}) {
    g_env["MCPMUX_TIMEOUT_MS"] = bad;
    EXPECT_EQ(effective_timeout(s, d, fake_env), 250ms) << "MCPMUX_TIMEOUT_MS=" << bad;
  }
}

TEST_F(ConfigTimeout, HugeEnvIsClamped) {
  g_env["MCPMUX_TIMEOUT_MS"] = "99999999999999999999999";
  EXPECT_EQ(effective_timeout(server_config{}, daemon_config{}, fake_env), 2147483647ms);
}

TEST_F(ConfigTimeout, DefaultLookupReadsProcessEnvironment) {
  env_guard g("MCPMUX_TIMEOUT_MS", "42");
  EXPECT_EQ(effective_timeout(server_config{}, daemon_config{}), 42ms);
}

TEST_F(ConfigTimeout, TimeoutAboveCapIsRejected) {
  EXPECT_EQ(one_error("daemon.timeout_ms = 2147483648").key, "daemon.timeout_ms");
  EXPECT_EQ(ok("daemon.timeout_ms = 2147483647").daemon.timeout, 2147483647ms);
}

class ConfigPaths : public ConfigTest {};

TEST_F(ConfigPaths, ResolveConfigPathPrecedence) {
  env_guard home("HOME", "/home/tester");
  env_guard xdg("XDG_CONFIG_HOME", nullptr);
  env_guard cfg("MCPMUX_CONFIG", nullptr);
  EXPECT_EQ(resolve_config_path(""), "/home/tester/.config/mcpmux/config.toml");
  {
    env_guard x("XDG_CONFIG_HOME", "/xdg");
    EXPECT_EQ(resolve_config_path(""), "/xdg/mcpmux/config.toml");
    env_guard rel("XDG_CONFIG_HOME", "relative");  // the XDG spec says to ignore relative paths
    EXPECT_EQ(resolve_config_path(""), "/home/tester/.config/mcpmux/config.toml");
    env_guard c("MCPMUX_CONFIG", "/env/config.toml");
    EXPECT_EQ(resolve_config_path(""), "/env/config.toml");
    EXPECT_EQ(resolve_config_path("/flag/config.toml"), "/flag/config.toml");
    EXPECT_EQ(resolve_config_path("~/flag.toml"), "/home/tester/flag.toml");
  }
}

TEST_F(ConfigPaths, ResolveSocketPathPrecedence) {
  env_guard sock("MCPMUX_SOCKET", nullptr);
  env_guard run("XDG_RUNTIME_DIR", nullptr);
  const std::string conventional = "/run/user/" + std::to_string(::getuid());
  const bool has_run_user = check_private_dir(conventional).ok();
  EXPECT_EQ(resolve_socket_path("", nullptr),
            has_run_user ? conventional + "/mcpmux/mcpmux.sock"
                         : "/tmp/mcpmux-" + std::to_string(::getuid()) + "/mcpmux.sock");
  EXPECT_EQ(locate_socket("", nullptr).origin,
            has_run_user ? socket_origin::runtime_dir : socket_origin::tmp);
  env_guard run2("XDG_RUNTIME_DIR", "/run/user/1000");
  EXPECT_EQ(resolve_socket_path("", nullptr), "/run/user/1000/mcpmux/mcpmux.sock");
  daemon_config d;
  EXPECT_EQ(resolve_socket_path("", &d), "/run/user/1000/mcpmux/mcpmux.sock");
  EXPECT_TRUE(locate_socket("", &d).is_default());
  // What an agent's bare environment sees: no $XDG_RUNTIME_DIR.
  EXPECT_NE(resolve_socket_path("", &d, agent_default_env), "/run/user/1000/mcpmux/mcpmux.sock");
  d.socket = "/cfg/mux.sock";
  EXPECT_EQ(resolve_socket_path("", &d), "/cfg/mux.sock");
  EXPECT_TRUE(locate_socket("", &d).is_default());
  env_guard sock2("MCPMUX_SOCKET", "/env/mux.sock");
  EXPECT_EQ(resolve_socket_path("", &d), "/env/mux.sock");
  EXPECT_FALSE(locate_socket("", &d).is_default());
  EXPECT_EQ(resolve_socket_path("/flag/mux.sock", &d), "/flag/mux.sock");
  EXPECT_EQ(locate_socket("/flag/mux.sock", &d).origin, socket_origin::flag);
}

TEST_F(ConfigPaths, AgentDefaultEnvironmentHasSixVariables) {
  env_guard run("XDG_RUNTIME_DIR", "/run/user/1000");
  env_guard home("HOME", "/home/tester");
  EXPECT_EQ(agent_default_env("HOME"), std::optional<std::string>("/home/tester"));
  EXPECT_EQ(agent_default_env("XDG_RUNTIME_DIR"), std::nullopt);
  EXPECT_EQ(agent_default_env("MCPMUX_SOCKET"), std::nullopt);
}

TEST_F(ConfigPaths, PrivateDirectories) {
  temp_dir t;
  const std::string mine = t.path() + "/mine";
  ASSERT_EQ(::mkdir(mine.c_str(), 0700), 0);
  EXPECT_EQ(error_text(check_private_dir(mine)), "");
  ASSERT_EQ(::chmod(mine.c_str(), 0755), 0);
  EXPECT_THAT(error_text(check_private_dir(mine)), HasSubstr("has mode 0755"));
  // refused, and its mode left as it was
  EXPECT_THAT(error_text(make_private_dir(mine)), HasSubstr("has mode 0755"));
  struct stat st {};
  ASSERT_EQ(::stat(mine.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);

  const std::string link = t.path() + "/link";
  ASSERT_EQ(::chmod(mine.c_str(), 0700), 0);
  ASSERT_EQ(::symlink(mine.c_str(), link.c_str()), 0);
  EXPECT_THAT(error_text(check_private_dir(link)), HasSubstr("symbolic link"));
  EXPECT_THAT(error_text(make_private_dir(link)), HasSubstr("symbolic link"));
  EXPECT_THAT(error_text(check_private_dir(t.path() + "/none")), HasSubstr("No such file"));

  const std::string made = t.path() + "/a/b/c";
  const mode_t umask = ::umask(0077);
  EXPECT_EQ(error_text(make_private_dir(made)), "");
  ::umask(umask);
  ASSERT_EQ(::lstat(made.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(error_text(make_private_dir(made)), "");  // and found again

  if (::getuid() == 0) {
    ASSERT_EQ(::chown(mine.c_str(), 65534, 65534), 0);
    EXPECT_THAT(error_text(check_private_dir(mine)), HasSubstr("belongs to uid 65534"));
  }
}

// base/files: a failure comes back as a result whose words say what could not be done; a missing
// file is a value for read_text_file_if_exists, a failure for read_text_file.
TEST(Files, ReadsAndWritesFailSayingWhy) {
  temp_dir t;
  const std::string none = t.path() + "/none.toml";
  EXPECT_EQ(error_text(read_text_file(none, 100)), "cannot open: No such file or directory");
  auto absent = read_text_file_if_exists(none, 100);
  ASSERT_TRUE(absent) << absent.error().message;
  EXPECT_EQ(*absent, std::nullopt);
  EXPECT_EQ(error_text(read_text_file(t.path(), 100)), "not a regular file");
  EXPECT_EQ(error_text(read_text_file_if_exists(t.path(), 100)), "not a regular file");

  ASSERT_EQ(error_text(write_file_atomically(none, "0123456789")), "");
  EXPECT_EQ(read_text_file_if_exists(none, 100)->value_or(""), "0123456789");
  EXPECT_EQ(error_text(read_text_file(none, 9)), "file is larger than 9 bytes");

  // A directory cannot be made under a file: the failure names the directory.
  EXPECT_EQ(error_text(make_dirs(none + "/sub", 0700)),
            "cannot create directory " + none + "/sub: Not a directory");
  EXPECT_EQ(error_text(write_file_atomically(none + "/sub/x", "y")),
            "cannot create directory " + none + "/sub: Not a directory");
  EXPECT_EQ(read_text_file(none, 100).value(), "0123456789");  // left as it was
}

TEST_F(ConfigPaths, DaemonRecord) {
  temp_dir t;
  env_guard home("HOME", t.path().c_str());
  env_guard state("XDG_STATE_HOME", "/elsewhere");  // the record follows the home alone
  EXPECT_EQ(daemon_record_path(), t.path() + "/.local/state/mcpmux/daemon-socket");
  EXPECT_EQ(read_daemon_record(), std::nullopt);
  ASSERT_EQ(error_text(write_daemon_record("/run/user/7/mcpmux/mcpmux.sock")), "");
  EXPECT_EQ(read_daemon_record(), std::optional<std::string>("/run/user/7/mcpmux/mcpmux.sock"));
  struct stat st {};
  ASSERT_EQ(::stat(daemon_record_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  remove_daemon_record("/another/daemon.sock");  // a newer daemon's record stays
  EXPECT_TRUE(read_daemon_record().has_value());
  remove_daemon_record("/run/user/7/mcpmux/mcpmux.sock");
  EXPECT_EQ(read_daemon_record(), std::nullopt);

  // A symlink in its place, or text that is not an absolute path, is no record.
  const std::string elsewhere = t.write("elsewhere", "/x/mcpmux.sock\n");
  ASSERT_EQ(::symlink(elsewhere.c_str(), daemon_record_path().c_str()), 0);
  EXPECT_EQ(read_daemon_record(), std::nullopt);
  ::unlink(daemon_record_path().c_str());
  t.write(".local/state/mcpmux/daemon-socket", "relative.sock\n");
  EXPECT_EQ(read_daemon_record(), std::nullopt);
}

// /run/user/UID is taken only when it is the user's own private directory. Checked in a mount
// namespace of a child (root only), with a tmpfs on /run/user.
TEST_F(ConfigPaths, RunUserOnlyWhenItIsPrivate) {
  if (::getuid() != 0) GTEST_SKIP() << "needs root for a mount namespace";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/run/user", "tmpfs", 0, "mode=0755") != 0)
      ::_exit(255);  // no mount namespace here: skipped
    int failures = 0;
    auto expect = [&](bool ok) { failures = failures * 2 + (ok ? 0 : 1); };
    const std::string run = "/run/user/0";
    const std::string tmp = "/tmp/mcpmux-0/mcpmux.sock";
    expect(::mkdir(run.c_str(), 0700) == 0);
    expect(runtime_dir(agent_default_env) == run);
    expect(resolve_socket_path("", nullptr, agent_default_env) == run + "/mcpmux/mcpmux.sock");
    ::chmod(run.c_str(), 0755);
    expect(runtime_dir(agent_default_env) == std::nullopt);
    expect(resolve_socket_path("", nullptr, agent_default_env) == tmp);
    ::chmod(run.c_str(), 0700);
    ::chown(run.c_str(), 65534, 65534);
    expect(runtime_dir(agent_default_env) == std::nullopt);
    ::rmdir(run.c_str());
    ::mkdir("/run/user/real", 0700);
    ::symlink("/run/user/real", run.c_str());
    expect(runtime_dir(agent_default_env) == std::nullopt);
    ::_exit(failures);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 255) GTEST_SKIP() << "no mount namespace";
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "failed checks, as bits from the last: " << WEXITSTATUS(status);
}

TEST_F(ConfigPaths, CacheDirFollowsXdg) {
  env_guard home("HOME", "/home/tester");
  {
    env_guard xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(cache_dir(), "/home/tester/.cache/mcpmux");
  }
  env_guard xdg("XDG_CACHE_HOME", "/var/cache/me");
  EXPECT_EQ(cache_dir(), "/var/cache/me/mcpmux");
}

class ConfigFile : public ConfigTest {};

TEST_F(ConfigFile, LoadsFileAndUsesPathAsSource) {
  temp_dir dir;
  const std::string path = dir.write("config.toml", "[servers.a]\ncommand = \"x\"\n");
  config_result r = load_config_file(path, fake_env);
  ASSERT_TRUE(r.value);
  EXPECT_EQ(r.value->source, path);
  ASSERT_EQ(r.value->servers.size(), 1u);
  EXPECT_EQ(r.value->servers[0].name, "a");
}

TEST_F(ConfigFile, ErrorsNameTheFile) {
  temp_dir dir;
  const std::string path = dir.write("bad.toml", "\n[daemon]\nlog_level = 3\n");
  config_result r = load_config_file(path, fake_env);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(),
            path + ":3: daemon.log_level: expected a string, got an integer");
}

TEST_F(ConfigFile, MissingFileIsErrorWithPathAndReason) {
  temp_dir dir;
  const std::string path = dir.path() + "/nope.toml";
  config_result r = load_config_file(path, fake_env);
  EXPECT_FALSE(r.value);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, path);
  EXPECT_EQ(r.errors[0].line, 0);
  EXPECT_EQ(r.errors[0].message, "cannot open: No such file or directory");
}

TEST_F(ConfigFile, DirectoryIsNotAConfigFile) {
  temp_dir dir;
  config_result r = load_config_file(dir.path(), fake_env);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].message, "not a regular file");
}

TEST_F(ConfigFile, LoadConfigUsesEmbeddedDefaultWhenDefaultLocationIsMissing) {
  temp_dir dir;
  env_guard cfg("MCPMUX_CONFIG", nullptr);
  env_guard xdg("XDG_CONFIG_HOME", dir.path().c_str());
  config_result r = load_config("", fake_env);
  ASSERT_TRUE(r.value);
  EXPECT_EQ(r.value->source, "<default>");
  EXPECT_EQ(r.value->servers.size(), 2u);
}

TEST_F(ConfigFile, LoadConfigReadsDefaultLocationWhenPresent) {
  temp_dir dir;
  env_guard cfg("MCPMUX_CONFIG", nullptr);
  env_guard xdg("XDG_CONFIG_HOME", dir.path().c_str());
  const std::string path = dir.write("mcpmux/config.toml", "daemon.log_level = \"warn\"\n");
  config_result r = load_config("", fake_env);
  ASSERT_TRUE(r.value);
  EXPECT_EQ(r.value->source, path);
  EXPECT_EQ(r.value->daemon.log_level, "warn");
  EXPECT_THAT(r.value->servers, IsEmpty());
}

TEST_F(ConfigFile, LoadConfigFailsForMissingExplicitPath) {
  temp_dir dir;
  env_guard cfg("MCPMUX_CONFIG", nullptr);
  const std::string missing = dir.path() + "/missing.toml";
  config_result r = load_config(missing, fake_env);
  EXPECT_FALSE(r.value);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, missing);
}

TEST_F(ConfigFile, LoadConfigFailsForMissingPathFromEnv) {
  temp_dir dir;
  const std::string missing = dir.path() + "/missing.toml";
  env_guard cfg("MCPMUX_CONFIG", missing.c_str());
  config_result r = load_config("", fake_env);
  EXPECT_FALSE(r.value);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].file, missing);
}

TEST_F(ConfigFile, ExplicitPathBeatsEnv) {
  temp_dir dir;
  const std::string path = dir.write("flag.toml", "daemon.max_tool_name = 99\n");
  env_guard cfg("MCPMUX_CONFIG", (dir.path() + "/env.toml").c_str());
  config_result r = load_config(path, fake_env);
  ASSERT_TRUE(r.value);
  EXPECT_EQ(r.value->daemon.max_tool_name, 99u);
}

TEST_F(ConfigTest, EmbeddedDefaultParsesCleanlyWithBothServers) {
  config_result r = parse_config(default_config_text(), "<default>", fake_env);
  ASSERT_TRUE(r.value) << (r.errors.empty() ? "" : r.errors[0].to_string());
  EXPECT_THAT(r.warnings, IsEmpty());
  const config& c = *r.value;
  EXPECT_EQ(c.daemon.timeout, daemon_config{}.timeout);
  EXPECT_EQ(c.daemon.tool_separator, daemon_config{}.tool_separator);
  EXPECT_EQ(c.daemon.max_tool_name, daemon_config{}.max_tool_name);
  EXPECT_EQ(c.daemon.max_message_bytes, daemon_config{}.max_message_bytes);
  EXPECT_EQ(c.daemon.max_client_queue_bytes, daemon_config{}.max_client_queue_bytes);
  EXPECT_EQ(c.daemon.max_instructions_bytes, daemon_config{}.max_instructions_bytes);
  ASSERT_EQ(c.servers.size(), 2u);
  EXPECT_EQ(c.servers[0].name, "everything");
  EXPECT_EQ(c.servers[0].type, server_type::stdio);
  EXPECT_EQ(c.servers[0].command, "npx");
  EXPECT_THAT(c.servers[0].args, ElementsAre("-y", "@modelcontextprotocol/server-everything"));
  EXPECT_EQ(c.servers[1].name, "memory");
  EXPECT_EQ(c.servers[1].command, "npx");
  EXPECT_THAT(c.servers[1].args, ElementsAre("-y", "@modelcontextprotocol/server-memory"));
}

TEST_F(ConfigTest, EmbeddedDefaultDocumentsEveryKey) {
  // Every key the loader takes, as a whole word (`trust` is not found in `trusted`).
  const std::string_view text = default_config_text();
  const auto documented = [&](std::string_view key) {
    const auto word = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    };
    for (auto at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1))
      if ((at == 0 || !word(text[at - 1])) &&
          (at + key.size() == text.size() || !word(text[at + key.size()])))
        return true;
    return false;
  };
  for (const char* table : {"daemon", "server", "oauth", "profile"})
    for (auto key : config_keys(table)) EXPECT_TRUE(documented(key)) << table << "." << key;
  for (const char* also : {"[profiles.", "MCPMUX_TIMEOUT_MS", "${VAR:-default}", "${secret:", "$$"})
    EXPECT_NE(text.find(also), std::string_view::npos) << also;
}

}  // namespace
}  // namespace mcpmux

namespace mcpmux {
namespace {

// ${secret:NAME}: resolved from the secrets file, registered for redaction; every way it can go
// wrong is an error naming the key.
TEST_F(ConfigParse, NamedHttpTokensAreLongDistinctAndRedacted) {
  temp_dir dir;
  const std::string file = dir.path() + "/secrets.json";
  env_guard where("MCPMUX_SECRETS_FILE", file.c_str());
  ASSERT_EQ(error_text(write_secrets(file, {{"CI", "ci-token-0123456789abcdef0123456789"}})), "");
  config c = ok(R"([daemon]
http_tokens = { editor = "ed-token-0123456789abcdef0123456789", ci = "${secret:CI}" }
)");
  EXPECT_EQ(c.daemon.http_tokens.at("ci"), "ci-token-0123456789abcdef0123456789");
  EXPECT_EQ(c.daemon.http_tokens.at("editor"), "ed-token-0123456789abcdef0123456789");
  EXPECT_EQ(redact("Bearer ed-token-0123456789abcdef0123456789"), "Bearer [redacted]");
  EXPECT_THAT(one_error("[daemon]\nhttp_tokens = { a = \"short\" }\n").message,
              HasSubstr("at least 32 characters"));
  EXPECT_THAT(
      one_error("[daemon]\nhttp_tokens = { \"a b\" = \"0123456789abcdef0123456789abcdef\" }\n")
          .message,
      HasSubstr("[A-Za-z0-9_-]"));
  EXPECT_THAT(one_error("[daemon]\nhttp_tokens = { a = \"0123456789abcdef0123456789abcdef\", "
                        "b = \"0123456789abcdef0123456789abcdef\" }\n")
                  .message,
              HasSubstr("the same token"));
  EXPECT_EQ(one_error("[daemon]\nhttp_tokens = \"x\"\n").key, "daemon.http_tokens");
}

TEST_F(ConfigParse, SecretsComeFromThePrivateSecretsFile) {
  temp_dir dir;
  const std::string file = dir.path() + "/secrets.json";
  env_guard where("MCPMUX_SECRETS_FILE", file.c_str());
  ASSERT_EQ(error_text(write_secrets(file, {{"API_KEY", "sk-live-0123456789"}, {"short", "abc"}})),
            "");
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  config c = ok(R"([servers.a]
command = "x"
env = { KEY = "${secret:API_KEY}", BOTH = "k=${secret:API_KEY};u=${USER:-me}" }
)");
  EXPECT_EQ(c.servers[0].env.at("KEY"), "sk-live-0123456789");
  EXPECT_EQ(c.servers[0].env.at("BOTH"), "k=sk-live-0123456789;u=me");
  // Resolved values are redacted from text shown to people; short ones are not registered.
  EXPECT_EQ(redact("token sk-live-0123456789 sent"), "token [redacted] sent");
  ok("[servers.a]\ncommand = \"${secret:short}\"\n");
  EXPECT_EQ(redact("abc"), "abc");

  EXPECT_THAT(one_error("[servers.a]\ncommand = \"x\"\nargs = [\"${secret:NOPE}\"]\n").message,
              HasSubstr("(set it with: mcpmux secret set NOPE)"));
  EXPECT_EQ(one_error("[servers.a]\ncommand = \"x\"\nargs = [\"${secret:NOPE}\"]\n").key,
            "servers.a.args[0]");
  EXPECT_THAT(one_error("[servers.a]\ncommand = \"${secret:a b}\"\n").message,
              HasSubstr("invalid secret reference"));
  ::chmod(file.c_str(), 0644);  // readable by others: refused, not read
  EXPECT_THAT(one_error("[servers.a]\ncommand = \"${secret:API_KEY}\"\n").message,
              HasSubstr("chmod 600"));
  ::chmod(file.c_str(), 0600);
  std::ofstream(file) << "[1, 2]";
  EXPECT_THAT(one_error("[servers.a]\ncommand = \"${secret:API_KEY}\"\n").message,
              HasSubstr("not a JSON object"));
  // No file at all: the secret is simply not there.
  std::filesystem::remove(file);
  EXPECT_THAT(one_error("[servers.a]\ncommand = \"${secret:API_KEY}\"\n").message,
              HasSubstr("no secret named"));
}

TEST_F(ConfigParse, HttpAuthIsATokenUnlessOptedOut) {
  EXPECT_FALSE(ok("[daemon]\nhttp = \"127.0.0.1:9000\"\n").daemon.http_auth_none);
  EXPECT_TRUE(ok("[daemon]\nhttp_auth = \"none\"\n").daemon.http_auth_none);
  EXPECT_FALSE(ok("[daemon]\nhttp_auth = \"token\"\n").daemon.http_auth_none);
  EXPECT_THAT(one_error("[daemon]\nhttp_auth = \"off\"\n").message,
              HasSubstr("\"token\" or \"none\""));
}

TEST(Redact, ReplacesEveryRegisteredValueLongestFirst) {
  add_secret("redact-me-please");
  add_secret("redact-me-please-too");
  add_secret("tiny");  // under min_secret_bytes: not registered
  EXPECT_EQ(redact("a redact-me-please-too b redact-me-please c tiny"),
            "a [redacted] b [redacted] c tiny");
  std::string line = "no secret here";
  EXPECT_FALSE(redact_in_place(line));
  EXPECT_EQ(line, "no secret here");
}

}  // namespace
}  // namespace mcpmux
