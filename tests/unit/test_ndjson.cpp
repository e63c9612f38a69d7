// Unit tests of transports/ndjson.hpp: line framing, CRLF, blank lines and the line-length cap.
#include "protocol/ndjson.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Collects what a framer reports, in order; an oversize line shows up as "<oversize N>".
struct collector {
  explicit collector(std::size_t max_line) : framer(max_line) {}

  void feed(std::string_view data) {
    framer.feed(
        data, [this](std::string_view l) { lines.emplace_back(l); },
        [this](std::size_t n) {
          oversize.push_back(n);
          lines.push_back("<oversize " + std::to_string(n) + ">");
        });
  }
  void feed_bytewise(std::string_view data) {
    for (char c : data) feed(std::string_view(&c, 1));
  }

  ndjson_framer framer;
  std::vector<std::string> lines;
  std::vector<std::size_t> oversize;
};

TEST(NdjsonFramer, OneLineInOneFeed) {
  collector c(1024);
  c.feed("{\"a\":1}\n");
  EXPECT_THAT(c.lines, ElementsAre("{\"a\":1}"));
  EXPECT_EQ(c.framer.pending(), 0u);
}

TEST(NdjsonFramer, LineSplitByteByByte) {
  collector c(1024);
  const std::string line = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  for (std::size_t i = 0; i < line.size(); ++i) {
    c.feed(line.substr(i, 1));
    EXPECT_THAT(c.lines, IsEmpty()) << "after byte " << i;
    EXPECT_EQ(c.framer.pending(), i + 1);
  }
  c.feed("\n");
  EXPECT_THAT(c.lines, ElementsAre(line));
  EXPECT_EQ(c.framer.pending(), 0u);
}

TEST(NdjsonFramer, LineSplitAcrossUnevenFeeds) {
  collector c(1024);
  c.feed("ab");
  c.feed("cde");
  c.feed("f\ngh");
  c.feed("i\n");
  EXPECT_THAT(c.lines, ElementsAre("abcdef", "ghi"));
}

TEST(NdjsonFramer, SeveralLinesInOneFeed) {
  collector c(1024);
  c.feed("one\ntwo\nthree\nfour");
  EXPECT_THAT(c.lines, ElementsAre("one", "two", "three"));
  EXPECT_EQ(c.framer.pending(), 4u);
  c.feed("\n");
  EXPECT_THAT(c.lines, ElementsAre("one", "two", "three", "four"));
}

TEST(NdjsonFramer, CrlfIsStripped) {
  collector c(1024);
  c.feed("a\r\nb\r\n");
  c.feed_bytewise("c\r\n");
  c.feed("d\r");
  c.feed("\n");
  EXPECT_THAT(c.lines, ElementsAre("a", "b", "c", "d"));
}

TEST(NdjsonFramer, CrInsideLineIsKept) {
  collector c(1024);
  c.feed("a\rb\n");
  EXPECT_THAT(c.lines, ElementsAre("a\rb"));
}

TEST(NdjsonFramer, BlankLinesAreSkipped) {
  collector c(1024);
  c.feed("\n\n\r\n  \n\t\r\nx\n\n");
  c.feed_bytewise("\n \r\ny\n");
  EXPECT_THAT(c.lines, ElementsAre("x", "y"));
  EXPECT_THAT(c.oversize, IsEmpty());
}

TEST(NdjsonFramer, NoTrailingNewlineKeepsPending) {
  collector c(1024);
  c.feed("{\"partial\":");
  EXPECT_THAT(c.lines, IsEmpty());
  EXPECT_EQ(c.framer.pending(), 11u);
  EXPECT_FALSE(c.framer.discarding());
  c.feed("true}");
  EXPECT_THAT(c.lines, IsEmpty());
  EXPECT_EQ(c.framer.pending(), 16u);
  c.feed("\n");
  EXPECT_THAT(c.lines, ElementsAre("{\"partial\":true}"));
  EXPECT_EQ(c.framer.pending(), 0u);
}

TEST(NdjsonFramer, EmptyFeedIsHarmless) {
  collector c(16);
  c.feed("");
  c.feed("ab");
  c.feed("");
  c.feed("\n");
  EXPECT_THAT(c.lines, ElementsAre("ab"));
}

