// Integration tests of the core path: a real mcpmuxd, fake stdio servers, socket clients, the CLI.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

using steady = std::chrono::steady_clock;

class core_path : public daemon_test {};

std::string dump(const std::optional<json::value>& v) {
  return v ? json::serialize(*v) : std::string("<no message>");
}

// Every line the fake server logged with --log, parsed.
std::vector<json::value> logged(const std::string& path) {
  std::vector<json::value> out;
  for (const auto& line : read_lines(path)) out.push_back(parse_or_null(line));
  return out;
}

// The wire id of the tools/call for `tool` that the fake server received.
std::optional<json::value> wire_id_of_call(const std::string& log, std::string_view tool) {
  for (const auto& m : logged(log)) {
    if (!m.is_object() || m.as_object().if_contains("method") == nullptr) continue;
    if (m.at("method") != "tools/call") continue;
    const auto* p = m.as_object().if_contains("params");
    if (p && p->is_object() && p->as_object().if_contains("name") &&
        p->at("name") == json::value(tool))
      return m.at("id");
  }
  return std::nullopt;
}

bool logged_cancel_for(const std::string& log, const json::value& id) {
  for (const auto& m : logged(log)) {
    if (!m.is_object() || m.as_object().if_contains("method") == nullptr) continue;
    if (m.at("method") != "notifications/cancelled") continue;
    const auto* p = m.as_object().if_contains("params");
    if (p && p->is_object() && p->as_object().if_contains("requestId") && p->at("requestId") == id)
      return true;
  }
  return false;
}

std::vector<std::string> with_prefix(std::string_view prefix, const std::vector<std::string>& v) {
  std::vector<std::string> out;
  for (const auto& s : v) out.push_back(std::string(prefix) + s);
  return out;
}

bool valid_tool_name(const std::string& s) {
  static const std::regex re("[A-Za-z0-9_-]+");
  return std::regex_match(s, re);
}

json::value tools_call(std::int64_t id, std::string_view tool, json::value args) {
  return json::object{{"jsonrpc", "2.0"},
                      {"id", id},
                      {"method", "tools/call"},
                      {"params", {{"name", tool}, {"arguments", std::move(args)}}}};
}

// ---------------------------------------------------------------------------------------------
// 1. Handshake

TEST_F(core_path, initialize_negotiates_version_and_describes_the_gateway) {
  start(fake_server_table("alpha", {"--instructions", "ALPHA-INSTRUCTIONS-1"}) +
        fake_server_table("beta", {"--instructions", "BETA-INSTRUCTIONS-2"}));
  const std::pair<std::string, std::string> cases[] = {
      {"2024-11-05", "2024-11-05"}, {"2025-03-26", "2025-03-26"}, {"2025-06-18", "2025-06-18"},
      {"2025-11-25", "2025-11-25"}, {"1999-01-01", "2025-11-25"},
  };
  for (const auto& [asked, expected] : cases) {
    SCOPED_TRACE("protocolVersion " + asked);
    client c = connect();
    auto ping = c.request("ping");
    ASSERT_TRUE(member(ping, "result")) << dump(ping);
    EXPECT_EQ(ping->at("result"), json::object{});
    auto r = c.initialize(asked);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->at("protocolVersion"), json::value(expected)) << json::serialize(*r);
    EXPECT_EQ(r->at("serverInfo").at("name"), "mcpmux");
    EXPECT_EQ(r->at("capabilities").at("tools").at("listChanged"), true);
    const auto* ins = r->as_object().if_contains("instructions");
    ASSERT_TRUE(ins && ins->is_string()) << json::serialize(*r);
    const std::string text(ins->as_string());
    // Each server's instructions follow a heading line that names the server.
    EXPECT_TRUE(std::regex_search(text, std::regex(R"((^|\W)alpha\W*\n+ALPHA-INSTRUCTIONS-1)")))
        << text;
    EXPECT_TRUE(std::regex_search(text, std::regex(R"((^|\W)beta\W*\n+BETA-INSTRUCTIONS-2)")))
        << text;
    ping = c.request("ping");
    ASSERT_TRUE(member(ping, "result")) << dump(ping);
    EXPECT_EQ(ping->at("result"), json::object{});
  }
}

// ---------------------------------------------------------------------------------------------
// 2. tools/list

TEST_F(core_path, tools_list_is_the_sorted_union_across_pagination) {
  start(fake_server_table("a", {"--tools", "2"}) +
        fake_server_table("b", {"--tools", "5", "--page-size", "3"}));
  auto expected = with_prefix("a__", fake_tool_names({"--tools", "2"}));
  for (auto& n : with_prefix("b__", fake_tool_names({"--tools", "5"}))) expected.push_back(n);
  std::sort(expected.begin(), expected.end());

  client c = connect_initialized();
  auto r = c.request("tools/list");
  ASSERT_TRUE(member(r, "result")) << dump(r);
  EXPECT_EQ(tool_names(*r), expected);
  // The tool definitions come through with only the name changed.
  const auto& tools = r->at("result").at("tools").as_array();
  auto echo = std::find_if(tools.begin(), tools.end(),
                           [](const json::value& t) { return t.at("name") == "a__echo"; });
  ASSERT_NE(echo, tools.end());
  EXPECT_TRUE(echo->as_object().contains("inputSchema")) << json::serialize(*echo);
}

