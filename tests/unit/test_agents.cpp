// Moving a client onto mcpmux and back, as text: finding the server list in JSON with comments,
// the entry that replaces it, and a round trip that gives back every byte.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/object.hpp>

#include "config/agents.hpp"
#include "config/agents_codex.hpp"
#include "config/config.hpp"
#include "config/jsonc_span.hpp"

namespace mcpmux {
namespace {

using ::testing::HasSubstr;

// A VS Code settings.json as people have them: comments, trailing commas, unknown settings.
constexpr std::string_view vscode_settings = R"({
  // editor
  "editor.fontSize": 14,
  /* MCP servers, by hand */
  "mcp": {
    "servers": {
      "fs": { "type": "stdio", "command": "npx", "args": ["-y", "@mcp/fs", "/tmp"], }, // fs
      "remote": { "type": "http", "url": "https://x.example/mcp" },
    },
    "discovery": true,
  },
  "files.exclude": { "**/.git": true },
}
)";

TEST(Jsonc, FindsTheValueAtAPathThroughCommentsAndTrailingCommas) {
  auto f = jsonc::find(vscode_settings, {"mcp", "servers"});
  ASSERT_EQ(f.error, "");
  ASSERT_TRUE(f.value);
  const auto text = vscode_settings.substr(f.value->begin, f.value->end - f.value->begin);
  EXPECT_EQ(text.front(), '{');
  EXPECT_EQ(text.back(), '}');
  EXPECT_THAT(std::string(text), HasSubstr("\"fs\""));
  EXPECT_THAT(std::string(text), Not(HasSubstr("discovery")));
  EXPECT_FALSE(jsonc::find(vscode_settings, {"mcpServers"}).value);  // missing: no error
  EXPECT_EQ(jsonc::find(vscode_settings, {"mcpServers"}).error, "");
  // A key with dots is one key.
  auto dotted =
      jsonc::find(R"({"mcp.servers": {"a": 1}, "x": [1, 2.5e3, "s\"", null]})", {"mcp.servers"});
  ASSERT_TRUE(dotted.value);
  EXPECT_EQ(dotted.value->end - dotted.value->begin, 8u);
}

TEST(Jsonc, RefusesWhatIsNotJsonWithWhere) {
  for (std::string_view bad :
       {R"({"a": 1,,})", R"({"a": })", R"({"a": 1} x)", R"({"a": /* })", R"({"a": tru})",
        R"({"a": "unterminated})", R"({"a" 1})", "", R"([1 2])"}) {
    auto f = jsonc::find(bad, {"a"});
    EXPECT_THAT(f.error, HasSubstr("line 1, column")) << bad;
    EXPECT_FALSE(f.value) << bad;
  }
  std::string deep(300, '[');
  EXPECT_THAT(jsonc::find(deep, {}).error, HasSubstr("nested too deeply"));
}

TEST(Agents, AdoptThenRestoreGivesBackEveryByte) {
  const auto file = agent_file_for_path("/home/me/.config/Code/User/settings.json");
  EXPECT_EQ(file.shape, agent_shape::vscode);
  auto list = locate_servers(vscode_settings, file);
  ASSERT_EQ(list.error, "");
  ASSERT_TRUE(list.span);
  EXPECT_FALSE(list.adopted);
  const auto original =
      std::string(vscode_settings.substr(list.span->begin, list.span->end - list.span->begin));

  const auto indent = jsonc::indentation_at(vscode_settings, list.span->begin);
  EXPECT_EQ(indent, "    ");
  const auto entry = mcpmux_entry(file, "/usr/bin/mcpmux", "", indent);
  const auto adopted = replace_span(vscode_settings, *list.span, entry);
  EXPECT_THAT(adopted, HasSubstr("// editor"));
  EXPECT_THAT(adopted, HasSubstr("\"discovery\": true,"));
  EXPECT_THAT(adopted, HasSubstr("\"type\": \"stdio\""));
  EXPECT_THAT(adopted, HasSubstr("\"command\": \"/usr/bin/mcpmux\""));
  EXPECT_THAT(adopted, Not(HasSubstr("@mcp/fs")));

  // The rewritten file is still JSONC, and is seen as adopted: a second adopt is a no-op.
  auto again = locate_servers(adopted, file);
  ASSERT_EQ(again.error, "");
  ASSERT_TRUE(again.span);
  EXPECT_TRUE(again.adopted);

  // Restoring the kept list gives back the very bytes.
  EXPECT_EQ(replace_span(adopted, *again.span, original), vscode_settings);

  const auto diff = line_diff(vscode_settings, adopted);
  EXPECT_THAT(diff, HasSubstr("-      \"fs\""));
  EXPECT_THAT(diff, HasSubstr("+      \"mcpmux\": {"));
  EXPECT_EQ(line_diff(adopted, adopted), "");
}

