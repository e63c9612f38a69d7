// Integration tests of the 2026-07-28 era on the socket: a modern client (per-request _meta, no
// initialize) beside legacy ones, in front of legacy servers — server/discover, cache hints,
// per-request validation, subscriptions/listen, and a server's elicitation bridged to MRTR.
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

class eras : public daemon_test {};

std::string dump(const std::optional<json::value>& v) {
  return v ? json::serialize(*v) : std::string("<no message>");
}

json::object meta(json::object caps = {}, std::string_view version = "2026-07-28") {
  return json::object{{"io.modelcontextprotocol/protocolVersion", version},
                      {"io.modelcontextprotocol/clientCapabilities", std::move(caps)},
                      {"io.modelcontextprotocol/clientInfo",
                       json::object{{"name", "modern-test"}, {"version", "1"}}}};
}

// A modern request's params: `p` plus the _meta every request carries.
json::value with_meta(json::object p = {}, json::object m = meta()) {
  p["_meta"] = std::move(m);
  return p;
}

const json::value& result_of(const std::optional<json::value>& r) {
  static const json::value none;
  const auto* v = member(r, "result");
  return v ? *v : none;
}

int error_code(const std::optional<json::value>& r) {
  const auto* e = member(r, "error");
  return e ? static_cast<int>(e->at("code").as_int64()) : 0;
}

TEST_F(eras, discover_describes_the_gateway_statelessly) {
  start(fake_server_table("alpha", {"--instructions", "ALPHA-1", "--prompts", "1"}));
  client c = connect();
  auto r = c.request("server/discover", with_meta());
  const auto& res = result_of(r);
  ASSERT_TRUE(res.is_object()) << dump(r);
  EXPECT_EQ(res.at("resultType"), "complete");
  EXPECT_EQ(res.at("supportedVersions"), json::array{"2026-07-28"});
  EXPECT_EQ(res.at("capabilities").at("tools").at("listChanged"), true);
  EXPECT_TRUE(res.at("capabilities").as_object().contains("prompts"));
  EXPECT_TRUE(res.at("ttlMs").is_int64()) << dump(r);
  EXPECT_GE(res.at("ttlMs").as_int64(), 0);
  EXPECT_EQ(res.at("cacheScope"), "public");
  EXPECT_EQ(res.at("_meta").at("io.modelcontextprotocol/serverInfo").at("name"), "mcpmux");
  EXPECT_NE(std::string(res.at("instructions").as_string()).find("ALPHA-1"), std::string::npos);
  // No initialize needed for anything else either.
  auto tools = c.request("tools/list", with_meta());
  ASSERT_TRUE(result_of(tools).is_object()) << dump(tools);
  EXPECT_EQ(result_of(tools).at("resultType"), "complete");
  EXPECT_EQ(result_of(tools).at("cacheScope"), "public");
  EXPECT_TRUE(result_of(tools).at("ttlMs").is_int64());
  // The same tools, in the same order, as a legacy client sees.
  client legacy = connect_initialized();
  EXPECT_EQ(tool_names(*tools), tool_names(*legacy.request("tools/list")));
}

