// Unit tests of transports/sse_parser.hpp: fields, line endings, split feeds, ids, retry, the cap.
#include "protocol/sse_parser.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

struct collector {
  explicit collector(std::size_t cap = 1024) : parser(cap) {}

  void feed(std::string_view data) {
    parser.feed(
        data, [this](sse_event& ev) { events.push_back(ev); },
        [this](std::size_t n) { oversize.push_back(n); });
  }
  void feed_bytewise(std::string_view data) {
    for (char c : data) feed(std::string_view(&c, 1));
  }
  std::vector<std::string> data() const {
    std::vector<std::string> out;
    for (const auto& e : events) out.push_back(e.data);
    return out;
  }

  sse_parser parser;
  std::vector<sse_event> events;
  std::vector<std::size_t> oversize;
};

TEST(SseParser, ParsesFields) {
  collector c;
  c.feed("event: message\nid: 7\ndata: {\"a\":1}\n\n");
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].event, "message");
  EXPECT_EQ(c.events[0].id, "7");
  EXPECT_EQ(c.events[0].data, "{\"a\":1}");
  EXPECT_FALSE(c.events[0].retry);
  EXPECT_EQ(c.parser.last_event_id(), "7");
}

TEST(SseParser, JoinsMultiLineDataAndStripsOneSpace) {
  collector c;
  c.feed("data: first\ndata:second\ndata:  third\ndata\n\n");
  EXPECT_THAT(c.data(), ElementsAre("first\nsecond\n third\n"));
}

TEST(SseParser, IgnoresCommentsAndUnknownFields) {
  collector c;
  c.feed(": keep-alive\nfoo: bar\ndata: x\n: another\n\n:ping\n\n");
  EXPECT_THAT(c.data(), ElementsAre("x"));
  EXPECT_EQ(c.events[0].event, "");
}

TEST(SseParser, NoDispatchWithoutData) {
  collector c;
  c.feed("event: endpoint\n\nid: 3\n\n");
  EXPECT_THAT(c.events, IsEmpty());
  EXPECT_EQ(c.parser.last_event_id(), "3");
  EXPECT_TRUE(c.parser.saw_id());
  // The event type does not leak into the next event.
  c.feed("data: y\n\n");
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].event, "");
  EXPECT_EQ(c.events[0].id, "3");
}

TEST(SseParser, EmptyDataFieldDispatchesEmptyEvent) {
  collector c;
  c.feed("id: p1\ndata:\n\n");
  ASSERT_EQ(c.events.size(), 1u);
  EXPECT_EQ(c.events[0].data, "");
  EXPECT_EQ(c.events[0].id, "p1");
}

TEST(SseParser, AcceptsCrLfCrAndLfLineEndings) {
  for (std::string_view text : {"data: a\r\ndata: b\r\n\r\n", "data: a\rdata: b\r\r",
                                "data: a\ndata: b\n\n", "data: a\r\ndata: b\n\r\n"}) {
    collector c;
    c.feed(text);
    EXPECT_THAT(c.data(), ElementsAre("a\nb")) << text;
  }
}

TEST(SseParser, EventSplitByteByByte) {
  const std::string text =
      "id: 1\r\nevent: message\r\ndata: {\"x\":\r\ndata: 2}\r\n\r\ndata: next\r\r";
  collector whole;
  whole.feed(text);
  collector bytes;
  bytes.feed_bytewise(text);
  EXPECT_THAT(bytes.data(), ElementsAre("{\"x\":\n2}", "next"));
  EXPECT_EQ(bytes.data(), whole.data());
  EXPECT_EQ(bytes.events[0].event, "message");
  EXPECT_EQ(bytes.events[1].id, "1");
}

TEST(SseParser, CrLfSplitAcrossFeedsIsOneLineEnd) {
  collector c;
  c.feed("data: a\r");
  c.feed("\ndata: b\r");
  c.feed("\n\r");
  c.feed("\n");
  EXPECT_THAT(c.data(), ElementsAre("a\nb"));
}

TEST(SseParser, SkipsLeadingBomEvenWhenSplit) {
  collector c;
  c.feed_bytewise(
      "\xEF\xBB\xBF"
      "data: z\n\n");
  EXPECT_THAT(c.data(), ElementsAre("z"));
}

TEST(SseParser, IdPersistsAcrossEvents) {
  collector c;
  c.feed("id: 5\ndata: a\n\ndata: b\n\nid\ndata: c\n\n");
  ASSERT_EQ(c.events.size(), 3u);
  EXPECT_EQ(c.events[0].id, "5");
  EXPECT_EQ(c.events[1].id, "5");
  EXPECT_EQ(c.events[2].id, "");  // an empty id resets it
}

TEST(SseParser, IdWithNulIsIgnored) {
  collector c;
  static constexpr char stream[] = "id: 1\ndata: a\n\nid: x\0y\ndata: b\n\n";
  c.feed(std::string_view(stream, sizeof stream - 1));
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[1].id, "1");
}

TEST(SseParser, Retry) {
  collector c;
  c.feed("retry: 1500\ndata: a\n\nretry: soon\ndata: b\n\nretry: 20\n\n");
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0].retry, 1500u);
  EXPECT_FALSE(c.events[1].retry);  // not digits: ignored
  EXPECT_EQ(c.parser.retry(), 20u);
}

TEST(SseParser, OversizeEventIsDiscardedAndReportedOnce) {
  collector c(16);
  c.feed("data: 0123456789\ndata: 0123456789\ndata: more\n\ndata: ok\n\n");
  EXPECT_THAT(c.data(), ElementsAre("ok"));
  ASSERT_EQ(c.oversize.size(), 1u);
  EXPECT_GT(c.oversize[0], 16u);
}

TEST(SseParser, OversizeLineIsNeverHeld) {
  collector c(16);
  std::string big = "data: " + std::string(10000, 'x');
  c.feed_bytewise(big);
  EXPECT_LT(c.parser.pending(), 200u);
  c.feed("\n\ndata: fine\n\n");
  EXPECT_THAT(c.data(), ElementsAre("fine"));
  ASSERT_EQ(c.oversize.size(), 1u);
  EXPECT_GE(c.oversize[0], 10000u);
}

TEST(SseParser, ResetDropsPartialEventKeepsId) {
  collector c;
  c.feed("id: 9\nretry: 10\ndata: a\n\ndata: partial");
  c.parser.reset();
  c.feed("data: b\n\n");
  EXPECT_THAT(c.data(), ElementsAre("a", "b"));
  EXPECT_EQ(c.events[1].id, "9");
  EXPECT_EQ(c.parser.retry(), 10u);
}

}  // namespace
}  // namespace mcpmux
