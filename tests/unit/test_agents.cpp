// Moving a client onto mcpmux and back, as text: finding the server list in JSON with comments,
// the entry that replaces it, and a round trip that gives back every byte.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/agents.hpp"
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
  EXPECT_THAT(adopted, HasSubstr(R"("args": ["connect","--profile","work"])"));
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

}  // namespace
}  // namespace mcpmux