TEST_F(eras, every_modern_request_is_checked_on_its_own) {
  start(fake_server_table("alpha", {}));
  client c = connect();
  ASSERT_TRUE(result_of(c.request("tools/list", with_meta())).is_object());
  // Without _meta: -32602 (the connection is modern; its requests are stateless).
  auto r = c.request("tools/list", json::object{});
  EXPECT_EQ(error_code(r), -32602) << dump(r);
  // Without capabilities: -32602.
  json::object m = meta();
  m.erase("io.modelcontextprotocol/clientCapabilities");
  r = c.request("tools/list", with_meta({}, m));
  EXPECT_EQ(error_code(r), -32602) << dump(r);
  // An unknown version: -32022 with the supported ones and the requested one.
  r = c.request("tools/list", with_meta({}, meta({}, "2099-01-01")));
  ASSERT_EQ(error_code(r), -32022) << dump(r);
  const auto& data = r->at("error").at("data");
  EXPECT_EQ(data.at("requested"), "2099-01-01");
  EXPECT_EQ(data.at("supported").as_array().front(), "2026-07-28");
  // A bad log level: -32602.
  m = meta();
  m["io.modelcontextprotocol/logLevel"] = "loud";
  r = c.request("tools/list", with_meta({}, m));
  EXPECT_EQ(error_code(r), -32602) << dump(r);
  // Methods of the legacy era are gone; initialize does not switch eras.
  EXPECT_EQ(error_code(c.request("ping", with_meta())), -32601);
  EXPECT_EQ(error_code(c.request("logging/setLevel", with_meta({{"level", "info"}}))), -32601);
  EXPECT_EQ(error_code(c.request("resources/subscribe", with_meta({{"uri", "x://y"}}))), -32601);
  r = c.request("initialize",
                json::object{{"protocolVersion", "2025-11-25"},
                             {"capabilities", json::object{}},
                             {"clientInfo", json::object{{"name", "x"}, {"version", "1"}}}});
  EXPECT_EQ(error_code(r), -32601) << dump(r);
  // And the connection still serves.
  EXPECT_TRUE(result_of(c.request("tools/list", with_meta())).is_object());
}