TEST_F(core_path, prefix_empty_exposes_raw_names_and_custom_prefix_applies) {
  start(fake_server_table("a", {}, "prefix = \"\"") + fake_server_table("b", {}, "prefix = \"x\""));
  auto raw = fake_tool_names({});
  auto expected = raw;
  for (auto& n : with_prefix("x__", raw)) expected.push_back(n);
  std::sort(expected.begin(), expected.end());
  client c = connect_initialized();
  auto r = c.request("tools/list");
  ASSERT_TRUE(member(r, "result")) << dump(r);
  EXPECT_EQ(tool_names(*r), expected);
  auto call = c.call("echo", {{"text", "raw"}});
  EXPECT_EQ(first_text(*call), "raw") << dump(call);
}

TEST_F(core_path, prefix_collision_yields_unique_names_and_a_log_line) {
  const auto log_b = dir_.file("b.log");
  start(fake_server_table("a", {}, "prefix = \"p\"") +
        fake_server_table("b", {"--log", log_b}, "prefix = \"p\""));
  const auto raw = fake_tool_names({});
  client c = connect_initialized();
  auto r = c.request("tools/list");
  ASSERT_TRUE(member(r, "result")) << dump(r);
  const auto names = tool_names(*r);
  EXPECT_EQ(names.size(), 2 * raw.size());
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), names.size());
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const auto& n : names) {
    EXPECT_TRUE(valid_tool_name(n)) << n;
    EXPECT_LE(n.size(), 64u) << n;
  }
  for (const auto& t : raw)
    EXPECT_NE(std::find(names.begin(), names.end(), "p__" + t), names.end()) << t;
  EXPECT_TRUE(daemon_->wait_for_log("collision")) << daemon_->log();
  // The renamed echo still reaches its own server (b loses: servers are processed by name).
  auto renamed = std::find_if(names.begin(), names.end(),
                              [](const std::string& n) { return n.rfind("p__echo_", 0) == 0; });
  ASSERT_NE(renamed, names.end());
  auto call = c.call(*renamed, {{"text", "to-b"}});
  EXPECT_EQ(first_text(*call), "to-b") << dump(call);
  EXPECT_TRUE(wire_id_of_call(log_b, "echo").has_value()) << read_file(log_b);
}

TEST_F(core_path, overlong_tool_names_are_shortened_to_the_limit) {
  const std::string long_prefix(80, 'L');
  const auto log_a = dir_.file("a.log");
  start(
      fake_server_table("a", {"--tools", "2", "--tool-name-prefix", long_prefix, "--log", log_a}));
  client c = connect_initialized();
  auto r = c.request("tools/list");
  ASSERT_TRUE(member(r, "result")) << dump(r);
  const auto names = tool_names(*r);
  std::vector<std::string> shortened;
  for (const auto& n : names) {
    EXPECT_LE(n.size(), 64u) << n;
    EXPECT_TRUE(valid_tool_name(n)) << n;
    if (n.rfind("a__LLLL", 0) == 0) shortened.push_back(n);
  }
  ASSERT_EQ(shortened.size(), 2u) << json::serialize(*r);
  EXPECT_NE(shortened[0], shortened[1]);
  // The shortened name still calls the tool by its original name.
  auto call = c.call(shortened[0]);
  const auto text = first_text(*call);
  EXPECT_TRUE(text == long_prefix + "0 ok" || text == long_prefix + "1 ok") << dump(call);
  EXPECT_TRUE(wire_id_of_call(log_a, long_prefix + "0").has_value() ||
              wire_id_of_call(log_a, long_prefix + "1").has_value())
      << read_file(log_a);
}

TEST_F(core_path, repeated_cursor_is_guarded_and_server_becomes_ready) {
  start(fake_server_table("r", {"--repeat-cursor"}));
  client c = connect_initialized();
  auto r = c.request("tools/list");
  ASSERT_TRUE(member(r, "result")) << dump(r);
  auto expected = with_prefix("r__", fake_tool_names({}));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(tool_names(*r), expected);
  EXPECT_TRUE(daemon_->wait_for_log("cursor")) << daemon_->log();
}

// ---------------------------------------------------------------------------------------------
// 3. tools/call