TEST(Agents, ClaudeDesktopShapeAndProfile) {
  constexpr std::string_view desktop =
      R"({"mcpServers":{"git":{"command":"uvx","args":["mcp-server-git"]}},"globalShortcut":"Ctrl+Space"})";
  const auto file = agent_file_for_path("/home/me/.config/Claude/claude_desktop_config.json");
  EXPECT_EQ(file.shape, agent_shape::mcp_servers);
  auto list = locate_servers(desktop, file);
  ASSERT_TRUE(list.span);
  const auto adopted =
      replace_span(desktop, *list.span, mcpmux_entry(file, "/opt/mcpmux", "work", ""));
  EXPECT_THAT(adopted, HasSubstr(R"("args": ["connect","--spawn","--profile","work"])"));
  EXPECT_THAT(adopted, Not(HasSubstr("\"type\"")));
  EXPECT_THAT(adopted, HasSubstr(R"("globalShortcut":"Ctrl+Space")"));
  EXPECT_TRUE(locate_servers(adopted, file).adopted);
}

TEST(Agents, AListWithMcpmuxBesideWhatStayedIsAdopted) {
  const auto file = agent_file_for_path("/x/claude_desktop_config.json");
  EXPECT_TRUE(locate_servers(R"({"mcpServers": {"mcpmux": {"command": "/usr/bin/mcpmux",
      "args": ["connect", "--spawn"]}, "odd": {"type": "websocket", "url": "ws://h/x"}}})",
                             file)
                  .adopted);
  // Another program called mcpmux-something, or mcpmux without connect, is not mcpmux's entry.
  EXPECT_FALSE(locate_servers(R"({"mcpServers": {"a": {"command": "mcpmux", "args": ["status"]},
      "b": {"command": "/bin/mcpmux-x", "args": ["connect"]}}})",
                              file)
                   .adopted);
}

TEST(Agents, KnownFilesCoverTheCommonClients) {
  const auto files = known_agent_files("/home/me", "/home/me/.config", "/work/p");
  std::vector<std::string> ids;
  for (const auto& f : files) ids.push_back(f.agent);
  for (const char* id : {"claude-desktop", "claude-code", "cursor", "windsurf", "vscode",
                         "vscode-settings", "gemini", "claude-code-project", "vscode-workspace"})
    EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  EXPECT_EQ(files.front().path, "/home/me/.config/Claude/claude_desktop_config.json");
  for (const auto& f : files) {
    if (f.project) {
      EXPECT_EQ(f.path.rfind("/work/p/", 0), 0u) << f.path;
    }
  }
}

// ---- adopting each client's format, and back ------------------------------------------------

