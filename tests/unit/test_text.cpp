// Unit tests of core/protocol/text (UTF-8 check and repair, HOST:PORT), core/protocol/random
// and config's file_uri.
#include "core/protocol/text.hpp"

#include <gtest/gtest.h>

#include <set>

#include "config/config.hpp"
#include "core/protocol/random.hpp"

namespace mcpmux {
namespace {

TEST(Utf8, ValidityAgreesWithRepair) {
  for (std::string_view s : {"plain", "caf\xC3\xA9", "\xF0\x9F\x98\x80", "", "a\x80", "\xC0\xAF",
                             "\xED\xA0\x80", "\xE2\x82", "\xF4\x90\x80\x80"}) {
    EXPECT_EQ(is_valid_utf8(s), valid_utf8(s) == s) << testing::PrintToString(std::string(s));
  }
  EXPECT_EQ(valid_utf8("a\x80z"), "a\xEF\xBF\xBDz");
  // Long ASCII runs are skipped a word at a time: a bad byte at any offset is still seen.
  for (std::size_t at = 0; at < 20; ++at) {
    std::string s(20, 'x');
    s[at] = '\xFF';
    EXPECT_FALSE(is_valid_utf8(s)) << at;
    s[at] = 'y';
    EXPECT_TRUE(is_valid_utf8(s)) << at;
  }
  EXPECT_EQ(utf8_sequence("\xE2\x82\xAC", 0), 3u);
  EXPECT_EQ(utf8_sequence("\xE2\x82", 0), 0u);
}

TEST(HostPort, SplitsHostsPortsAndBracketedV6) {
  auto a = split_host_port("127.0.0.1:8931");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 8931u);
  EXPECT_FALSE(a->bracketed);
  auto b = split_host_port("[::1]:0");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->host, "::1");
  EXPECT_TRUE(b->bracketed);
  EXPECT_EQ(b->port, 0u);
  for (std::string_view bad : {"", ":80", "host", "host:", "host:x", "host:65536", "h:1 "})
    EXPECT_FALSE(split_host_port(bad)) << bad;
}

TEST(FileUri, KeepsPathCharactersAndEncodesTheRest) {
  EXPECT_EQ(file_uri("/home/me/src"), "file:///home/me/src");
  EXPECT_EQ(file_uri("/a b/c#d?e%f"), "file:///a%20b/c%23d%3Fe%25f");
  EXPECT_EQ(file_uri("/x/caf\xC3\xA9"), "file:///x/caf%C3%A9");
  EXPECT_EQ(file_uri("/k=v;a@b:c"), "file:///k=v;a@b:c");
}

TEST(RandomHex, TwoLowercaseHexDigitsPerByteAndNoRepeats) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto id = random_hex(32);
    ASSERT_TRUE(id.has_value());
    ASSERT_EQ(id->size(), 64u);
    EXPECT_EQ(id->find_first_not_of("0123456789abcdef"), std::string::npos) << *id;
    EXPECT_TRUE(seen.insert(*id).second) << *id;
  }
  EXPECT_EQ(random_hex(0), std::string());
}

}  // namespace
}  // namespace mcpmux