TEST_F(core_path, tools_call_reaches_the_right_server_with_the_original_name) {
  const auto log_a = dir_.file("a.log");
  const auto log_b = dir_.file("b.log");
  start(fake_server_table("a", {"--log", log_a}) + fake_server_table("b", {"--log", log_b}));
  client c = connect_initialized();
  auto r = c.call("a__echo", {{"text", "hello"}});
  ASSERT_TRUE(member(r, "result")) << dump(r);
  auto direct = find_response(fake_exchange({}, {tools_call(1, "echo", {{"text", "hello"}})}),
                              json::value(1));
  ASSERT_TRUE(direct.is_object());
  EXPECT_EQ(r->at("result"), direct.at("result"));
  EXPECT_EQ(r->at("result").at("structuredContent"), (json::object{{"echo", "hello"}}));

  bool found = false;
  for (const auto& line : read_lines(log_a))
    if (line.find("\"method\":\"tools/call\"") != std::string::npos)
      found = found || line.find("\"name\":\"echo\"") != std::string::npos;
  EXPECT_TRUE(found) << read_file(log_a);
  EXPECT_EQ(read_file(log_b).find("tools/call"), std::string::npos) << read_file(log_b);
}

TEST_F(core_path, tools_call_results_and_errors_pass_through_unchanged) {
  start(fake_server_table("a", {}));
  auto direct = fake_exchange({}, {tools_call(1, "content_types", json::object{}),
                                   tools_call(2, "error_result", json::object{}),
                                   tools_call(3, "rpc_error", json::object{})});
  client c = connect_initialized();

  auto ct = c.call("a__content_types");
  ASSERT_TRUE(member(ct, "result")) << dump(ct);
  EXPECT_EQ(ct->at("result"), find_response(direct, 1).at("result"));
  EXPECT_EQ(ct->at("result").at("_meta"), (json::object{{"fake/trace", "abc"}}));

  auto er = c.call("a__error_result");
  ASSERT_TRUE(member(er, "result")) << dump(er);
  EXPECT_EQ(er->at("result").at("isError"), true);
  EXPECT_EQ(er->at("result"), find_response(direct, 2).at("result"));

  const auto id = c.next_id();
  ASSERT_TRUE(c.send(tools_call(id, "a__rpc_error", json::object{})));
  auto rpc = c.wait_response(json::value(id));
  ASSERT_TRUE(member(rpc, "error")) << dump(rpc);
  EXPECT_EQ(rpc->at("id"), json::value(id));
  EXPECT_EQ(rpc->at("error"), find_response(direct, 3).at("error"));
  EXPECT_EQ(rpc->at("error").at("code"), -32042);
  EXPECT_EQ(rpc->at("error").at("message"), "fake failure");
  EXPECT_EQ(rpc->at("error").at("data"), (json::object{{"why", "asked"}}));

  auto unknown = c.call("a__no_such_tool");
  EXPECT_EQ(error_code(unknown), -32602) << dump(unknown);
  auto unknown_server = c.call("zz__echo");
  EXPECT_EQ(error_code(unknown_server), -32602) << dump(unknown_server);
}