env_lookup no_env() {
  return [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
}

struct format_case {
  const char* path;
  const char* text;
  std::vector<std::string> servers;  // mcpmux servers the client's became
  std::vector<std::string> left;     // entries that stay with the client
};

// Real-world files, trimmed: unknown fields, comments where the client allows them, env and
// headers, a server mcpmux already runs under another name, and one whose name it uses.
const std::vector<format_case>& formats() {
  static const std::vector<format_case> cases{
      {"/home/me/.claude.json",
       R"({
  "numStartups": 42,
  "mcpServers": {
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
               "headers": {"Authorization": "Bearer ${GITHUB_PAT}"}},
    "same-git": {"command": "uvx", "args": ["mcp-server-git"]}
  },
  "projects": {"/work/p": {"mcpServers": {"local": {"command": "./srv"}}, "allowedTools": []}}
})",
       {"github", "git", "local"},
       {}},
      {"/home/me/.cursor/mcp.json",
       R"({"mcpServers": {
  "git": {"command": "npx", "args": ["-y", "other-git"], "env": {"TOKEN": "s3cret"}},
  "playwright": {"command": "npx", "args": ["@playwright/mcp@latest"], "autoApprove": ["x"]},
  "ws": {"type": "websocket", "url": "ws://localhost:1/x"}
}})",
       {"git-2", "playwright"},
       {"ws"}},
      {"/home/me/.codeium/windsurf/mcp_config.json",
       R"({"mcpServers": {"context7": {"serverUrl": "https://mcp.context7.com/mcp"}}})",
       {"context7"},
       {}},
      {"/work/p/.vscode/mcp.json",
       R"({
  // workspace servers
  "inputs": [{"type": "promptString", "id": "key", "password": true}],
  "servers": {
    "perplexity": {"type": "stdio", "command": "npx", "args": ["-y", "server-perplexity-ask"],
                   "env": {"KEY": "${input:key}"}},
  },
})",
       {"perplexity"},
       {}},
      {"/home/me/.config/zed/settings.json",
       R"({
  "theme": "One Dark", // comments are allowed here
  "context_servers": {
    "fetch": {"source": "custom", "command": "uvx", "args": ["mcp-server-fetch"], "env": {}},
  },
})",
       {"fetch"},
       {}},
      {"/home/me/.codex/config.toml",
       R"(model = "gpt-5-codex"
# my servers
[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-docs"]
startup_timeout_sec = 20

[mcp_servers.docs.env]
API_KEY = "k-123"

[mcp_servers."figma remote"]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_TOKEN"

# the UI
[tui]
notifications = true
)",
       {"docs", "figma_remote"},
       {}},
  };
  return cases;
}

// mcpmux already runs git (uvx mcp-server-git) under the name "git".
constexpr std::string_view config_before = R"([servers.git]
command = "uvx"
args = ["mcp-server-git"]
)";

// Which servers each project's list became, for a restoration without the backup.
project_servers local_servers(const adoption& plan) {
  project_servers out;
  for (const auto& l : plan.lists)
    if (!l.project.empty()) out[l.project] = l.servers;
  return out;
}

// The mcpmux servers the file's own list became.
std::vector<std::string> own_servers(const adoption& plan) {
  return plan.lists.empty() || !plan.lists.front().project.empty() ? std::vector<std::string>{}
                                                                   : plan.lists.front().servers;
}

TEST(Adopt, EveryFormatRoundTripsByteForByte) {
  for (const auto& c : formats()) {
    SCOPED_TRACE(c.path);
    const auto file = agent_file_for_path(c.path);
    auto plan = plan_adoption(c.text, file, config_before, "/cfg/config.toml", "/usr/bin/mcpmux",
                              no_env(), credentials::keep_plaintext);
    ASSERT_EQ(plan.error, "");
    ASSERT_EQ(plan.nothing, "");
    EXPECT_EQ(plan.servers, c.servers);
    EXPECT_EQ(plan.left, c.left);
    // The new config loads and holds the added servers.
    auto cfg = parse_config(plan.config_text, "/cfg/config.toml", no_env());
    ASSERT_TRUE(cfg.value) << plan.config_text;
    for (const auto& name : plan.servers) {
      EXPECT_NE(std::find_if(cfg.value->servers.begin(), cfg.value->servers.end(),
                             [&](const server_config& s) { return s.name == name; }),
                cfg.value->servers.end())
          << name;
    }
    // The client's file: adopted, still JSON(C), unknown fields and what stayed kept.
    const auto after = locate_servers(plan.client_text, file);
    ASSERT_EQ(after.error, "");
    EXPECT_TRUE(after.adopted);
    for (const auto& name : c.left) EXPECT_THAT(plan.client_text, HasSubstr("\"" + name + "\""));
    // Adopting again changes nothing.
    EXPECT_EQ(plan_adoption(plan.client_text, file, plan.config_text, "/cfg/config.toml",
                            "/usr/bin/mcpmux", no_env())
                  .nothing,
              "it already uses mcpmux");
    // Back from the backup: the very bytes.
    std::string why;
    EXPECT_EQ(plan_restoration(plan.client_text, file, std::string(c.text), cfg.value->servers,
                               plan.servers, &why),
              c.text)
        << why;
    // Back without the backup: rebuilt from mcpmux's config, the same servers again, with
    // the variables as written (never their values).
    auto templates = parse_config(plan.config_text, "/cfg/config.toml", keep_variables());
    ASSERT_TRUE(templates.value);
    const auto rebuilt =
        plan_restoration(plan.client_text, file, std::nullopt, templates.value->servers,
                         own_servers(plan), &why, local_servers(plan));
    if (std::string_view(c.path).ends_with(".claude.json")) {
      EXPECT_THAT(rebuilt, HasSubstr("Bearer ${GITHUB_PAT}"));
    }
    ASSERT_FALSE(rebuilt.empty()) << why;
    EXPECT_FALSE(locate_servers(rebuilt, file).adopted);
    auto again = plan_adoption(rebuilt, file, plan.config_text, "/cfg/config.toml",
                               "/usr/bin/mcpmux", no_env());
    EXPECT_TRUE(again.added.empty()) << "every rebuilt server is one mcpmux runs";
    EXPECT_EQ(again.left, c.left);
  }
}

