// Unit tests of core/handshake (the legacy-era handshake machine) and core/lists (the list
// pager), driven by hand with a fake clock: no process, no socket, no sleep.
#include "core/handshake.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <variant>

#include "protocol/versions.hpp"

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using act = handshake_action;
using time_point = handshake::clock::time_point;

const time_point t0 = time_point{} + 1000h;

message reply(std::string_view text) {
  message_parser p;
  auto m = p.parse(text);
  EXPECT_TRUE(m.ok()) << text;
  return (std::move(m)).value();
}

message result(std::string_view result_json) {
  return reply(R"({"jsonrpc":"2.0","id":1,"result":)" + std::string(result_json) + "}");
}

message error_reply(int code = -32601) {
  return reply(R"({"jsonrpc":"2.0","id":1,"error":{"code":)" + std::to_string(code) +
               R"(,"message":"Method not found"}})");
}

std::string init_result(std::string_view caps, std::string_view version = "2025-11-25") {
  return R"({"protocolVersion":")" + std::string(version) + R"(","capabilities":)" +
         std::string(caps) +
         R"(,"serverInfo":{"name":"srv","version":"1"},"instructions":"be nice"})";
}

std::vector<std::string> names(const std::vector<json::object>& items, std::string_view key) {
  std::vector<std::string> out;
  for (const auto& i : items) out.emplace_back(i.at(key).as_string());
  return out;
}

// A machine past initialize, the listener and notifications/initialized: its tools/list is out.
struct started {
  handshake hs;
  time_point now = t0;
  act tools_request;

  explicit started(std::string_view caps, std::chrono::milliseconds timeout = 10s)
      : hs(timeout, "s") {
    auto a = hs.start(now);
    EXPECT_EQ(a.what, act::send);
    EXPECT_EQ(a.method, "initialize");
    a = hs.on_reply(result(init_result(caps)), now);
    EXPECT_EQ(a.what, act::open_listener);
    a = hs.on_done(now);
    EXPECT_EQ(a.what, act::notify);
    EXPECT_EQ(a.method, "notifications/initialized");
    tools_request = hs.on_done(now);
    EXPECT_EQ(tools_request.what, act::send);
    EXPECT_EQ(tools_request.method, "tools/list");
  }
};

TEST(LegacyHandshake, InitializeAsksForTheLatestRevisionWithTheClientCapabilities) {
  handshake hs(5s, "s");
  auto a = hs.start(t0);
  ASSERT_EQ(a.what, act::send);
  EXPECT_EQ(a.method, "initialize");
  EXPECT_EQ(a.params.at("protocolVersion").as_string(), mcp::latest_legacy_version);
  EXPECT_TRUE(a.params.at("capabilities").as_object().contains("roots"));
  EXPECT_TRUE(a.params.at("capabilities").as_object().contains("sampling"));
  EXPECT_TRUE(a.params.at("capabilities").as_object().contains("elicitation"));
  EXPECT_EQ(a.params.at("clientInfo").at("name").as_string(), "mcpmux");
  EXPECT_FALSE(a.timeout);  // the handshake's deadline bounds it
  EXPECT_EQ(hs.deadline(), t0 + 5s);
}