TEST_F(core_path, string_and_integer_client_ids_are_echoed) {
  start(fake_server_table("a", {}));
  client c = connect_initialized();
  const json::value ids[] = {"abc-1", 424242, 0, "7", -5};
  for (const auto& id : ids) {
    json::object req{{"jsonrpc", "2.0"},
                     {"id", id},
                     {"method", "tools/call"},
                     {"params", {{"name", "a__echo"}, {"arguments", {{"text", "x"}}}}}};
    ASSERT_TRUE(c.send(req));
    auto r = c.wait_response(id, 5s);
    ASSERT_TRUE(r.has_value()) << "no answer for id " << json::serialize(id);
    EXPECT_EQ(r->at("id"), id);
    EXPECT_EQ(r->at("id").kind(), id.kind());
    EXPECT_EQ(first_text(*r), "x") << dump(r);
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Concurrency

TEST_F(core_path, a_slow_call_does_not_delay_other_calls_or_clients) {
  start(fake_server_table("a", {}) + fake_server_table("b", {}));
  client c1 = connect_initialized();
  client c2 = connect_initialized();
  client c3 = connect_initialized();
  const auto t0 = steady::now();
  ASSERT_TRUE(c1.send(tools_call(99, "a__slow", {{"ms", 1500}})));
  std::this_thread::sleep_for(50ms);  // let the slow call reach the server first

  auto t = steady::now();
  auto r2 = c2.call("b__echo", {{"text", "two"}}, 5s);
  EXPECT_LT(ms_since(t), 500) << "echo on b waited for the slow call on a";
  EXPECT_EQ(first_text(*r2), "two") << dump(r2);

  t = steady::now();
  auto r3 = c3.call("a__echo", {{"text", "three"}}, 5s);
  EXPECT_LT(ms_since(t), 500) << "echo on a waited for the slow call on a";
  EXPECT_EQ(first_text(*r3), "three") << dump(r3);
  EXPECT_LT(ms_since(t0), 1400) << "the fast calls should finish while the slow one is pending";

  auto r1 = c1.wait_response(99, 5s);
  EXPECT_EQ(first_text(*r1), "slept 1500") << dump(r1);
  EXPECT_GE(ms_since(t0), 1400);
}

TEST_F(core_path, sixteen_calls_in_flight_each_get_their_own_answer) {
  start(fake_server_table("a", {}) + fake_server_table("b", {}));
  client c = connect_initialized();
  std::map<std::int64_t, std::string> expected;
  for (std::int64_t i = 0; i < 16; ++i) {
    const std::int64_t id = 1000 + i;
    if (i % 2 == 0) {
      // Later calls sleep less, so answers come back out of order.
      const std::int64_t delay = 320 - i * 20;
      ASSERT_TRUE(c.send(tools_call(id, "a__slow", {{"ms", delay}})));
      expected[id] = "slept " + std::to_string(delay);
    } else {
      const auto text = "msg-" + std::to_string(i);
      ASSERT_TRUE(c.send(tools_call(id, i % 4 == 1 ? "b__echo" : "a__echo", {{"text", text}})));
      expected[id] = text;
    }
  }
  std::map<std::int64_t, std::string> got;
  const auto deadline = steady::now() + 10s;
  while (got.size() < expected.size() && steady::now() < deadline) {
    auto m = c.read_message(5s);
    ASSERT_TRUE(m.has_value()) << "only " << got.size() << " answers arrived";
    ASSERT_TRUE(m->as_object().contains("id")) << json::serialize(*m);
    const auto id = m->at("id").as_int64();
    EXPECT_FALSE(got.count(id)) << "two answers for id " << id;
    got[id] = first_text(*m);
  }
  EXPECT_EQ(got, expected);
}

// ---------------------------------------------------------------------------------------------
// 5. Bad input on the socket

TEST_F(core_path, malformed_messages_get_json_rpc_errors_and_the_session_survives) {
  start(fake_server_table("a", {}));
  client c = connect();

  ASSERT_TRUE(c.send_line("{this is not json"));
  auto r = c.read_message(5s);
  EXPECT_EQ(error_code(r), -32700) << dump(r);
  ASSERT_TRUE(member(r, "id")) << dump(r);
  EXPECT_TRUE(r->at("id").is_null()) << dump(r);
  auto ping = c.request("ping");
  EXPECT_TRUE(member(ping, "result")) << dump(ping);

  ASSERT_TRUE(c.send_line(R"({"hello":1})"));
  r = c.read_message(5s);
  EXPECT_EQ(error_code(r), -32600) << dump(r);

  ASSERT_TRUE(c.send_line(
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}])"));
  r = c.read_message(5s);
  EXPECT_EQ(error_code(r), -32600) << dump(r);

  // Before initialize: an error, but not "method not found".
  auto early = c.request("tools/list");
  ASSERT_TRUE(member(early, "error")) << dump(early);
  EXPECT_NE(error_code(early), -32601) << dump(early);
  ASSERT_TRUE(c.initialize().has_value());
  auto list = c.request("tools/list");
  EXPECT_TRUE(member(list, "result")) << dump(list);

  auto unknown = c.request("no/such_method");
  EXPECT_EQ(error_code(unknown), -32601) << dump(unknown);
  auto call = c.call("a__echo", {{"text", "still fine"}});
  EXPECT_EQ(first_text(*call), "still fine") << dump(call);
}

TEST_F(core_path, oversize_line_gets_an_error_and_closes_only_that_connection) {
  start("[daemon]\nmax_message_bytes = 4096\n\n" + fake_server_table("a", {}));
  client other = connect_initialized();
  client big = connect();
  std::string line = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":")" +
                     std::string(5000, 'x') + "\"}}";
  ASSERT_TRUE(big.send_line(line));
  auto r = big.read_message(5s);
  ASSERT_TRUE(member(r, "error")) << dump(r);
  EXPECT_NE(error_code(r), 0);
  EXPECT_NE(error_message(r).find("4096"), std::string::npos) << dump(r);
  EXPECT_TRUE(big.wait_eof(5s)) << "the daemon kept the connection open";

  auto call = other.call("a__echo", {{"text", "unaffected"}});
  EXPECT_EQ(first_text(*call), "unaffected") << dump(call);
}

// ---------------------------------------------------------------------------------------------
// 6. Upstream misbehaviour and server→client requests

TEST_F(core_path, garbage_from_a_server_is_skipped_and_logged) {
  start("[daemon]\nmax_message_bytes = 65536\n\n" +
        fake_server_table("a", {"--oversize-bytes", "100000"}));
  client c = connect_initialized();
  auto r = c.call("a__garbage");
  EXPECT_EQ(first_text(*r), "after garbage") << dump(r);
  EXPECT_TRUE(daemon_->wait_for_log("skipped a line")) << daemon_->log();
  EXPECT_TRUE(daemon_->wait_for_log("exceeds max_message_bytes")) << daemon_->log();
  auto later = c.call("a__echo", {{"text", "later"}});
  EXPECT_EQ(first_text(*later), "later") << dump(later);
}