TEST(NdjsonFramerCap, LineExactlyAtCapIsAccepted) {
  const std::size_t cap = 64;
  const std::string at_cap(cap, 'a');
  collector one_feed(cap);
  one_feed.feed(at_cap + "\n");
  EXPECT_THAT(one_feed.lines, ElementsAre(at_cap));
  EXPECT_THAT(one_feed.oversize, IsEmpty());

  collector bytewise(cap);
  bytewise.feed_bytewise(at_cap + "\n");
  EXPECT_THAT(bytewise.lines, ElementsAre(at_cap));
  EXPECT_THAT(bytewise.oversize, IsEmpty());

  collector two_feeds(cap);
  two_feeds.feed(at_cap.substr(0, 10));
  two_feeds.feed(at_cap.substr(10) + "\n");
  EXPECT_THAT(two_feeds.lines, ElementsAre(at_cap));
}

TEST(NdjsonFramerCap, OneByteOverIsDiscardedWithSizeAndNextLineDelivered) {
  const std::size_t cap = 64;
  collector c(cap);
  c.feed(std::string(cap + 1, 'b') + "\nnext\n");
  EXPECT_THAT(c.oversize, ElementsAre(cap + 1));
  EXPECT_THAT(c.lines, ElementsAre("<oversize 65>", "next"));
  EXPECT_FALSE(c.framer.discarding());
  EXPECT_EQ(c.framer.pending(), 0u);
}

TEST(NdjsonFramerCap, OneByteOverFedByteByByte) {
  const std::size_t cap = 32;
  collector c(cap);
  c.feed_bytewise(std::string(cap + 1, 'b') + "\nnext\n");
  EXPECT_THAT(c.lines, ElementsAre("<oversize 33>", "next"));
}

TEST(NdjsonFramerCap, OversizeSplitAcrossFeeds) {
  const std::size_t cap = 100;
  collector c(cap);
  c.feed("ok\n" + std::string(60, 'x'));  // still within the cap
  EXPECT_EQ(c.framer.pending(), 60u);
  EXPECT_FALSE(c.framer.discarding());
  c.feed(std::string(60, 'x'));  // 120 > cap: dropped, nothing kept in memory
  EXPECT_TRUE(c.framer.discarding());
  EXPECT_EQ(c.framer.pending(), 0u);
  c.feed(std::string(1000, 'x'));
  EXPECT_TRUE(c.framer.discarding());
  EXPECT_EQ(c.framer.pending(), 0u);
  EXPECT_THAT(c.oversize, IsEmpty());  // reported once, when its newline arrives
  c.feed(std::string(5, 'x') + "\nafter");
  EXPECT_FALSE(c.framer.discarding());
  EXPECT_THAT(c.oversize, ElementsAre(60u + 60u + 1000u + 5u));
  c.feed("\n");
  EXPECT_THAT(c.lines, ElementsAre("ok", "<oversize 1125>", "after"));
}

// The first bytes of a discarded line are kept (up to head_bytes), from before and after the
// read that crossed the cap, so that a receiver can tell whose answer it was.
TEST(NdjsonFramerCap, KeepsTheHeadOfADiscardedLine) {
  collector c(100);
  c.feed(R"({"jsonrpc":"2.0","id":7,)");
  c.feed(R"("result":")" + std::string(5000, 'x'));
  EXPECT_TRUE(c.framer.discarding());
  EXPECT_EQ(c.framer.discarded_head().substr(0, 34), R"({"jsonrpc":"2.0","id":7,"result":")");
  EXPECT_EQ(c.framer.discarded_head().size(), ndjson_framer::head_bytes);
  c.feed("\"}\n");
  EXPECT_THAT(c.oversize, ElementsAre(24u + 10u + 5000u + 2u));
}

TEST(NdjsonFramerCap, SeveralOversizeLinesEachReported) {
  collector c(8);
  c.feed("123456789\nshort\n" + std::string(20, 'z') + "\n12345678\n");
  EXPECT_THAT(c.lines, ElementsAre("<oversize 9>", "short", "<oversize 20>", "12345678"));
}