TEST_F(eras, a_legacy_server_serves_modern_calls_without_their_meta) {
  const std::string log = dir_.path() + "/alpha.log";
  start(fake_server_table("alpha", {"--log", log}));
  client c = connect();
  json::object m = meta();
  m["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
  auto r = c.request(
      "tools/call",
      with_meta({{"name", "alpha__echo"}, {"arguments", json::object{{"text", "hi"}}}}, m));
  const auto& res = result_of(r);
  ASSERT_TRUE(res.is_object()) << dump(r);
  EXPECT_EQ(res.at("resultType"), "complete");
  EXPECT_EQ(first_text(*r), "hi");
  // The legacy server heard the call without the client's _meta (and mcpmux's era probe, a
  // server/discover it refused, before its initialize).
  bool seen_call = false;
  for (const auto& line : read_lines(log)) {
    if (line.find("\"tools/call\"") == std::string::npos) continue;
    seen_call = true;
    EXPECT_EQ(line.find("io.modelcontextprotocol/"), std::string::npos) << line;
    // Trace context passes through (W3C traceparent, reserved by MCP without a prefix).
    EXPECT_NE(line.find("0af7651916cd43dd8448eb211c80319c"), std::string::npos) << line;
  }
  EXPECT_TRUE(seen_call);
  EXPECT_NE(read_file(log).find("server/discover"), std::string::npos);
  // An unknown tool is an error, as for a legacy client.
  EXPECT_EQ(error_code(c.request("tools/call", with_meta({{"name", "nope"}}))), -32602);
}

TEST_F(eras, a_servers_elicitation_becomes_input_required_and_the_retry_finishes_the_call) {
  start(fake_server_table("alpha", {}));
  client c = connect();
  const json::object caps{{"elicitation", json::object{}}};
  auto r = c.request("tools/call", with_meta({{"name", "alpha__elicit"},
                                              {"arguments", json::object{{"message", "name?"}}}},
                                             meta(caps)));
  const auto& res = result_of(r);
  ASSERT_TRUE(res.is_object()) << dump(r);
  ASSERT_EQ(res.at("resultType"), "input_required") << dump(r);
  const auto& requests = res.at("inputRequests").as_object();
  ASSERT_EQ(requests.size(), 1u) << dump(r);
  const auto& [key, ask] = *requests.begin();
  EXPECT_EQ(ask.at("method"), "elicitation/create");
  EXPECT_EQ(ask.at("params").at("message"), "name?");
  const std::string state(res.at("requestState").as_string());

  // A forged state is refused and harms nothing.
  auto forged = c.request("tools/call", with_meta({{"name", "alpha__elicit"},
                                                   {"requestState", state + "x"},
                                                   {"inputResponses", json::object{}}},
                                                  meta(caps)));
  EXPECT_EQ(error_code(forged), -32602) << dump(forged);
  forged =
      c.request("tools/call",
                with_meta({{"name", "alpha__elicit"}, {"requestState", "made-up"}}, meta(caps)));
  EXPECT_EQ(error_code(forged), -32602) << dump(forged);

  // A retry refused for its shape keeps the call: the state still works afterwards.
  auto malformed = c.request("tools/call", with_meta({{"name", "alpha__elicit"},
                                                      {"requestState", state},
                                                      {"inputResponses", "not an object"}},
                                                     meta(caps)));
  EXPECT_EQ(error_code(malformed), -32602) << dump(malformed);

  // The retry, on another connection (the era is stateless), finishes the call.
  client other = connect();
  json::object answer{{"action", "accept"}, {"content", json::object{{"answer", "octocat"}}}};
  auto done =
      other.request("tools/call", with_meta({{"name", "alpha__elicit"},
                                             {"arguments", json::object{{"message", "name?"}}},
                                             {"inputResponses", json::object{{key, answer}}},
                                             {"requestState", state}},
                                            meta(caps)));
  const auto& final_result = result_of(done);
  ASSERT_TRUE(final_result.is_object()) << dump(done);
  EXPECT_EQ(final_result.at("resultType"), "complete");
  // The fake reports the client's whole answer: the elicitation result went to the server.
  EXPECT_NE(first_text(*done).find("octocat"), std::string::npos) << dump(done);

  // A state works once.
  auto again = other.request("tools/call", with_meta({{"name", "alpha__elicit"},
                                                      {"inputResponses", json::object{}},
                                                      {"requestState", state}},
                                                     meta(caps)));
  EXPECT_EQ(error_code(again), -32602) << dump(again);
}

TEST_F(eras, elicitation_is_not_asked_of_a_client_that_did_not_declare_it) {
  start(fake_server_table("alpha", {}));
  client c = connect();
  auto r = c.request("tools/call", with_meta({{"name", "alpha__elicit"}}));
  const auto& res = result_of(r);
  ASSERT_TRUE(res.is_object()) << dump(r);
  EXPECT_EQ(res.at("resultType"), "complete") << dump(r);
  // The server heard an error in place of an answer, and said so in its result.
  EXPECT_NE(first_text(*r).find("error"), std::string::npos) << dump(r);
}

TEST_F(eras, listen_acknowledges_then_streams_list_changes_until_cancelled) {
  // (The tools it adds are accepted: under the default on_change they would be quarantined.)
  start(
      fake_server_table("alpha", {"--resources", "1", "--subscribe"}, "on_change = \"accept\"\n"));
  client c = connect();
  // Task ids need the tasks extension declared: without it, -32021 naming it.
  auto refused =
      c.request("subscriptions/listen",
                with_meta({{"notifications", json::object{{"taskIds", json::array{"alpha/t1"}}}}}));
  ASSERT_TRUE(member(refused, "error")) << dump(refused);
  EXPECT_EQ(member(refused, "error")->at("code"), -32021) << dump(refused);
  const auto id = c.next_id();
  const json::object tasks{{"extensions", {{"io.modelcontextprotocol/tasks", json::object{}}}}};
  ASSERT_TRUE(c.send(json::object{
      {"jsonrpc", "2.0"},
      {"id", id},
      {"method", "subscriptions/listen"},
      {"params", with_meta({{"notifications",
                             json::object{{"toolsListChanged", true},
                                          {"resourceSubscriptions", json::array{"fake://alpha/r0"}},
                                          {"taskIds", json::array{"alpha/t1"}}}}},
                           meta(tasks))}}));
  auto ack = c.wait_notification("notifications/subscriptions/acknowledged");
  ASSERT_TRUE(ack.has_value());
  const auto& p = ack->at("params");
  EXPECT_EQ(p.at("_meta").at("io.modelcontextprotocol/subscriptionId"), id);
  EXPECT_EQ(p.at("notifications").at("toolsListChanged"), true);
  EXPECT_EQ(p.at("notifications").at("resourceSubscriptions"), json::array{"fake://alpha/r0"});
  // A legacy server has no tasks: its id is not agreed to.
  EXPECT_EQ(p.at("notifications").at("taskIds"), json::array{});

  // A change of the tool list arrives on the stream, with its subscription id.
  auto added = c.request("tools/call", with_meta({{"name", "alpha__list_changed"}}));
  ASSERT_TRUE(result_of(added).is_object()) << dump(added);
  auto note = c.wait_notification("notifications/tools/list_changed");
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId"), id);
  // A subscribed resource's update too.
  auto touched =
      c.request("tools/call", with_meta({{"name", "alpha__touch"},
                                         {"arguments", json::object{{"uri", "fake://alpha/r0"}}}}));
  EXPECT_NE(first_text(*touched).find("touched"), std::string::npos) << dump(touched);
  auto updated = c.wait_notification("notifications/resources/updated");
  ASSERT_TRUE(updated.has_value());
  EXPECT_EQ(updated->at("params").at("uri"), "fake://alpha/r0");
  EXPECT_EQ(updated->at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId"), id);

  // Cancelled: nothing more comes.
  ASSERT_TRUE(c.send(json::object{{"jsonrpc", "2.0"},
                                  {"method", "notifications/cancelled"},
                                  {"params", json::object{{"requestId", id}}}}));
  c.notifications().clear();
  added = c.request("tools/call", with_meta({{"name", "alpha__list_changed"}}));
  ASSERT_TRUE(result_of(added).is_object()) << dump(added);
  EXPECT_FALSE(c.wait_notification("notifications/tools/list_changed", 300ms).has_value());
}

TEST_F(eras, log_messages_reach_a_modern_client_only_for_calls_that_ask) {
  start(fake_server_table("alpha", {"--logging"}));
  client c = connect();
  json::object m = meta();
  m["io.modelcontextprotocol/logLevel"] = "info";
  auto r =
      c.request("tools/call",
                with_meta({{"name", "alpha__log"},
                           {"arguments", json::object{{"level", "warning"}, {"text", "asked"}}}},
                          m));
  ASSERT_TRUE(result_of(r).is_object()) << dump(r);
  auto note = c.wait_notification("notifications/message");
  ASSERT_TRUE(note.has_value());
  EXPECT_EQ(note->at("params").at("data"), "asked");
  // Below the asked level: not sent.
  c.notifications().clear();
  r = c.request("tools/call",
                with_meta({{"name", "alpha__log"},
                           {"arguments", json::object{{"level", "debug"}, {"text", "too low"}}}},
                          m));
  ASSERT_TRUE(result_of(r).is_object()) << dump(r);
  EXPECT_FALSE(c.wait_notification("notifications/message", 300ms).has_value());
  // Without logLevel: none.
  r = c.request("tools/call",
                with_meta({{"name", "alpha__log"},
                           {"arguments", json::object{{"level", "error"}, {"text", "unasked"}}}}));
  ASSERT_TRUE(result_of(r).is_object()) << dump(r);
  EXPECT_FALSE(c.wait_notification("notifications/message", 300ms).has_value());
}

TEST_F(eras, a_modern_client_never_hears_legacy_broadcasts) {
  start(fake_server_table("alpha", {}, "on_change = \"accept\"\n"));
  client c = connect();
  ASSERT_TRUE(result_of(c.request("tools/list", with_meta())).is_object());
  client legacy = connect_initialized();
  auto added = legacy.call("alpha__list_changed");
  ASSERT_TRUE(member(added, "result")) << dump(added);
  EXPECT_TRUE(legacy.wait_notification("notifications/tools/list_changed").has_value());
  // Without a listen stream the modern client is told nothing (it re-lists when its cache
  // expires).
  EXPECT_FALSE(c.wait_notification("notifications/tools/list_changed", 300ms).has_value());
}

}  // namespace
}  // namespace mcpmux::test

