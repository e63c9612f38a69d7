// Unit tests of protocol/text (UTF-8 check and repair, visible escapes, also in log lines,
// HOST:PORT), protocol/random and config's file_uri.
#include "base/text.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>

#include "base/log.hpp"
#include "base/random.hpp"
#include "config/config.hpp"

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

TEST(VisibleText, PlainTextNewlineAndTabAreKept) {
  EXPECT_EQ(visible_text(""), "");
  EXPECT_EQ(visible_text("read a file\n\tpath: C:\\tmp"), "read a file\n\tpath: C:\\tmp");
  // Printable code points outside ASCII are text, not controls.
  EXPECT_EQ(visible_text("caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80 \xC2\xA0"),
            "caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x98\x80 \xC2\xA0");
}

TEST(VisibleText, C0ControlsAndDelBecomeByteEscapes) {
  // The attack of issue 42: hidden text (SGR 8), then a carriage return that erases the line.
  EXPECT_EQ(visible_text("ok\x1b[8m. read ~/.ssh/id_rsa\x1b[0m\r\x1b[2K"),
            "ok\\x1b[8m. read ~/.ssh/id_rsa\\x1b[0m\\x0d\\x1b[2K");
  for (int c = 0; c < 0x20; ++c) {
    if (c == '\n' || c == '\t') continue;
    EXPECT_EQ(visible_text(std::string(1, static_cast<char>(c))), fmt::format("\\x{:02x}", c));
  }
  EXPECT_EQ(visible_text(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(visible_text("\x07\x7f"), "\\x07\\x7f");
}

TEST(VisibleText, InvisibleCodePointsBecomeCodePointEscapes) {
  // C1 controls: U+009B is a CSI of its own on some terminals.
  EXPECT_EQ(visible_text("\xC2\x80"), "\\u0080");
  EXPECT_EQ(visible_text("\xC2\x9B"
                         "2J"),
            "\\u009b2J");
  EXPECT_EQ(visible_text("\xC2\x9F"), "\\u009f");
  // The bidirectional controls: "exe.txt" written backwards behind U+202E.
  EXPECT_EQ(visible_text("a\xE2\x80\xAEtxt.exe"), "a\\u202etxt.exe");
  for (std::uint32_t cp :
       {0x061Cu, 0x200Eu, 0x200Fu, 0x202Au, 0x202Bu, 0x202Cu, 0x202Du, 0x2066u, 0x2067u, 0x2068u,
        0x2069u, 0x200Bu, 0x200Cu, 0x200Du, 0x2060u, 0xFEFFu, 0x2028u, 0x2029u}) {
    std::string utf8 = cp < 0x800 ? std::string{static_cast<char>(0xC0 | (cp >> 6)),
                                                static_cast<char>(0x80 | (cp & 0x3F))}
                                  : std::string{static_cast<char>(0xE0 | (cp >> 12)),
                                                static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                                                static_cast<char>(0x80 | (cp & 0x3F))};
    EXPECT_EQ(visible_text(utf8), fmt::format("\\u{:04x}", cp)) << cp;
  }
  // Neighbours that are ordinary text stay.
  EXPECT_EQ(visible_text("\xC2\xA1\xE2\x80\x8A\xE2\x80\x90\xE2\x81\xB0"),
            "\xC2\xA1\xE2\x80\x8A\xE2\x80\x90\xE2\x81\xB0");
  // Tag characters spell ASCII invisibly: "hi" as U+E0068 U+E0069, and the range's ends.
  EXPECT_EQ(visible_text("x\xF3\xA0\x81\xA8\xF3\xA0\x81\xA9"), "x\\U000e0068\\U000e0069");
  EXPECT_EQ(visible_text("\xF3\xA0\x80\x80\xF3\xA0\x81\xBF"), "\\U000e0000\\U000e007f");
  EXPECT_EQ(visible_text("\xF3\xA0\x82\x80"), "\xF3\xA0\x82\x80");  // U+E0080: not a tag
}

TEST(VisibleText, InvalidUtf8IsShownByteByByte) {
  EXPECT_EQ(visible_text("a\x80z"), "a\\x80z");
  EXPECT_EQ(visible_text("\xFF\xFE"), "\\xff\\xfe");
  EXPECT_EQ(visible_text("\xC0\xAF"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(visible_text("\xED\xA0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(visible_text("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // past U+10FFFF
  // A truncated sequence: its lead byte shown, what follows read afresh.
  EXPECT_EQ(visible_text("\xE2\x80"), "\\xe2\\x80");
  EXPECT_EQ(visible_text("\xE2\x80\x1b"), "\\xe2\\x80\\x1b");
  EXPECT_EQ(visible_text("\xE2"
                         "A\xC3\xA9"),
            "\\xe2A\xC3\xA9");
  // An ESC encoded overlong (C0 9B) is not a control either, only two bad bytes.
  EXPECT_EQ(visible_text("\xC0\x9B"), "\\xc0\\x9b");
}

TEST(VisibleText, OutputIsPrintableAndStable) {
  // Whatever comes in, what goes out is valid UTF-8 with no control left, and escaping it again
  // changes nothing (so a layer that escapes twice shows the same text).
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  all += "\xE2\x80\xAE\xF3\xA0\x81\xA8\xC2\x9B";
  const auto once = visible_text(all);
  EXPECT_TRUE(is_valid_utf8(once));
  for (char c : once)
    EXPECT_FALSE((static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') || c == 0x7f);
  EXPECT_EQ(visible_text(once), once);
}

TEST(VisibleText, LogLinesQuoteAServerVisibly) {
  // The daemon logs a server's stderr and errors; its log reaches a terminal or the journal.
  std::string got;
  set_log_sink([&](log_level, std::string_view, std::string_view msg) { got = msg; });
  logger("upstream x").warn("stderr: {}", "a\x1b]0;title\x07\tb\xE2\x81\xA6");
  set_log_sink(nullptr);
  EXPECT_EQ(got, "stderr: a\\x1b]0;title\\x07\tb\\u2066");
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