TEST(Adopt, ClaudeCodeServersAlreadyRunAndCollisionsAreNamed) {
  const auto& c = formats()[0];
  auto plan = plan_adoption(c.text, agent_file_for_path(c.path), config_before, "/cfg/c.toml",
                            "/usr/bin/mcpmux", no_env());
  EXPECT_THAT(plan.client_text, HasSubstr("\"numStartups\": 42"));
  EXPECT_THAT(::testing::PrintToString(plan.notes),
              HasSubstr("mcpmux runs it already as [servers.git]; not added again"));
  const auto& cursor = formats()[1];
  auto named =
      plan_adoption(cursor.text, agent_file_for_path(cursor.path), config_before, "/cfg/c.toml",
                    "/usr/bin/mcpmux", no_env(), credentials::keep_plaintext);
  EXPECT_EQ(named.added, (std::vector<std::string>{"git-2", "playwright"}));
  EXPECT_THAT(named.config_text, HasSubstr("TOKEN = \"s3cret\""));  // --keep-plaintext
}

TEST(Adopt, CodexTablesAreReplacedAndTheRestOfTheTomlKept) {
  const auto& c = formats().back();
  const auto file = agent_file_for_path(c.path);
  ASSERT_EQ(file.shape, agent_shape::codex);
  auto plan = plan_adoption(c.text, file, "", "/cfg/c.toml", "/usr/bin/mcpmux", no_env(),
                            credentials::keep_plaintext);
  ASSERT_EQ(plan.error, "");
  EXPECT_THAT(plan.client_text, HasSubstr("model = \"gpt-5-codex\"\n# my servers\n"
                                          "[mcp_servers.mcpmux]\ncommand = \"/usr/bin/mcpmux\"\n"
                                          "args = [\"connect\", \"--spawn\"]\n\n# the UI\n[tui]"));
  EXPECT_THAT(plan.config_text, HasSubstr("Authorization = \"Bearer ${FIGMA_TOKEN}\""));
  EXPECT_THAT(plan.config_text, HasSubstr("API_KEY = \"k-123\""));
  EXPECT_THAT(::testing::PrintToString(plan.notes), HasSubstr("startup_timeout_sec: not carried"));
  // One server's tables, sub-tables included, without the blank line after them.
  const auto run = codex::find_servers(c.text);
  ASSERT_TRUE(run.span);
  const auto docs = codex::find_server(c.text, *run.span, "docs");
  ASSERT_TRUE(docs);
  EXPECT_EQ(std::string_view(c.text).substr(docs->begin, docs->end - docs->begin),
            "[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"mcp-docs\"]\n"
            "startup_timeout_sec = 20\n\n[mcp_servers.docs.env]\nAPI_KEY = \"k-123\"");
  const auto figma = codex::find_server(c.text, *run.span, "figma remote");
  ASSERT_TRUE(figma);
  EXPECT_EQ(std::string_view(c.text).substr(figma->begin, figma->end - figma->begin),
            "[mcp_servers.\"figma remote\"]\nurl = \"https://mcp.figma.com/mcp\"\n"
            "bearer_token_env_var = \"FIGMA_TOKEN\"");
  // Tables in a form this does not rewrite are refused, not half-edited.
  EXPECT_THAT(plan_adoption("[mcp_servers.a]\ncommand = \"x\"\n[tui]\n[mcp_servers.b]\ncommand "
                            "= \"y\"\n",
                            file, "", "/c.toml", "/m", no_env())
                  .error,
              HasSubstr("not together"));
  EXPECT_THAT(
      plan_adoption("mcp_servers.a.command = \"x\"\n", file, "", "/c.toml", "/m", no_env()).error,
      HasSubstr("not written as [mcp_servers.NAME] tables"));
  EXPECT_THAT(plan_adoption("[mcp_servers.a\n", file, "", "/c.toml", "/m", no_env()).error,
              HasSubstr("is not TOML (line 1"));
}