// A server's answer over max_message_bytes is discarded: the call waiting for it fails at once,
// saying why, instead of at its timeout. Its first bytes name the id, so a call in flight beside
// it is untouched; an answer whose id comes last (as the TypeScript SDK writes it) cannot be told
// from another's, so every call pending on that server fails with the same reason.
TEST_F(core_path, an_oversize_answer_fails_the_waiting_call_at_once) {
  start("[daemon]\nmax_message_bytes = 65536\n\n" +
        fake_server_table("a", {}, "timeout_ms = 20000"));
  client c = connect_initialized();
  auto send_slow = [&](std::int64_t ms) {
    const auto id = c.next_id();
    EXPECT_TRUE(c.send({{"jsonrpc", "2.0"},
                        {"id", id},
                        {"method", "tools/call"},
                        {"params", {{"name", "a__slow"}, {"arguments", {{"ms", ms}}}}}}));
    return id;
  };
  // The answer with `id`, among those read already or to come.
  auto answer = [&](std::int64_t id) -> std::optional<json::value> {
    for (const auto& m : c.notifications())
      if (m.is_object() && m.as_object().if_contains("id") && m.at("id") == id) return m;
    return c.wait_response(id, 10s);
  };
  const std::string reason = "over max_message_bytes; it was discarded";

  const auto beside = send_slow(1500);
  auto t0 = steady::now();
  auto r = c.call("a__huge_answer", {{"bytes", 1 << 20}}, 15s);
  EXPECT_LT(steady::now() - t0, 5s) << "the call waited for its timeout (20 s)";
  EXPECT_NE(error_message(r).find(reason), std::string::npos) << dump(r);
  EXPECT_EQ(first_text(answer(beside).value_or(nullptr)), "slept 1500");

  const auto pending = send_slow(3000);
  t0 = steady::now();
  r = c.call("a__huge_answer", {{"bytes", 1 << 20}, {"id_last", true}}, 15s);
  EXPECT_LT(steady::now() - t0, 2500ms) << "the call waited";
  EXPECT_NE(error_message(r).find(reason), std::string::npos) << dump(r);
  auto other = answer(pending);
  EXPECT_NE(error_message(other).find(reason), std::string::npos) << dump(other);

  auto later = c.call("a__echo", {{"text", "later"}});
  EXPECT_EQ(first_text(*later), "later") << dump(later);
}

TEST_F(core_path, server_to_client_requests_are_answered) {
  const std::string cwd = dir_.path();
  start(fake_server_table("a", {}, "roots = [\"/tmp/x y\"]") +
        fake_server_table("b", {}, "cwd = " + toml_quote(cwd)));
  client c = connect_initialized();

  auto ping = c.call("a__ping_client");
  EXPECT_EQ(parse_or_null(first_text(*ping)), json::object{}) << dump(ping);

  auto roots = c.call("a__roots");
  auto rv = parse_or_null(first_text(*roots));
  ASSERT_TRUE(rv.is_object() && rv.as_object().contains("roots")) << dump(roots);
  ASSERT_EQ(rv.at("roots").as_array().size(), 1u) << dump(roots);
  EXPECT_EQ(rv.at("roots").at(0).at("uri"), "file:///tmp/x%20y") << dump(roots);

  auto def = c.call("b__roots");
  auto dv = parse_or_null(first_text(*def));
  ASSERT_TRUE(dv.is_object() && dv.as_object().contains("roots")) << dump(def);
  ASSERT_EQ(dv.at("roots").as_array().size(), 1u) << dump(def);
  EXPECT_EQ(dv.at("roots").at(0).at("uri"), json::value("file://" + cwd)) << dump(def);

  auto sampling = c.call("a__client_request", {{"method", "sampling/createMessage"}});
  auto sv = parse_or_null(first_text(*sampling));
  ASSERT_TRUE(sv.is_object() && sv.as_object().contains("error")) << dump(sampling);
  EXPECT_EQ(sv.at("error").at("code"), -32601) << dump(sampling);
}

// ---------------------------------------------------------------------------------------------
// 7. Timeouts

