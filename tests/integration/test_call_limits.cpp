// Integration tests of the limits against runaway loops and the annotation filters, through a
// real mcpmuxd and fake stdio servers: a burst over max_calls_per_minute, max_concurrent_calls
// with a slow tool, a profile's limit across two sessions, the counts in status, `@read-only`.
#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

using steady = std::chrono::steady_clock;

class call_limits : public daemon_test {};

json::value tools_call(std::int64_t id, std::string_view tool, json::value args) {
  return json::object{{"jsonrpc", "2.0"},
                      {"id", id},
                      {"method", "tools/call"},
                      {"params", {{"name", tool}, {"arguments", std::move(args)}}}};
}

bool is_tool_error(const json::value& response) {
  const auto* r = response.as_object().if_contains("result");
  const auto* e = r && r->is_object() ? r->as_object().if_contains("isError") : nullptr;
  return e && e->is_bool() && e->as_bool();
}

// The server's `limited` counts in mcpmux/status.
std::int64_t limited(client& ctl, std::string_view server, std::string_view limit) {
  const auto v = status_of(ctl, server);
  const auto s = parse_or_null(v.raw);
  const auto* l = s.is_object() ? s.as_object().if_contains("limited") : nullptr;
  const auto* n = l && l->is_object() ? l->as_object().if_contains(limit) : nullptr;
  return n && n->is_int64() ? n->as_int64() : n && n->is_uint64() ? n->as_uint64() : 0;
}

TEST_F(call_limits, a_burst_over_the_rate_waits_then_fails_with_a_tool_error_naming_the_key) {
  start(fake_server_table("a", {}, "max_calls_per_minute = 2\ntimeout_ms = 400\n"));
  client c = connect_initialized();
  const auto t0 = steady::now();
  for (std::int64_t id = 1; id <= 3; ++id)
    ASSERT_TRUE(c.send(tools_call(id, "a__echo", {{"text", "n" + std::to_string(id)}})));
  for (std::int64_t id = 1; id <= 2; ++id) {
    auto r = c.wait_response(id, 5s);
    ASSERT_TRUE(r);
    EXPECT_EQ(first_text(*r), "n" + std::to_string(id));
  }
  auto third = c.wait_response(3, 5s);
  ASSERT_TRUE(third);
  EXPECT_GE(ms_since(t0), 380) << "the excess call waited its timeout before failing";
  EXPECT_TRUE(is_tool_error(*third)) << json::serialize(*third);
  EXPECT_TRUE(contains(first_text(*third), "max_calls_per_minute in [servers.a]"))
      << first_text(*third);
  EXPECT_TRUE(contains(first_text(*third), "2 calls a minute")) << first_text(*third);
  client ctl = connect();
  EXPECT_EQ(limited(ctl, "a", "max_calls_per_minute"), 1);
  // The status table says so where nothing worse is to be said.
  const auto table = run_cli(daemon_->socket(), {"status"});
  EXPECT_TRUE(contains(table.out, "calls held back: max_calls_pe")) << table.out;  // (cut to width)
}

TEST_F(call_limits, a_call_over_the_concurrency_limit_starts_when_the_slow_one_ends) {
  start(fake_server_table("a", {}, "max_concurrent_calls = 1\ntimeout_ms = 5000\n"));
  client c = connect_initialized();
  const auto t0 = steady::now();
  ASSERT_TRUE(c.send(tools_call(1, "a__slow", {{"ms", 300}})));
  ASSERT_TRUE(c.send(tools_call(2, "a__echo", {{"text", "after"}})));
  // Answers come in order: the echo waited for the slow call's place.
  auto first = c.read_message(5s);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->at("id"), json::value(1)) << json::serialize(*first);
  auto second = c.wait_response(2, 5s);
  ASSERT_TRUE(second);
  EXPECT_EQ(first_text(*second), "after");
  EXPECT_GE(ms_since(t0), 290);
  client ctl = connect();
  EXPECT_EQ(limited(ctl, "a", "max_concurrent_calls"), 1);
}

TEST_F(call_limits, a_profiles_limit_counts_the_calls_of_all_its_sessions) {
  start(fake_server_table("a", {}, "timeout_ms = 300\n") +
        "[profiles.p]\nmax_calls_per_minute = 1\n");
  const auto in_profile = [&] {
    client c = connect();
    auto r = c.request("mcpmux/profile", json::object{{"name", "p"}}, 5s);
    EXPECT_TRUE(r && r->as_object().contains("result")) << (r ? json::serialize(*r) : "");
    EXPECT_TRUE(c.initialize());
    return c;
  };
  client c1 = in_profile();
  client c2 = in_profile();
  auto r1 = c1.call("a__echo", {{"text", "one"}}, 5s);
  ASSERT_TRUE(r1);
  EXPECT_EQ(first_text(*r1), "one");
  auto r2 = c2.call("a__echo", {{"text", "two"}}, 5s);
  ASSERT_TRUE(r2);
  EXPECT_TRUE(is_tool_error(*r2)) << json::serialize(*r2);
  EXPECT_TRUE(contains(first_text(*r2), "profile \"p\"")) << first_text(*r2);
  client ctl = connect();
  EXPECT_EQ(limited(ctl, "a", "profile.max_calls_per_minute"), 1);
  // A client of no profile is not held by it.
  client other = connect_initialized();
  auto r3 = other.call("a__echo", {{"text", "three"}}, 5s);
  ASSERT_TRUE(r3);
  EXPECT_EQ(first_text(*r3), "three");
}

TEST_F(call_limits, read_only_selects_the_tools_that_say_so) {
  start(fake_server_table("a", {"--annotate", "echo=readOnlyHint"}, "tools = [\"@read-only\"]\n") +
        fake_server_table("b", {"--annotate", "slow=readOnlyHint"},
                          "tools = [\"*\", \"!@destructive\"]\n"));
  client c = connect_initialized();
  auto list = c.request("tools/list", json::object{}, 5s);
  ASSERT_TRUE(list);
  EXPECT_EQ(tool_names(*list), (std::vector<std::string>{"a__echo", "b__slow"}));
}

}  // namespace
}  // namespace mcpmux::test
