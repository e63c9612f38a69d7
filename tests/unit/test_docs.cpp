// Unit tests of the user documentation against the code: every config key is in the reference
// (docs/configuration.md) and nothing else is, and README.md stays short.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace mcpmux {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(MCPMUX_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in) << "cannot read " << relative;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The heading of the reference's section; every table row in it whose first cell is one
// `code span` documents that key path.
constexpr std::string_view reference_heading = "## Every key";

// The key paths the reference documents, in the order written (a key written twice is there
// twice).
std::vector<std::string> documented_keys(const std::string& page) {
  std::vector<std::string> keys;
  std::istringstream lines(page);
  std::string line;
  bool in_reference = false;
  while (std::getline(lines, line)) {
    if (line.starts_with("## ")) in_reference = line == reference_heading;
    if (!in_reference || !line.starts_with("| `")) continue;
    const auto end = line.find('`', 3);
    if (end == std::string::npos || line.compare(end + 1, 2, " |") != 0) continue;
    keys.push_back(line.substr(3, end - 3));
  }
  return keys;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// The "unknown key" errors of one key set as a dotted TOML key (`*` stands for a name), in a
// stdio and in an http server: a key of the other type is refused before its name is looked at.
std::vector<std::string> unknown_key_errors(std::string path) {
  std::replace(path.begin(), path.end(), '*', 'x');
  std::vector<std::string> unknown;
  for (const char* type : {"stdio", "http"}) {
    const auto text = "servers.x.type = \"" + std::string(type) + "\"\n" + path + " = 0\n";
    for (const auto& e : parse_config(text, "test.toml").errors)
      if (e.message.starts_with("unknown key")) unknown.push_back(e.to_string());
  }
  return unknown;
}

TEST(ConfigKeyPaths, AreTheKeysTheLoaderTakes) {
  const auto paths = config_key_paths();
  for (const auto& path : paths) EXPECT_THAT(unknown_key_errors(path), IsEmpty()) << path;
  // The check can fail: a key the loader does not know is named.
  EXPECT_THAT(joined(unknown_key_errors("servers.*.oauth.scopes")), HasSubstr("unknown key"));
  // Nested tables are spelt out, and a key that is a value or a table is listed once.
  const std::set<std::string> set(paths.begin(), paths.end());
  EXPECT_EQ(set.size(), paths.size());
  EXPECT_TRUE(set.count("servers.*.oauth.scope"));
  EXPECT_TRUE(set.count("servers.*.oauth"));
  EXPECT_TRUE(set.count("profiles.*.match"));
  EXPECT_TRUE(set.count("daemon.timeout_ms"));
  EXPECT_FALSE(set.count("daemon"));
  EXPECT_FALSE(set.count("servers"));
}

TEST(ConfigurationReference, DocumentsEveryKeyAndNoOther) {
  const auto documented = documented_keys(read_source_file("docs/configuration.md"));
  ASSERT_THAT(documented, Not(IsEmpty())) << "no \"" << reference_heading << "\" table found";
  const auto keys = config_key_paths();
  const std::set<std::string> known(keys.begin(), keys.end());
  std::set<std::string> seen;
  std::vector<std::string> twice, not_a_key, undocumented;
  for (const auto& k : documented) {
    if (!seen.insert(k).second) twice.push_back(k);
    if (!known.count(k)) not_a_key.push_back(k);
  }
  for (const auto& k : keys)
    if (!seen.count(k)) undocumented.push_back(k);
  EXPECT_THAT(undocumented, IsEmpty())
      << "keys missing from docs/configuration.md: " << joined(undocumented);
  EXPECT_THAT(not_a_key, IsEmpty()) << "documented but not a key: " << joined(not_a_key);
  EXPECT_THAT(twice, IsEmpty()) << "documented twice: " << joined(twice);
}

TEST(Readme, IsAtMost400Lines) {
  const auto text = read_source_file("README.md");
  const auto lines = std::count(text.begin(), text.end(), '\n');
  EXPECT_GT(lines, 0);
  EXPECT_LE(lines, 400) << "README.md is for a user: move details into docs/";
}

}  // namespace
}  // namespace mcpmux