TEST_F(core_path, call_timeout_names_server_method_and_limit_and_cancels_upstream) {
  const auto log_a = dir_.file("a.log");
  start(fake_server_table("a", {"--log", log_a}, "timeout_ms = 300"));
  client c = connect_initialized();
  const auto t = steady::now();
  auto r = c.call("a__slow", {{"ms", 3000}}, 5s);
  const auto elapsed = ms_since(t);
  ASSERT_TRUE(member(r, "error")) << dump(r);
  const auto msg = error_message(r);
  EXPECT_NE(msg.find("\"a\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("tools/call"), std::string::npos) << msg;
  EXPECT_NE(msg.find("300ms"), std::string::npos) << msg;
  EXPECT_GE(elapsed, 250);
  EXPECT_LT(elapsed, 1000);

  auto wire = wire_id_of_call(log_a, "slow");
  ASSERT_TRUE(wire.has_value()) << read_file(log_a);
  EXPECT_TRUE(wait_until([&] { return logged_cancel_for(log_a, *wire); }, 2s))
      << "no notifications/cancelled for " << json::serialize(*wire) << " in\n"
      << read_file(log_a);
}

TEST_F(core_path, timeout_env_overrides_the_config) {
  daemon_options opt;
  opt.env["MCPMUX_TIMEOUT_MS"] = "400";
  start(fake_server_table("a", {}, "timeout_ms = 20000"), opt);
  client c = connect_initialized();
  const auto t = steady::now();
  auto r = c.call("a__slow", {{"ms", 3000}}, 5s);
  const auto elapsed = ms_since(t);
  ASSERT_TRUE(member(r, "error")) << dump(r);
  EXPECT_NE(error_message(r).find("400ms"), std::string::npos) << dump(r);
  EXPECT_LT(elapsed, 1500);
}

// ---------------------------------------------------------------------------------------------
// 8. Crash

TEST_F(core_path, crashing_server_gives_a_clear_error_and_leaves_no_zombie) {
  start(fake_server_table("a", {}) + fake_server_table("b", {}));
  client c = connect_initialized();
  const auto t = steady::now();
  auto r = c.call("a__crash", json::object{}, 8s);
  ASSERT_TRUE(r.has_value()) << "no answer to a call whose server crashed";
  EXPECT_LT(ms_since(t), 3000);
  ASSERT_TRUE(member(r, "error")) << dump(r);
  EXPECT_NE(error_message(r).find("\"a\""), std::string::npos) << dump(r);

  auto st = run_cli(daemon_->socket(), {"status", "--json"});
  ASSERT_EQ(st.exit_code, 0) << st.err;
  auto sv = parse_or_null(st.out);
  ASSERT_TRUE(sv.is_object()) << st.out;
  std::string last_error;
  for (const auto& s : sv.at("servers").as_array())
    if (s.at("name") == "a" && s.at("last_error").is_string())
      last_error = s.at("last_error").as_string();
  EXPECT_NE(last_error.find("exited with code 3"), std::string::npos) << st.out;

  auto zombies = [&] {
    int n = 0;
    for (pid_t p : daemon_->children()) n += process_state(p) == 'Z';
    return n;
  };
  EXPECT_TRUE(wait_until([&] { return zombies() == 0; }, 3s))
      << zombies() << " defunct children of mcpmuxd";
  // The other server is unaffected.
  auto echo = c.call("b__echo", {{"text", "alive"}});
  EXPECT_EQ(first_text(*echo), "alive") << dump(echo);
}

// ---------------------------------------------------------------------------------------------
// 9. list_changed

TEST_F(core_path, upstream_list_changed_reaches_every_client) {
  // (The tool it adds is accepted: under the default on_change it would be quarantined.)
  start(fake_server_table("a", {}, "on_change = \"accept\"\n"));
  client c1 = connect_initialized();
  client c2 = connect_initialized();
  auto r = c1.call("a__list_changed");
  EXPECT_EQ(first_text(*r), "added added_0") << dump(r);
  EXPECT_TRUE(c1.wait_notification("notifications/tools/list_changed", 5s).has_value());
  EXPECT_TRUE(c2.wait_notification("notifications/tools/list_changed", 5s).has_value());
  for (client* c : {&c1, &c2}) {
    auto list = c->request("tools/list");
    auto names = tool_names(*list);
    EXPECT_NE(std::find(names.begin(), names.end(), "a__added_0"), names.end()) << dump(list);
  }
}

// ---------------------------------------------------------------------------------------------
// 10. Client disconnect mid-call

TEST_F(core_path, client_disconnect_cancels_its_calls_upstream) {
  const auto log_a = dir_.file("a.log");
  start(fake_server_table("a", {"--log", log_a}));
  const int baseline_fds = daemon_->settled_fds();
  client c1 = connect_initialized();
  client c2 = connect_initialized();
  ASSERT_TRUE(c1.send(tools_call(5, "a__slow", {{"ms", 2000}})));
  std::optional<json::value> wire;
  ASSERT_TRUE(wait_until([&] { return (wire = wire_id_of_call(log_a, "slow")).has_value(); }, 3s))
      << read_file(log_a);
  const auto t = steady::now();
  c1.close();
  EXPECT_TRUE(wait_until([&] { return logged_cancel_for(log_a, *wire); }, 3s))
      << "no notifications/cancelled for " << json::serialize(*wire) << " in\n"
      << read_file(log_a);
  EXPECT_LT(ms_since(t), 1500) << "cancellation should be prompt, not after the call finished";
  auto r = c2.call("a__echo", {{"text", "still here"}});
  EXPECT_EQ(first_text(*r), "still here") << dump(r);
  c2.close();
  EXPECT_TRUE(wait_until([&] { return daemon_->open_fds() == baseline_fds; }, 5s))
      << daemon_->open_fds() << " open descriptors, " << baseline_fds << " before the clients:\n"
      << daemon_->describe_fds();
}

// ---------------------------------------------------------------------------------------------
// 11. Slow reader

TEST_F(core_path, client_that_does_not_read_is_disconnected_without_harming_others) {
  // (Results whole: the queue is what is tested, not the paging of max_result_bytes.)
  start(
      "[daemon]\nmax_client_queue_bytes = 4194304\nmax_message_bytes = 2097152\n"
      "max_result_bytes = 0\n\n" +
      fake_server_table("a", {}));
  const int baseline_fds = daemon_->settled_fds();
  client slow = connect_initialized();
  client other = connect_initialized();
  // Each answer carries the text twice (content and structuredContent): ~1.8 MB, under the cap.
  const std::string text(900 * 1024, 'z');
  for (int i = 0; i < 12; ++i)
    if (!slow.send(tools_call(100 + i, "a__echo", {{"text", text}}), 5s)) break;
  EXPECT_TRUE(daemon_->wait_for_log("not reading", 10s)) << daemon_->log();
  auto r = other.call("a__echo", {{"text", "fine"}});
  EXPECT_EQ(first_text(*r), "fine") << dump(r);
  EXPECT_TRUE(slow.wait_eof(10s)) << "the slow reader's connection was not closed";
  r = other.call("a__echo", {{"text", "still fine"}});
  EXPECT_EQ(first_text(*r), "still fine") << dump(r);
  // Both connections are released once closed (no descriptor leak).
  slow.close();
  other.close();
  EXPECT_TRUE(wait_until([&] { return daemon_->open_fds() == baseline_fds; }, 5s))
      << daemon_->open_fds() << " open descriptors, " << baseline_fds << " before the clients:\n"
      << daemon_->describe_fds();
}

// Memory handed back: while servers start the heap keeps a reserve (in huge pages, big blocks
// inside it); once they have started, a big message's buffers are mapped and unmapped again,
// so a 6 MiB answer does not stay resident after it was sent.
TEST_F(core_path, big_answers_do_not_stay_resident_once_servers_have_started) {
  if (std::getenv("MCPMUX_SANITIZED"))
    GTEST_SKIP() << "under AddressSanitizer freed memory sits in its quarantine";
  start("[daemon]\nmax_message_bytes = 16777216\nmax_result_bytes = 0\n\n" +
        fake_server_table("a", {}));
  client c = connect_initialized();
  auto r = c.call("a__echo", {{"text", "warm"}});  // the paths of a call, used once
  ASSERT_EQ(first_text(*r), "warm") << dump(r);
  const long before = vm_rss_kib(daemon_->pid());
  const std::string text(3 * 1024 * 1024, 'z');  // the answer carries it twice
  r = c.call("a__echo", {{"text", text}});
  ASSERT_EQ(first_text(*r).size(), text.size());
  long after = 0;
  EXPECT_TRUE(wait_until([&] { return (after = vm_rss_kib(daemon_->pid())) < before + 2048; }, 3s))
      << "VmRSS " << before << " KiB before the big call, " << after << " KiB after";
}

// ---------------------------------------------------------------------------------------------
// 12. Shutdown

TEST_F(core_path, sigterm_stops_daemon_and_stubborn_children_and_removes_socket) {
  start(fake_server_table("a", {"--ignore-sigterm"}));
  auto st = daemon_->status();
  ASSERT_TRUE(st.is_object());
  const auto& srv = st.at("servers").at(0);
  ASSERT_TRUE(srv.at("pid").is_int64()) << json::serialize(st);
  const auto child = static_cast<pid_t>(srv.at("pid").as_int64());
  ASSERT_TRUE(process_exists(child));
  client c = connect_initialized();  // a connected client must not hold up the stop

  const auto t = steady::now();
  EXPECT_EQ(daemon_->stop(5s), 0);
  EXPECT_LT(ms_since(t), 5000);
  EXPECT_TRUE(wait_until([&] { return !process_exists(child); }, 1s))
      << "server pid " << child << " survived the daemon (state " << process_state(child) << ")";
  EXPECT_FALSE(std::filesystem::exists(daemon_->socket())) << "socket file left behind";
  EXPECT_TRUE(c.wait_eof(2s));
}

// ---------------------------------------------------------------------------------------------
// 13. CLI

TEST_F(core_path, cli_tools_call_and_status) {
  start(fake_server_table("a", {}));
  const auto& sock = daemon_->socket();

  auto tools = run_cli(sock, {"tools", "--json"});
  ASSERT_EQ(tools.exit_code, 0) << tools.err;
  auto tv = parse_or_null(tools.out);
  ASSERT_TRUE(tv.is_array()) << tools.out;
  EXPECT_EQ(tv.as_array().size(), fake_tool_names({}).size());
  bool found = false;
  for (const auto& t : tv.as_array())
    if (t.at("name") == "a__echo") {
      found = true;
      EXPECT_EQ(t.at("server"), "a");
      EXPECT_EQ(t.at("original"), "echo");
    }
  EXPECT_TRUE(found) << tools.out;

  auto hi = run_cli(sock, {"call", "a__echo", R"({"text":"hi"})"});
  EXPECT_EQ(hi.exit_code, 0) << hi.err;
  EXPECT_EQ(hi.out, "hi\n");

  auto failed = run_cli(sock, {"call", "a__error_result"});
  EXPECT_EQ(failed.exit_code, 1) << failed.out << failed.err;

  auto status = run_cli(sock, {"status", "--json"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  auto sv = parse_or_null(status.out);
  ASSERT_TRUE(sv.is_object()) << status.out;
  EXPECT_EQ(sv.at("servers").at(0).at("name"), "a");
  EXPECT_EQ(sv.at("servers").at(0).at("state"), "ready");

  auto none = run_cli(dir_.file("nobody-here.sock"), {"tools"});
  EXPECT_EQ(none.exit_code, 3) << none.out << none.err;
}

TEST_F(core_path, cli_connect_bridges_stdin_to_the_daemon) {
  start(fake_server_table("a", {}));
  const std::string input =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
      R"("capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n"
      R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"
      "\n";
  auto r = run_cli(daemon_->socket(), {"connect"}, input, 10s);
  EXPECT_FALSE(r.timed_out) << "mcpmux connect did not exit after stdin EOF";
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<json::value> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) out.push_back(parse_or_null(line));
  auto init = find_response(out, 1);
  ASSERT_TRUE(init.is_object()) << r.out;
  EXPECT_EQ(init.at("result").at("protocolVersion"), "2025-06-18");
  auto list = find_response(out, 2);
  ASSERT_TRUE(list.is_object()) << r.out;
  EXPECT_FALSE(tool_names(list).empty()) << r.out;
}

// ---------------------------------------------------------------------------------------------
// 14. Sockets

TEST_F(core_path, socket_permissions_single_instance_and_stale_socket) {
  daemon_options opt;
  const auto sock_dir = dir_.file("run/mcpmux");
  opt.socket = sock_dir + "/mcpmux.sock";
  start("[daemon]\n", opt);
  ASSERT_TRUE(daemon_->started());

  struct stat st {};
  ASSERT_EQ(::stat(opt.socket.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(sock_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  auto second = run_process(
      {mcpmuxd_path(), "--config", dir_.file("config.toml"), "--socket", opt.socket}, {}, 5s);
  EXPECT_FALSE(second.timed_out) << "a second daemon on the same socket kept running";
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("already"), std::string::npos) << second.err;
  {
    client c = connect();
    auto ping = c.request("ping");
    EXPECT_TRUE(member(ping, "result")) << "the first daemon stopped serving: " << dump(ping);
  }

  daemon_->kill_hard();
  ASSERT_TRUE(std::filesystem::exists(opt.socket)) << "expected a stale socket file";
  daemon fresh(dir_, opt);
  ASSERT_TRUE(fresh.started());
  client c(opt.socket);
  ASSERT_TRUE(c.connected());
  auto ping = c.request("ping");
  EXPECT_TRUE(member(ping, "result")) << dump(ping);
  EXPECT_EQ(fresh.stop(), 0);
}

// ---------------------------------------------------------------------------------------------
// 15. Config errors

TEST_F(core_path, check_config_reports_file_line_and_key) {
  const auto bad = dir_.write("bad.toml", "[daemon]\ntimeout_ms = \"soon\"\n");
  auto r = run_process({mcpmuxd_path(), "--check-config", "--config", bad});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(bad\.toml:2: daemon\.timeout_ms: \S)")))
      << r.err;

  const auto bad2 =
      dir_.write("bad2.toml", "[daemon]\n\n[servers.x]\ncommand = \"x\"\nno_such_key = 1\n");
  r = run_process({mcpmuxd_path(), "--check-config", "--config", bad2});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(bad2\.toml:5: servers\.x\.no_such_key: \S)")))
      << r.err;

  const auto good = dir_.write("good.toml", fake_server_table("a", {}));
  r = run_process({mcpmuxd_path(), "--check-config", "--config", good});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

}  // namespace
}  // namespace mcpmux::test