TEST(LegacyHandshake, TheWholeOrderWithPagesAndEveryDeclaredList) {
  handshake hs(10s, "s");
  hs.start(t0);
  auto a = hs.on_reply(result(init_result(R"({"tools":{},"resources":{},"prompts":{}})")), t0);
  ASSERT_EQ(a.what, act::open_listener);
  EXPECT_EQ(a.protocol_version, "2025-11-25");
  EXPECT_EQ(a.max_wait, 1000ms);
  EXPECT_EQ(hs.server_name(), "srv");
  EXPECT_EQ(hs.instructions(), "be nice");
  EXPECT_EQ(hs.on_done(t0).what, act::notify);
  a = hs.on_done(t0);
  ASSERT_EQ(a.method, "tools/list");
  EXPECT_TRUE(a.params.empty());
  EXPECT_EQ(a.timeout, 10s);
  a = hs.on_reply(result(R"({"tools":[{"name":"a"}],"nextCursor":"p2"})"), t0);
  ASSERT_EQ(a.method, "tools/list");
  EXPECT_EQ(a.params.at("cursor").as_string(), "p2");
  a = hs.on_reply(result(R"({"tools":[{"name":"b"}]})"), t0 + 1s);
  EXPECT_EQ(a.method, "resources/list");
  // The optional lists' own budget (10 s) starts after tools/list; three lists to go.
  EXPECT_EQ(a.timeout, 3333ms);
  a = hs.on_reply(result(R"({"resources":[{"uri":"x://1"}]})"), t0 + 4s);
  EXPECT_EQ(a.method, "resources/templates/list");
  EXPECT_EQ(a.timeout, 3500ms);  // half of what is left, two lists to go
  a = hs.on_reply(result(R"({"resourceTemplates":[]})"), t0 + 5s);
  EXPECT_EQ(a.method, "prompts/list");
  a = hs.on_reply(result(R"({"prompts":[{"name":"p"}]})"), t0 + 5s);
  ASSERT_EQ(a.what, act::ready);
  auto& lists = hs.lists();
  EXPECT_THAT(names(lists[0].items, "name"), ElementsAre("a", "b"));
  EXPECT_THAT(names(lists[1].items, "uri"), ElementsAre("x://1"));
  EXPECT_TRUE(lists[2].asked);
  EXPECT_TRUE(lists[2].items.empty());
  EXPECT_THAT(names(lists[3].items, "name"), ElementsAre("p"));
  for (const auto& l : lists) EXPECT_EQ(l.error, "");
}

TEST(LegacyHandshake, ARefusedInitializeOrAnOldRevisionFailsTheStart) {
  handshake a(5s, "s");
  a.start(t0);
  auto step = a.on_reply(error_reply(-32600), t0);
  EXPECT_EQ(step.what, act::fail);
  EXPECT_THAT(step.error, HasSubstr("initialize failed"));

  handshake b(5s, "s");
  b.start(t0);
  step = b.on_reply(result(init_result("{}", "2023-01-01")), t0);
  EXPECT_EQ(step.what, act::fail);
  EXPECT_THAT(step.error, HasSubstr("unsupported protocol version \"2023-01-01\""));

  handshake c(5s, "s");
  c.start(t0);
  step = c.on_reply(result(R"({"capabilities":{}})"), t0);
  EXPECT_EQ(step.what, act::fail);
  EXPECT_THAT(step.error, HasSubstr("no protocolVersion"));
}

// The kubernetes / puppeteer case.
TEST(LegacyHandshake, ARefusedOptionalListIsEmptyWithItsErrorAndTheStartGoesOn) {
  started s(R"({"tools":{},"resources":{}})");
  auto a = s.hs.on_reply(result(R"({"tools":[{"name":"t"}]})"), s.now);
  ASSERT_EQ(a.method, "resources/list");
  a = s.hs.on_reply(result(R"({"resources":[{"uri":"k8s://x"}]})"), s.now);
  ASSERT_EQ(a.method, "resources/templates/list");
  a = s.hs.on_reply(error_reply(), s.now);
  ASSERT_EQ(a.what, act::ready);  // prompts were not declared: not asked
  auto& lists = s.hs.lists();
  EXPECT_THAT(lists[2].error, HasSubstr("resources/templates/list failed"));
  EXPECT_THAT(lists[2].error, HasSubstr("-32601"));
  EXPECT_EQ(lists[1].items.size(), 1u);
  EXPECT_FALSE(lists[3].asked);
}

TEST(LegacyHandshake, MalformedAndUnansweredOptionalListsAreErrorsNotFailures) {
  started s(R"({"resources":{},"prompts":{}})");
  auto a = s.hs.on_reply(result(R"({"tools":[]})"), s.now);
  ASSERT_EQ(a.method, "resources/list");
  EXPECT_EQ(a.timeout, 3333ms);  // a third of the shared 10 s: three lists to go
  // The silent list spends its part, not the others'.
  a = s.hs.on_no_answer(s.now + 3333ms);
  ASSERT_EQ(a.method, "resources/templates/list");
  EXPECT_EQ(a.timeout, 3333ms);
  a = s.hs.on_reply(result(R"({"resourceTemplates":"no"})"), s.now + 4s);
  ASSERT_EQ(a.method, "prompts/list");
  EXPECT_EQ(a.timeout, 6s);  // the last list has what is left
  a = s.hs.on_reply(result(R"({})"), s.now + 10s);
  ASSERT_EQ(a.what, act::ready);
  auto& lists = s.hs.lists();
  EXPECT_EQ(lists[1].error, "resources/list: no answer in time");
  EXPECT_EQ(lists[2].error, "resources/templates/list result has no resourceTemplates array");
  EXPECT_EQ(lists[3].error, "prompts/list result has no prompts array");
}

TEST(LegacyHandshake, AToolListErrorIsReadyWithNoToolsButNoAnswerFailsTheStart) {
  started a(R"({"tools":{}})");
  auto step = a.hs.on_reply(error_reply(), a.now);
  ASSERT_EQ(step.what, act::ready);
  EXPECT_THAT(a.hs.lists()[0].error, HasSubstr("tools/list failed"));

  started b(R"({"tools":{}})");
  step = b.hs.on_no_answer(b.now + 10s);
  EXPECT_EQ(step.what, act::fail);
  EXPECT_THAT(step.error, HasSubstr("tools/list: no answer within 10000ms"));
}

TEST(LegacyHandshake, ToolsAreAskedEvenWithoutTheCapability) {
  started s("{}");  // the constructor checked that tools/list is sent
  EXPECT_FALSE(s.hs.offers(collection::tools));
  auto a = s.hs.on_reply(result(R"({"tools":[{"name":"t"}]})"), s.now);
  ASSERT_EQ(a.what, act::ready);
  EXPECT_EQ(s.hs.lists()[0].items.size(), 1u);
  EXPECT_FALSE(s.hs.lists()[1].asked);
}

TEST(LegacyHandshake, TheDeadlineFailsTheHandshakeButNotTheOptionalLists) {
  handshake a(2s, "srv");
  a.start(t0);
  auto step = a.on_deadline(t0 + 2s);
  EXPECT_EQ(step.what, act::fail);
  EXPECT_EQ(step.error, "Connection to MCP server \"srv\" timed out after 2000ms");

  started b(R"({"prompts":{}})", 2s);
  EXPECT_EQ(b.hs.on_deadline(b.now + 2s).what, act::fail);  // tools/list is still out

  started c(R"({"prompts":{}})", 2s);
  auto next = c.hs.on_reply(result(R"({"tools":[]})"), c.now + 1s);
  ASSERT_EQ(next.method, "prompts/list");
  EXPECT_EQ(c.hs.on_deadline(c.now + 2s).what, act::wait);
}

TEST(LegacyHandshake, NoTimeoutMeansNoDeadlineAndNoListenerLimit) {
  handshake hs(0ms, "s");
  auto a = hs.start(t0);
  EXPECT_FALSE(hs.deadline());
  a = hs.on_reply(result(init_result("{}")), t0);
  EXPECT_EQ(a.max_wait, 0ms);
  hs.on_done(t0);
  a = hs.on_done(t0);
  EXPECT_FALSE(a.timeout);
}

TEST(ListPager, SkipsBadAndRepeatedItemsAndStopsAtARepeatedCursor) {
  list_pager p(collection::tools);
  std::vector<std::string> warnings;
  auto page1 =
      result(R"({"tools":[{"name":"a"},{"nope":1},{"name":""},{"name":"a"}],"nextCursor":"c"})");
  EXPECT_EQ(p.on_page(page1, warnings), list_pager::status::more);
  EXPECT_EQ(p.next_params().at("cursor").as_string(), "c");
  auto page2 = result(R"({"tools":[{"name":"b"}],"nextCursor":"c"})");
  EXPECT_EQ(p.on_page(page2, warnings), list_pager::status::done);
  EXPECT_THAT(names(p.take(), "name"), ElementsAre("a", "b"));
  ASSERT_EQ(warnings.size(), 4u);
  EXPECT_THAT(warnings[0], HasSubstr("without a name"));
  EXPECT_THAT(warnings[2], HasSubstr("skipped a second name \"a\""));
  EXPECT_THAT(warnings[3], HasSubstr("repeated cursor \"c\""));
}

}  // namespace
}  // namespace mcpmux

// ---------------------------------------------------------------------------------------------
// The 2026-07-28 era and its detection.

namespace mcpmux {
namespace {

std::string discover_result(std::string_view versions = R"(["2026-07-28"])") {
  return R"({"resultType":"complete","supportedVersions":)" + std::string(versions) +
         R"(,"capabilities":{"tools":{"listChanged":true}},"instructions":"modern",)"
         R"("ttlMs":0,"cacheScope":"public",)"
         R"("_meta":{"io.modelcontextprotocol/serverInfo":{"name":"m","version":"1"}}})";
}

message error_with(int code, std::string_view data) {
  return reply(R"({"jsonrpc":"2.0","id":1,"error":{"code":)" + std::to_string(code) +
               R"(,"message":"no","data":)" + std::string(data) + "}}");
}

TEST(EraHandshake, DetectingAModernServerGoesFromDiscoverStraightToItsLists) {
  handshake hs(10s, "s", era_policy::detect);
  auto a = hs.start(t0);
  ASSERT_EQ(a.what, act::send);
  EXPECT_EQ(a.method, "server/discover");
  EXPECT_EQ(a.params.at("_meta").at("io.modelcontextprotocol/protocolVersion"), "2026-07-28");
  ASSERT_TRUE(a.timeout.has_value());
  EXPECT_EQ(*a.timeout, handshake::probe_timeout);
  EXPECT_TRUE(hs.probing());
  a = hs.on_reply(result(discover_result()), t0);
  EXPECT_FALSE(hs.probing());
  EXPECT_EQ(hs.era(), mcp::era::modern);
  EXPECT_EQ(hs.protocol_version(), "2026-07-28");
  EXPECT_EQ(hs.instructions(), "modern");
  EXPECT_EQ(hs.server_name(), "m");
  EXPECT_EQ(hs.cache_ttl_ms(), std::optional<std::int64_t>(0));
  EXPECT_FALSE(hs.cache_private());
  ASSERT_EQ(a.what, act::send);  // no initialize, no listener, no notifications/initialized
  EXPECT_EQ(a.method, "tools/list");
  EXPECT_TRUE(
      a.params.at("_meta").as_object().contains("io.modelcontextprotocol/clientCapabilities"));
  a = hs.on_reply(
      result(
          R"({"resultType":"complete","tools":[{"name":"t","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"public"})"),
      t0);
  EXPECT_EQ(a.what, act::ready);
  EXPECT_THAT(names(hs.lists()[0].items, "name"), ElementsAre("t"));
}

TEST(EraHandshake, ALegacyAnswerOrSilenceToTheProbeMeansInitializeOnTheSameConnection) {
  for (int silent = 0; silent < 2; ++silent) {
    SCOPED_TRACE(silent ? "no answer" : "-32601");
    handshake hs(10s, "s", era_policy::detect);
    hs.start(t0);
    auto a = silent ? hs.on_no_answer(t0 + 3s) : hs.on_reply(error_reply(-32601), t0);
    ASSERT_EQ(a.what, act::send);
    EXPECT_EQ(a.method, "initialize");
    a = hs.on_reply(result(init_result("{}")), t0);
    EXPECT_EQ(a.what, act::open_listener);
    EXPECT_EQ(hs.era(), mcp::era::legacy);
  }
}

TEST(EraHandshake, AModernRefusalIsNotAFallbackUnlessTheServerAlsoSpeaksLegacy) {
  {
    handshake hs(10s, "s", era_policy::detect);
    hs.start(t0);
    auto a = hs.on_reply(
        error_with(-32022, R"({"supported":["2027-01-01"],"requested":"2026-07-28"})"), t0);
    EXPECT_EQ(a.what, act::fail);
    EXPECT_THAT(a.error, HasSubstr("server/discover failed"));
  }
  {
    handshake hs(10s, "s", era_policy::detect);
    hs.start(t0);
    auto a = hs.on_reply(
        error_with(-32022, R"({"supported":["2025-11-25"],"requested":"2026-07-28"})"), t0);
    ASSERT_EQ(a.what, act::send);
    EXPECT_EQ(a.method, "initialize");
  }
}

TEST(EraHandshake, PinnedModernFailsWhereDetectionWouldFallBack) {
  handshake hs(10s, "s", era_policy::modern);
  auto a = hs.start(t0);
  EXPECT_FALSE(a.timeout.has_value());  // the handshake's deadline bounds it, not the probe's
  a = hs.on_reply(error_reply(-32601), t0);
  EXPECT_EQ(a.what, act::fail);
}

TEST(EraHandshake, ACachedLegacyVerdictInitializesFirstAndTriesDiscoverWhenRefused) {
  handshake hs(10s, "s", era_policy::legacy_first);
  auto a = hs.start(t0);
  EXPECT_EQ(a.method, "initialize");
  EXPECT_FALSE(hs.probing());
  a = hs.on_reply(error_with(-32022, R"({"supported":["2026-07-28"],"requested":"2025-11-25"})"),
                  t0);
  ASSERT_EQ(a.what, act::send);
  EXPECT_EQ(a.method, "server/discover");
  a = hs.on_reply(result(discover_result()), t0);
  EXPECT_EQ(hs.era(), mcp::era::modern);
  EXPECT_EQ(a.method, "tools/list");
}

}  // namespace
}  // namespace mcpmux
