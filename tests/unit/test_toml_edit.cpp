// The byte-keeping edits of `mcpmux add|remove|enable|disable` on a config with comments
// everywhere: what is outside the edited table stays byte for byte; the write is atomic.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/files.hpp"
#include "config/config.hpp"
#include "config/import.hpp"
#include "config/toml_edit.hpp"
#include "tests/unit/error_text.hpp"

namespace mcpmux {
namespace {

using ::testing::HasSubstr;

// A config as people keep one: comments above, inside, between and after the tables, a
// multi-line string that looks like a header, a sub-table apart from its server.
constexpr std::string_view commented = R"(# mcpmux config, by hand
[daemon]   # the daemon
log_level = "info"  # chatty enough

# files: the filesystem server
[servers.files]
command = "npx"   # via npm
args = ["-y", "@mcp/fs",
  "/tmp"]          # a list over two lines

[servers.plain]
command = "plain-server"
args = ["""
[servers.fake]
"""]

# the remote one
[servers.remote]
type = "http"
url = "https://x.example/mcp"
# enabled = false  (kept for later)

[servers.plain.env]
LEVEL = "debug"

# the end
)";

std::string without(std::string_view text, std::string_view part) {
  std::string out(text);
  const auto at = out.find(part);
  EXPECT_NE(at, std::string::npos) << part;
  if (at != std::string::npos) out.erase(at, part.size());
  return out;
}

TEST(TomlEdit, RemoveTakesTheTableAndItsSubTableAndKeepsEveryOtherByte) {
  const auto r = remove_server_table(commented, "plain");
  ASSERT_EQ(r.error, "");
  // Its lines (the multi-line string's "[servers.fake]" among them), the blank line above it,
  // and its sub-table further down with its blank line: nothing else.
  const auto expected = without(without(commented,
                                        "\n[servers.plain]\ncommand = \"plain-server\"\n"
                                        "args = [\"\"\"\n[servers.fake]\n\"\"\"]\n"),
                                "\n[servers.plain.env]\nLEVEL = \"debug\"\n");
  EXPECT_EQ(r.text, expected);
  EXPECT_TRUE(parse_config(r.text, "config.toml").value);
}

TEST(TomlEdit, RemoveKeepsTheCommentsAboveAndAfterTheTable) {
  const auto r = remove_server_table(commented, "remote");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.text, without(commented,
                            "[servers.remote]\ntype = \"http\"\n"
                            "url = \"https://x.example/mcp\"\n"));
  EXPECT_THAT(r.text, HasSubstr("# the remote one\n# enabled = false  (kept for later)\n"));
}

TEST(TomlEdit, RemoveOfTheFirstTableTakesTheBlankLineBelowIt) {
  const auto r =
      remove_server_table("[servers.a]\ncommand = \"a\"\n\n[servers.b]\ncommand = \"b\"\n", "a");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.text, "[servers.b]\ncommand = \"b\"\n");
}

TEST(TomlEdit, AddThenRemoveGivesBackTheFileByteForByte) {
  server_config s;
  s.name = "added";
  s.command = "fake";
  s.args = {"--flag"};
  const auto merged = merge_into_config(commented, "config.toml", {s}, "");
  ASSERT_TRUE(merged.errors.empty());
  ASSERT_EQ(merged.added, std::vector<std::string>{"added"});
  EXPECT_TRUE(merged.text.starts_with(commented));  // appended: every byte before kept
  const auto r = remove_server_table(merged.text, "added");
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(r.text, commented);
}

TEST(TomlEdit, RemoveRefusesWhatItCannotEditAlone) {
  EXPECT_THAT(remove_server_table(commented, "nope").error, HasSubstr("no server \"nope\""));
  EXPECT_THAT(remove_server_table("[servers]\ninline = { command = \"x\" }\n", "inline").error,
              HasSubstr("edit it by hand"));
  EXPECT_THAT(remove_server_table("[servers.a\n", "a").error, HasSubstr("not valid TOML"));
}

TEST(TomlEdit, DisableInsertsBelowTheHeaderAndEnableTakesItOutAgain) {
  const auto off = set_server_enabled(commented, "files", false);
  ASSERT_EQ(off.error, "");
  std::string expected(commented);
  expected.insert(expected.find("[servers.files]\n") + 16, "enabled = false\n");
  EXPECT_EQ(off.text, expected);
  const auto cfg = parse_config(off.text, "config.toml");
  ASSERT_TRUE(cfg.value);
  EXPECT_FALSE(cfg.value->servers[0].enabled);

  EXPECT_TRUE(set_server_enabled(off.text, "files", false).unchanged);
  const auto on = set_server_enabled(off.text, "files", true);
  ASSERT_EQ(on.error, "");
  EXPECT_EQ(on.text, commented);
  EXPECT_TRUE(set_server_enabled(commented, "files", true).unchanged);
}

TEST(TomlEdit, AnEnabledKeyOfTheUsersOwnHasOnlyItsValueReplaced) {
  constexpr std::string_view text =
      "[servers.a]\r\ncommand = \"a\"\r\nenabled = true   # on for now\r\n";
  const auto off = set_server_enabled(text, "a", false);
  ASSERT_EQ(off.error, "");
  EXPECT_EQ(off.text, "[servers.a]\r\ncommand = \"a\"\r\nenabled = false   # on for now\r\n");
  EXPECT_EQ(set_server_enabled(off.text, "a", true).text, text);
  // A CRLF file gets a CRLF line; a file without a final newline stays valid.
  EXPECT_EQ(set_server_enabled("[servers.b]\r\ncommand = \"b\"\r\n", "b", false).text,
            "[servers.b]\r\nenabled = false\r\ncommand = \"b\"\r\n");
  EXPECT_EQ(set_server_enabled("[servers.b]", "b", false).text, "[servers.b]\nenabled = false");
}

TEST(TomlEdit, AnEditThatDoesNotValidateIsSeenBeforeWriting) {
  // A profile that names the server: without it the profile names nothing, and the loader
  // (the same as --check-config) says so.
  constexpr std::string_view text =
      "[servers.a]\ncommand = \"a\"\n\n[profiles.p]\nservers = [\"a\"]\n";
  const auto r = remove_server_table(text, "a");
  ASSERT_EQ(r.error, "");
  EXPECT_FALSE(parse_config(r.text, "config.toml").errors.empty());
}

TEST(TomlEdit, TheWriteReplacesTheFileWholeAndKeepsItsMode) {
  char dir[] = "/tmp/mcpmux-toml-edit-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/config.toml";
  ASSERT_EQ(error_text(write_file_atomically(path, commented)), "");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // a new file is private
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  const auto before = st.st_ino;
  const auto r = remove_server_table(commented, "files");
  ASSERT_EQ(error_text(write_file_atomically(path, r.text)), "");
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_NE(st.st_ino, before);  // a new file renamed over the old: never half written
  std::ifstream in(path);
  std::stringstream got;
  got << in.rdbuf();
  EXPECT_EQ(got.str(), r.text);
  ::unlink(path.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace mcpmux