namespace mcpmux::test {
namespace {

class upstream_eras : public daemon_test {};

json::object server_of(const json::value& status, std::string_view name) {
  for (const auto& s : status.at("servers").as_array())
    if (s.at("name") == json::value(name)) return s.as_object();
  return {};
}

TEST_F(upstream_eras, a_server_that_dies_on_the_probe_is_legacy_and_comes_up_at_once) {
  const std::string log = dir_.path() + "/d.log";
  auto& d = start(fake_server_table("dies", {"--fault", "server/discover=exit", "--log", log}));
  auto st = d.status();
  auto s = server_of(st, "dies");
  EXPECT_EQ(s.at("state"), "ready") << json::serialize(st);
  EXPECT_EQ(s.at("era"), "legacy");
  EXPECT_EQ(s.at("errors"), 0);
  // The second process was initialized straight away: its first request is initialize.
  const auto lines = read_lines(log);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("tools/list"), std::string::npos) << lines.back();
  client c = connect_initialized();
  EXPECT_EQ(first_text(*c.call("dies__echo", json::object{{"text", "up"}})), "up");
  EXPECT_TRUE(d.wait_for_log("exited on the era probe"));
}

TEST_F(upstream_eras, a_pinned_era_is_not_probed_and_a_wrong_pin_fails_clearly) {
  const std::string log = dir_.path() + "/l.log";
  auto& d = start(fake_server_table("old", {"--log", log}, "era = \"legacy\"\n") +
                      fake_server_table("wrong", {}, "era = \"modern\"\n"),
                  {}, false);
  ASSERT_TRUE(d.wait_ready({"old"}));
  EXPECT_EQ(read_file(log).find("server/discover"), std::string::npos);
  // A legacy server pinned modern: discover is refused, and nothing falls back.
  json::object wrong;
  for (int i = 0; i < 100; ++i) {
    wrong = server_of(d.status(), "wrong");
    if (!wrong.at("last_error").is_null()) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(wrong.at("state"), "ready");
  EXPECT_NE(std::string(wrong.at("last_error").as_string()).find("server/discover failed"),
            std::string::npos)
      << json::serialize(wrong);
}

TEST_F(upstream_eras, the_verdict_is_kept_with_the_tool_cache_so_a_restart_does_not_probe) {
  const std::string log = dir_.path() + "/v.log";
  auto& d = start(fake_server_table("v", {"--log", log}));
  EXPECT_EQ(server_of(d.status(), "v").at("era"), "legacy");
  d.stop();
  daemon_.reset();
  std::filesystem::remove(log);
  auto& again = start(fake_server_table("v", {"--log", log}));
  EXPECT_EQ(server_of(again.status(), "v").at("era"), "legacy");
  const auto lines = read_lines(log);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("\"initialize\""), std::string::npos) << lines.front();
  EXPECT_EQ(read_file(log).find("server/discover"), std::string::npos);
}

TEST(era_config, era_values_are_checked) {
  temp_dir dir;
  const auto path = dir.path() + "/c.toml";
  std::ofstream(path) << "[servers.a]\ncommand = \"x\"\nera = \"2026\"\n";
  auto r = run_process({mcpmuxd_path(), "--check-config", "--config", path});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("era"), std::string::npos) << r.err;
  // Streamable HTTP servers may be modern; the legacy HTTP+SSE transport may not.
  std::ofstream(path) << "[servers.a]\ntype = \"http\"\nurl = \"http://127.0.0.1:1/mcp\"\nera = "
                         "\"modern\"\n";
  r = run_process({mcpmuxd_path(), "--check-config", "--config", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ofstream(path) << "[servers.a]\ntype = \"sse\"\nurl = \"http://127.0.0.1:1/sse\"\nera = "
                         "\"modern\"\n";
  r = run_process({mcpmuxd_path(), "--check-config", "--config", path});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("HTTP+SSE"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mcpmux::test