// The daemon's socket where an agent's bare environment would not find it: `--socket` in every
// entry; adopting again with another socket (or none) rewrites only the entries' arguments.
TEST(Adopt, TheSocketIsWrittenIntoEntriesAndUpdatedByAdoptingAgain) {
  for (const auto& c : formats()) {
    const auto file = agent_file_for_path(c.path);
    auto plan = plan_adoption(c.text, file, "", "/cfg/c.toml", "/usr/bin/mcpmux", no_env(),
                              credentials::keep_plaintext, "/run/mux/a.sock");
    ASSERT_EQ(plan.error, "") << c.path;
    EXPECT_FALSE(plan.entries_updated);
    const std::string adopted = plan.client_text;
    EXPECT_THAT(adopted, file.shape == agent_shape::codex
                             ? HasSubstr(R"(["connect", "--spawn", "--socket", "/run/mux/a.sock"])")
                             : HasSubstr(R"(["connect","--spawn","--socket","/run/mux/a.sock"])"))
        << c.path;

    auto same = plan_adoption(adopted, file, "", "/cfg/c.toml", "/usr/bin/mcpmux", no_env(),
                              credentials::keep_plaintext, "/run/mux/a.sock");
    EXPECT_EQ(same.nothing, "it already uses mcpmux") << c.path;

    auto moved = plan_adoption(adopted, file, "x = 1\n", "/cfg/c.toml", "/usr/bin/mcpmux", no_env(),
                               credentials::keep_plaintext, "/run/mux/b.sock");
    EXPECT_TRUE(moved.entries_updated) << c.path;
    EXPECT_EQ(moved.config_text, "x = 1\n");
    EXPECT_TRUE(moved.added.empty());
    std::string expected = adopted;
    for (auto at = expected.find("/run/mux/a.sock"); at != std::string::npos;
         at = expected.find("/run/mux/a.sock", at))
      expected.replace(at, 15, "/run/mux/b.sock");
    EXPECT_EQ(moved.client_text, expected) << c.path;

    auto none = plan_adoption(moved.client_text, file, "", "/cfg/c.toml", "/usr/bin/mcpmux",
                              no_env(), credentials::keep_plaintext, "");
    EXPECT_TRUE(none.entries_updated);
    EXPECT_THAT(none.client_text, Not(HasSubstr("--socket"))) << c.path;
    EXPECT_TRUE(locate_servers(none.client_text, file).adopted) << c.path;
  }
}

TEST(Adopt, WhatCannotBeReadIsNotTouched) {
  const auto file = agent_file_for_path("/x/mcp.json");
  EXPECT_THAT(plan_adoption("{\"mcpServers\": {", file, "", "/c.toml", "/m", no_env()).error,
              HasSubstr("is not JSON (line 1"));
  EXPECT_EQ(plan_adoption("{\"other\": 1}", file, "", "/c.toml", "/m", no_env()).nothing,
            "it has no server list: nothing to adopt");
  EXPECT_THAT(plan_adoption(R"({"mcpServers": {"a": {"command": "x"}}})", file, "[servers.b",
                            "/c.toml", "/m", no_env())
                  .error,
              HasSubstr("does not load"));
}

TEST(Adopt, RemovingServerTablesKeepsTheRest) {
  const std::string text =
      "[daemon]\nlog_level = \"debug\"\n\n[servers.keep]\ncommand = \"a\"\n\n"
      "# adopted from Cursor (/x)\n[servers.gone]\ncommand = \"b\"\n"
      "[servers.gone.env]\nK = \"v\"\n\n[servers.keep2]\ncommand = \"c\"\n";
  const auto out = remove_server_tables(text, {"gone"});
  EXPECT_EQ(out,
            "[daemon]\nlog_level = \"debug\"\n\n[servers.keep]\ncommand = \"a\"\n\n"
            "[servers.keep2]\ncommand = \"c\"\n");
}