TEST(NdjsonFramerCap, OversizeThenPartialOfNextLine) {
  collector c(8);
  c.feed(std::string(50, 'q') + "\nne");
  EXPECT_THAT(c.oversize, ElementsAre(50u));
  EXPECT_EQ(c.framer.pending(), 2u);
  c.feed("xt\n");
  EXPECT_THAT(c.lines, ElementsAre("<oversize 50>", "next"));
}

}  // namespace
}  // namespace mcpmux

namespace mcpmux {
namespace {

// The CR of a CRLF line does not count against the cap: a line of exactly `max_line` bytes is
// accepted with LF and with CRLF alike.
TEST(NdjsonFramer, CrlfLineAtCapAccepted) {
  collector c(4);
  c.feed("abcd\r\nx\n");
  EXPECT_THAT(c.lines, ElementsAre("abcd", "x"));
}

// A line assembled across feeds is offered as the framer's own buffer, which the receiver may
// take (a 10 MiB answer is then never copied); a line inside one feed is only a view.
TEST(NdjsonFramer, OffersTheBufferOfALineAssembledAcrossFeeds) {
  ndjson_framer framer(1024);
  std::vector<std::string> taken, viewed;
  auto on_line = [&](std::string_view line, std::string* whole) {
    if (whole) {
      EXPECT_EQ(std::string_view(*whole), line);
      taken.push_back(std::move(*whole));
    } else {
      viewed.emplace_back(line);
    }
  };
  auto on_oversize = [](std::size_t) { ADD_FAILURE() << "no line is oversize here"; };
  framer.feed("{\"a\":1}\n{\"b\":", on_line, on_oversize);
  framer.feed("2}\r\n{\"c\":3}\n", on_line, on_oversize);
  // After a taken buffer the framer starts afresh.
  framer.feed("{\"d\"", on_line, on_oversize);
  framer.feed(":4}\n", on_line, on_oversize);
  EXPECT_THAT(viewed, ElementsAre("{\"a\":1}", "{\"c\":3}"));
  EXPECT_THAT(taken, ElementsAre("{\"b\":2}", "{\"d\":4}"));  // CR stripped
  EXPECT_EQ(framer.pending(), 0u);
}

// A receiver that does not take the buffer leaves the framer as it was.
TEST(NdjsonFramer, BufferNotTakenIsReused) {
  ndjson_framer framer(1024);
  std::vector<std::string> lines;
  auto on_line = [&](std::string_view line, std::string*) { lines.emplace_back(line); };
  auto on_oversize = [](std::size_t) {};
  framer.feed("{\"x\"", on_line, on_oversize);
  framer.feed(":1}\n{\"y\"", on_line, on_oversize);
  framer.feed(":2}\n", on_line, on_oversize);
  EXPECT_THAT(lines, ElementsAre("{\"x\":1}", "{\"y\":2}"));
}

// While a line is handed over the framer says whether another whole line of the same feed
// follows it: CRLF, a line assembled across feeds, blank lines and an unfinished line after it.
TEST(NdjsonFramer, SaysWhichLineIsTheFeedsLast) {
  ndjson_framer framer(1024);
  std::vector<std::string> seen;  // "line:last" or "line:more"
  auto on_line = [&](std::string_view line, std::string*) {
    seen.push_back(std::string(line) + (framer.at_last_line() ? ":last" : ":more"));
  };
  auto on_oversize = [](std::size_t) {};
  framer.feed("a\nb\r\nc\r\n", on_line, on_oversize);
  framer.feed("d", on_line, on_oversize);
  framer.feed("\ne\n", on_line, on_oversize);
  framer.feed("f\n\n  \n", on_line, on_oversize);  // blank lines end the feed
  framer.feed("g\n{\"h\"", on_line, on_oversize);  // an unfinished line does not
  EXPECT_THAT(seen,
              ElementsAre("a:more", "b:more", "c:last", "d:more", "e:last", "f:more", "g:last"));
  EXPECT_FALSE(framer.at_last_line());  // outside a feed
}

}  // namespace
}  // namespace mcpmux