// ---- two accounts of one server; credentials; Claude Code's local scope --------------------

constexpr std::string_view two_accounts = R"({"mcpServers": {
  "gh-work": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
              "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_work"}},
  "gh-home": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
              "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_home"}}
}})";

TEST(Adopt, TwoAccountsOfOneServerAreTwoServers) {
  const auto file = agent_file_for_path("/home/me/.cursor/mcp.json");
  auto plan = plan_adoption(two_accounts, file, "", "/cfg/c.toml", "/m", no_env(),
                            credentials::keep_plaintext);
  ASSERT_EQ(plan.error, "");
  EXPECT_EQ(plan.added, (std::vector<std::string>{"gh-work", "gh-home"}));
  EXPECT_EQ(plan.servers, (std::vector<std::string>{"gh-work", "gh-home"}));
  EXPECT_THAT(plan.config_text, HasSubstr("\"ghp_home\""));
  // The same definition under another name is one server; a different cwd, header or token
  // command is another.
  const std::string config = plan.config_text;
  auto again = plan_adoption(R"({"mcpServers": {"work": {"command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_work"}}}})",
                             file, config, "/cfg/c.toml", "/m", no_env());
  EXPECT_TRUE(again.added.empty());
  EXPECT_EQ(again.servers, (std::vector<std::string>{"gh-work"}));
  EXPECT_THAT(::testing::PrintToString(again.notes),
              HasSubstr("mcpmux runs it already as [servers.gh-work]"));
  const std::string remote = "[servers.r]\ntype = \"http\"\nurl = \"https://x.example/mcp\"\n";
  for (const char* other : {
           R"({"mcpServers": {"r2": {"type": "http", "url": "https://x.example/mcp",
               "headers": {"X-Team": "b"}}}})",
           R"({"mcpServers": {"w": {"command": "npx",
               "args": ["-y", "@modelcontextprotocol/server-github"], "cwd": "/srv",
               "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_work"}}}})"}) {
    SCOPED_TRACE(other);
    auto p = plan_adoption(other, file, config + "\n" + remote, "/cfg/c.toml", "/m", no_env(),
                           credentials::keep_plaintext);
    EXPECT_EQ(p.added.size(), 1u);
  }
}

TEST(Adopt, CredentialsMoveToTheSecretStoreByName) {
  const auto file = agent_file_for_path("/home/me/.cursor/mcp.json");
  auto plan = plan_adoption(R"({"mcpServers": {
  "gh-work": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
              "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_work", "LOG_LEVEL": "debug",
                      "API_KEY": "${API_KEY}"}},
  "remote": {"type": "http", "url": "https://x.example/mcp",
             "headers": {"Authorization": "Bearer tok-1", "X-Api-Key": "k-2", "X-Team": "b"}}
}})",
                            file, "", "/cfg/c.toml", "/m", no_env());
  ASSERT_EQ(plan.error, "");
  std::vector<std::string> names, values;
  for (const auto& m : plan.secrets) {
    names.push_back(m.name);
    values.push_back(m.value);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"gh-work_GITHUB_PERSONAL_ACCESS_TOKEN",
                                             "remote_Authorization", "remote_X-Api-Key"}));
  EXPECT_EQ(values, (std::vector<std::string>{"ghp_work", "tok-1", "k-2"}));
  for (const char* plain : {"ghp_work", "tok-1", "k-2"})
    EXPECT_THAT(plan.config_text, Not(HasSubstr(plain)));
  EXPECT_THAT(plan.config_text, HasSubstr("GITHUB_PERSONAL_ACCESS_TOKEN = "
                                          "\"${secret:gh-work_GITHUB_PERSONAL_ACCESS_TOKEN}\""));
  EXPECT_THAT(plan.config_text,
              HasSubstr("Authorization = \"Bearer ${secret:remote_Authorization}\""));
  EXPECT_THAT(plan.config_text, HasSubstr("API_KEY = \"${API_KEY}\""));  // not plain text
  EXPECT_THAT(plan.config_text, HasSubstr("LOG_LEVEL = \"debug\""));
  EXPECT_THAT(plan.config_text, HasSubstr("X-Team = \"b\""));

  for (const char* key : {"GITHUB_TOKEN", "OPENAI_API_KEY", "CLIENT_SECRET", "DB_PASSWORD",
                          "authorization", "x-api-key", "X-Auth-Token", "APIKEY"})
    EXPECT_TRUE(names_credential(key)) << key;
  for (const char* key : {"LOG_LEVEL", "KEYBOARD", "TOKEN_URL", "MONKEY", "X-Team"})
    EXPECT_FALSE(names_credential(key)) << key;
  EXPECT_EQ(credential_secret_name("a", "x y"), "a_x_y");
}

// ~/.claude.json as Claude Code writes it: user servers at the top, each project's own under
// projects.PATH.mcpServers (the default "local" scope), an empty list in most projects.
constexpr std::string_view claude_json = R"({
  "numStartups": 7,
  "mcpServers": {
    "git": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-git"]
    },
    "fetch": {
      "command": "uvx",
      "args": ["mcp-server-fetch"]
    }
  },
  "projects": {
    "/home/me/src/app": {
      "allowedTools": [],
      "mcpServers": {
        "gh-work": {
          "type": "stdio",
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-github"],
          "env": {
            "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_work"
          }
        },
        "git": {
          "type": "stdio",
          "command": "uvx",
          "args": ["mcp-server-git", "--repository", "/home/me/src/app"]
        }
      },
      "hasTrustDialogAccepted": true
    },
    "/home/me/empty": {
      "allowedTools": [],
      "mcpServers": {}
    },
    "/home/me/src/site": {
      "mcpServers": {
        "gh-home": {
          "type": "stdio",
          "command": "npx",
          "args": ["-y", "@modelcontextprotocol/server-github"],
          "env": {
            "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_home"
          }
        }
      }
    }
  }
}
)";

TEST(Adopt, ClaudeCodeLocalScopeGetsAProfilePerProjectAndComesBackByteForByte) {
  const auto file = agent_file_for_path("/home/me/.claude.json");
  ASSERT_TRUE(file.local_scopes);
  const auto lists = find_server_lists(claude_json, file);
  ASSERT_EQ(lists.error, "");
  ASSERT_EQ(lists.lists.size(), 3u);  // the user's, app's, site's (the empty one is not)
  EXPECT_EQ(lists.lists[1].local_project, "/home/me/src/app");
  EXPECT_EQ(lists.lists[2].local_project, "/home/me/src/site");

  const auto app = project_profile_name("/home/me/src/app");
  const auto site = project_profile_name("/home/me/src/site");
  EXPECT_THAT(app, ::testing::MatchesRegex("claude-app-[0-9a-f]{8}"));
  EXPECT_EQ(app, project_profile_name("/home/me/src/app/"));  // stable
  EXPECT_NE(app, project_profile_name("/home/other/app"));    // two projects named app
  EXPECT_THAT(project_profile_name("/x/" + std::string(80, 'n') + " ü"),
              ::testing::MatchesRegex("claude-n{40}-[0-9a-f]{8}"));

  auto plan = plan_adoption(claude_json, file, "", "/cfg/c.toml", "/usr/bin/mcpmux", no_env(),
                            credentials::keep_plaintext);
  ASSERT_EQ(plan.error, "");
  ASSERT_EQ(plan.nothing, "");
  EXPECT_EQ(plan.servers,
            (std::vector<std::string>{"git", "fetch", "gh-work", "git-2", "gh-home"}));
  EXPECT_EQ(plan.profiles, (std::vector<std::string>{app, site}));
  // Each project sees its servers and the user's, but not a user server its own shadows.
  auto cfg = parse_config(plan.config_text, "/cfg/c.toml", no_env());
  ASSERT_TRUE(cfg.value) << plan.config_text;
  ASSERT_EQ(cfg.value->profiles.size(), 2u);
  EXPECT_EQ(cfg.value->profiles[0].name, app);
  EXPECT_EQ(cfg.value->profiles[0].servers,
            (std::vector<std::string>{"gh-work", "git-2", "fetch"}));
  EXPECT_EQ(cfg.value->profiles[1].servers, (std::vector<std::string>{"gh-home", "git", "fetch"}));
  // The file: one mcpmux entry per list, with the project's profile; all else kept.
  EXPECT_THAT(plan.client_text,
              HasSubstr(R"("args": ["connect","--spawn","--profile",")" + app + "\"]"));
  EXPECT_THAT(plan.client_text,
              HasSubstr(R"("args": ["connect","--spawn","--profile",")" + site + "\"]"));
  EXPECT_THAT(plan.client_text, HasSubstr("\"hasTrustDialogAccepted\": true"));
  EXPECT_THAT(plan.client_text, HasSubstr("\"allowedTools\": [],\n      \"mcpServers\": {}"));
  EXPECT_THAT(plan.client_text, Not(HasSubstr("ghp_")));
  EXPECT_EQ(plan_adoption(plan.client_text, file, plan.config_text, "/cfg/c.toml", "/m", no_env())
                .nothing,
            "it already uses mcpmux");

  // Back from the backup: every list, byte for byte, and what Claude Code changed meanwhile
  // elsewhere in the file stays changed.
  std::string why;
  const std::string backup(claude_json);
  EXPECT_EQ(plan_restoration(plan.client_text, file, backup, {}, {}, &why), claude_json) << why;
  auto touched = plan.client_text;
  touched.replace(touched.find("\"numStartups\": 7"), 16, "\"numStartups\": 8");
  auto expected = backup;
  expected.replace(expected.find("\"numStartups\": 7"), 16, "\"numStartups\": 8");
  EXPECT_EQ(plan_restoration(touched, file, backup, {}, {}, &why), expected) << why;
  // Without it: each list rebuilt from its own servers.
  const auto rebuilt = plan_restoration(plan.client_text, file, std::nullopt, cfg.value->servers,
                                        own_servers(plan), &why, local_servers(plan));
  ASSERT_FALSE(rebuilt.empty()) << why;
  const auto back = find_server_lists(rebuilt, file);
  ASSERT_EQ(back.lists.size(), 3u);
  std::vector<std::string> ignored;
  const auto site_list = locate_servers(rebuilt, back.lists[2]);
  ASSERT_TRUE(site_list.span);
  EXPECT_FALSE(site_list.adopted);
  EXPECT_EQ(list_entries(rebuilt, *site_list.span, back.lists[2], ignored).size(), 1u);
  EXPECT_THAT(rebuilt, HasSubstr("ghp_home"));

  // The tokens go to the secret store by default; the profiles are the same.
  auto moved = plan_adoption(claude_json, file, "", "/cfg/c.toml", "/usr/bin/mcpmux", no_env());
  EXPECT_EQ(moved.secrets.size(), 2u);
  EXPECT_THAT(moved.config_text, Not(HasSubstr("ghp_")));
  EXPECT_THAT(moved.config_text, HasSubstr("[profiles." + site + "]"));
  // An empty user list beside them stays empty (an mcpmux entry there would show every
  // project all the servers).
  std::string empty_user(claude_json);
  const auto user_begin = empty_user.find("\"mcpServers\": {\n    \"git\"");
  const auto user_end = empty_user.find("\n  },\n  \"projects\"");
  ASSERT_NE(user_begin, std::string::npos);
  ASSERT_NE(user_end, std::string::npos);
  empty_user.replace(user_begin, user_end + 4 - user_begin, "\"mcpServers\": {}");
  auto projects_only = plan_adoption(empty_user, file, "", "/cfg/c.toml", "/usr/bin/mcpmux",
                                     no_env(), credentials::keep_plaintext);
  ASSERT_EQ(projects_only.error, "");
  EXPECT_THAT(projects_only.client_text, HasSubstr("\"numStartups\": 7,\n  \"mcpServers\": {},"));
  EXPECT_EQ(projects_only.lists.size(), 2u);
  EXPECT_EQ(plan_restoration(projects_only.client_text, file, empty_user, {}, {}, &why), empty_user)
      << why;
  // Adopting again after unadopt (the profiles are still in the config) replaces them.
  auto readopt = plan_adoption(claude_json, file, plan.config_text, "/cfg/c.toml", "/m", no_env(),
                               credentials::keep_plaintext);
  ASSERT_EQ(readopt.error, "");
  EXPECT_TRUE(readopt.added.empty());
  EXPECT_TRUE(parse_config(readopt.config_text, "/cfg/c.toml", no_env()).value)
      << readopt.config_text;
}

}  // namespace
}  // namespace mcpmux
