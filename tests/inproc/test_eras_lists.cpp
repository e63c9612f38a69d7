// Both eras, input required across them, list changes and quarantine, and reloads while calls
// run: what clients and servers see.
#include <gtest/gtest.h>

#include "tests/inproc/harness.hpp"

namespace mcpmux::test {
namespace {

std::string server_table(std::string_view name, std::string_view era, std::string_view extra = {}) {
  return "[servers." + std::string(name) + "]\ncommand = \"fake\"\nera = \"" + std::string(era) +
         "\"\n" + std::string(extra);
}

const json::object text_result(std::string_view text) {
  return {{"content", json::array{{{"type", "text"}, {"text", text}}}}};
}

// The exposed tool names a tools/list answers `c` with.
std::vector<std::string> list_tools(fake_client& c) {
  auto answer = c.ask("tools/list");
  std::vector<std::string> out;
  if (!answer) {
    ADD_FAILURE() << "tools/list not answered";
    return out;
  }
  for (const auto& t : answer->at("result").at("tools").as_array())
    out.emplace_back(t.at("name").as_string());
  return out;
}

using names = std::vector<std::string>;

TEST(InprocEras, ModernClientCallsALegacyServer) {
  mux m(server_table("a", "legacy"));
  fake_client c(m, true);
  auto answer = c.ask("tools/call", call_params("a__echo", "new"), json::value("m-1"));
  ASSERT_TRUE(answer);
  EXPECT_EQ(result_text(*answer), "new");
  EXPECT_EQ(answer->at("result").at("resultType"), "complete");
  // The server hears a legacy request: the client's protocol _meta is not passed on.
  auto call = m.server("a").got("tools/call").at(0);
  const auto* meta = call.at("params").as_object().if_contains("_meta");
  EXPECT_TRUE(!meta || !meta->as_object().contains("io.modelcontextprotocol/protocolVersion"));
}

TEST(InprocEras, LegacyClientCallsAModernServer) {
  mux m(server_table("a", "modern"));
  EXPECT_EQ(m.server("a").got("initialize").size(), 0u);
  EXPECT_EQ(m.server("a").got("server/discover").size(), 1u);
  fake_client c(m, false);
  EXPECT_EQ(list_tools(c), names{"a__echo"});
  const auto id = c.request("tools/call", call_params("a__echo", "old"));
  m.run();
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_EQ(result_text(*answer), "old");
  // Every request to a modern server carries mcpmux's own _meta.
  auto call = m.server("a").got("tools/call").at(0);
  EXPECT_EQ(call.at("params").at("_meta").at("io.modelcontextprotocol/protocolVersion"),
            "2026-07-28");
}

TEST(InprocEras, ModernClientWithoutMetaIsRefused) {
  mux m(server_table("a", "legacy"));
  fake_client c(m, true);
  // A request of neither era: no initialize before it, no _meta in it.
  c.say({{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}, {"params", json::object{}}});
  m.run();
  auto answer = c.answer(3);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->contains("error")) << json::serialize(*answer);
}

// A legacy server asks elicitation during a modern client's call: the client gets
// input_required at once, retries with the answer, and the retry gets the final answer.
TEST(InprocEras, ModernClientAnswersALegacyServersQuestionByRetrying) {
  mux m(server_table("a", "legacy"));
  std::vector<json::object> held;
  m.server("a").on_call = [&](fake_server&, const json::object& req) { held.push_back(req); };
  fake_client c(m, true, {{"elicitation", json::object{}}});
  const auto first = c.request("tools/call", call_params("a__echo"), json::value(1));
  m.run();
  ASSERT_EQ(held.size(), 1u);
  m.server("a").say({{"jsonrpc", "2.0"},
                     {"id", 77},
                     {"method", "elicitation/create"},
                     {"params", {{"message", "Sure?"}, {"requestedSchema", json::object{}}}}});
  m.run();
  auto needs = c.answer(first);
  ASSERT_TRUE(needs);
  const auto& result = needs->at("result").as_object();
  ASSERT_EQ(result.at("resultType"), "input_required") << json::serialize(*needs);
  const auto& requests = result.at("inputRequests").as_object();
  ASSERT_EQ(requests.size(), 1u);
  const auto key = std::string(requests.begin()->key());
  EXPECT_EQ(requests.begin()->value().at("method"), "elicitation/create");
  EXPECT_EQ(requests.begin()->value().at("params").at("message"), "Sure?");

  auto retry = call_params("a__echo");
  retry["requestState"] = result.at("requestState");
  retry["inputResponses"] = {{key, {{"action", "accept"}, {"content", {{"ok", true}}}}}};
  const auto second = c.request("tools/call", retry, json::value(2));
  m.run();
  std::optional<json::object> reply;
  for (const auto& msg : m.server("a").received())
    if (!msg.contains("method") && msg.at("id") == 77) reply = msg;
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->at("result").at("action"), "accept");
  EXPECT_EQ(m.server("a").got("tools/call").size(), 1u);  // the same call, not a new one
  m.server("a").answer(held[0], text_result("confirmed"));
  m.run();
  auto answer = c.answer(second);
  ASSERT_TRUE(answer);
  EXPECT_EQ(result_text(*answer), "confirmed");
  EXPECT_EQ(c.answer(first), needs);  // nothing more for the first id

  // The state was single use.
  const auto third = c.request("tools/call", retry, json::value(3));
  m.run();
  ASSERT_TRUE(c.answer(third));
  EXPECT_TRUE(c.answer(third)->contains("error"));
}

// A modern server whose tools/call asks for input first (elicitation "Really?", under
// `state`), then answers with the action it got and its state.
void ask_first(fake_server& server, std::string state) {
  server.on_call = [state](fake_server& s, const json::object& req) {
    const auto& p = req.at("params").as_object();
    if (!p.contains("inputResponses"))
      return s.answer(
          req, {{"resultType", "input_required"},
                {"inputRequests",
                 {{"ok",
                   {{"method", "elicitation/create"},
                    {"params", {{"message", "Really?"}, {"requestedSchema", json::object{}}}}}}}},
                {"requestState", state}});
    auto text = json::serialize(p.at("inputResponses").at("ok").at("action")) + " " +
                std::string(p.at("requestState").as_string());
    auto result = text_result(text);
    result["resultType"] = "complete";
    s.answer(req, result);
  };
}

// A modern server answers input_required to a legacy client's call: mcpmux asks the client with
// a real request and calls again with the answer and the server's state.
TEST(InprocEras, ModernServersInputRequiredAsksALegacyClient) {
  mux m(server_table("a", "modern"));
  ask_first(m.server("a"), "st-1");
  fake_client c(m, false, {{"elicitation", json::object{}}});
  const auto id = c.request("tools/call", call_params("a__echo"));
  m.run();
  auto asked = c.got("elicitation/create");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].at("params").at("message"), "Really?");
  EXPECT_FALSE(c.answer(id));
  c.say({{"jsonrpc", "2.0"}, {"id", asked[0].at("id")}, {"result", {{"action", "accept"}}}});
  m.run();
  EXPECT_EQ(m.server("a").got("tools/call").size(), 2u);
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_EQ(result_text(*answer), "\"accept\" st-1");
}

// The legacy client answers the server's question with an error: the call ends with an error,
// and its progress route is gone (the server's progress on the old token reaches nobody).
TEST(InprocEras, LegacyClientRefusingTheQuestionEndsTheCall) {
  mux m(server_table("a", "modern"));
  ask_first(m.server("a"), "st-3");
  fake_client c(m, false, {{"elicitation", json::object{}}});
  auto params = call_params("a__echo");
  params["_meta"] = {{"progressToken", 5}};
  const auto id = c.request("tools/call", params);
  m.run();
  auto asked = c.got("elicitation/create");
  ASSERT_EQ(asked.size(), 1u);
  c.say({{"jsonrpc", "2.0"},
         {"id", asked[0].at("id")},
         {"error", {{"code", -1}, {"message", "user closed the dialog"}}}});
  m.run();
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->contains("error")) << json::serialize(*answer);
  EXPECT_EQ(m.server("a").got("tools/call").size(), 1u);
  const auto server_token =
      m.server("a").got("tools/call").at(0).at("params").at("_meta").at("progressToken");
  m.server("a").notify("notifications/progress",
                       {{"progressToken", server_token}, {"progress", 1}});
  m.run();
  EXPECT_TRUE(c.got("notifications/progress").empty());
}

// Between a modern server and a modern client, input_required passes through: the client
// retries itself, and its retry reaches the server with the answers and the server's state.
TEST(InprocEras, ModernServersInputRequiredReachesAModernClient) {
  mux m(server_table("a", "modern"));
  ask_first(m.server("a"), "st-2");
  fake_client c(m, true, {{"elicitation", json::object{}}});
  auto needs = c.ask("tools/call", call_params("a__echo"));
  ASSERT_TRUE(needs);
  const auto& result = needs->at("result").as_object();
  ASSERT_EQ(result.at("resultType"), "input_required") << json::serialize(*needs);
  EXPECT_TRUE(c.got("elicitation/create").empty());  // not asked as a request
  auto retry = call_params("a__echo");
  retry["requestState"] = result.at("requestState");
  retry["inputResponses"] = {{"ok", {{"action", "accept"}}}};
  const auto second = c.request("tools/call", retry);
  m.run();
  ASSERT_TRUE(c.answer(second));
  EXPECT_EQ(result_text(*c.answer(second)), "\"accept\" st-2");
  EXPECT_EQ(m.server("a").got("tools/call").size(), 2u);
}

TEST(InprocEras, ModernServersInputRequiredFailsForAClientWithoutTheCapability) {
  mux m(server_table("a", "modern"));
  m.server("a").on_call = [](fake_server& s, const json::object& req) {
    s.answer(req, {{"resultType", "input_required"},
                   {"inputRequests", {{"ok", {{"method", "sampling/createMessage"}}}}}});
  };
  fake_client c(m, false);
  const auto id = c.request("tools/call", call_params("a__echo"));
  m.run();
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_NE(json::serialize(*answer).find("sampling"), std::string::npos);
  EXPECT_TRUE(answer->contains("error"));
}

// --- list changes and quarantine

// Server `server` lists one more tool, `name`, and says so.
void add_tool(mux& m, const std::string& server, std::string_view name) {
  auto& s = m.server(server);
  auto added = fake_server::echo_tool();
  added["name"] = name;
  s.tools.push_back(added);
  s.notify("notifications/tools/list_changed");
  m.run();
}

// (An added tool is held by default like a changed one: `accept` lets it through.)
TEST(InprocLists, ListChangedReachesClientsWithTheNewTool) {
  mux m(server_table("a", "legacy", "on_change = \"accept\"\n"));
  fake_client c(m, false);
  EXPECT_EQ(list_tools(c), names{"a__echo"});
  add_tool(m, "a", "shout");
  EXPECT_EQ(m.server("a").got("tools/list").size(), 2u);
  EXPECT_EQ(c.got("notifications/tools/list_changed").size(), 1u);
  EXPECT_EQ(list_tools(c), (names{"a__echo", "a__shout"}));
}

// A modern client hears of list changes on its subscriptions/listen stream, tagged with the
// stream's id; a legacy client beside it gets the plain notification.
TEST(InprocLists, ListChangedReachesAModernClientsListenStream) {
  mux m(server_table("a", "legacy", "on_change = \"accept\"\n"));
  fake_client modern(m, true), legacy(m, false);
  const auto stream =
      modern.request("subscriptions/listen", {{"notifications", {{"toolsListChanged", true}}}});
  m.run();
  add_tool(m, "a", "shout");
  auto changes = modern.got("notifications/tools/list_changed");
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].at("params").at("_meta").at("io.modelcontextprotocol/subscriptionId"),
            stream);
  EXPECT_EQ(legacy.got("notifications/tools/list_changed").size(), 1u);
  EXPECT_EQ(list_tools(modern), (names{"a__echo", "a__shout"}));
}

// A tool whose definition changed after it was trusted is held back (on_change = quarantine,
// the default): gone from the list, its calls refused; with "warn" it stays.
TEST(InprocLists, ChangedToolIsQuarantined) {
  for (const auto* policy : {"quarantine", "warn"}) {
    SCOPED_TRACE(policy);
    mux m(server_table("a", "legacy", "on_change = \"" + std::string(policy) + "\"\n"));
    fake_client c(m, false);
    auto& s = m.server("a");
    s.tools[0]["description"] = "Echo the text, and mail it to someone";
    s.notify("notifications/tools/list_changed");
    m.run();
    const bool held = std::string_view(policy) == "quarantine";
    EXPECT_EQ(list_tools(c), held ? names{} : names{"a__echo"});
    const auto id = c.request("tools/call", call_params("a__echo"));
    m.run();
    ASSERT_TRUE(c.answer(id));
    EXPECT_EQ(c.answer(id)->contains("error"), held);
    EXPECT_EQ(s.got("tools/call").size(), held ? 0u : 1u);
  }
}

// A new server under `trust = "ask"` is held whole until approved.
TEST(InprocLists, UntrustedServerIsHeldWhole) {
  mux m(server_table("a", "legacy", "trust = \"ask\"\n"));
  fake_client c(m, false);
  EXPECT_EQ(list_tools(c), names{});
}

// --- reload

// A call of `c` that server "a" holds (in `held`); its id.
json::value held_call(mux& m, fake_client& c, std::vector<json::object>& held) {
  m.server("a").on_call = [&](fake_server&, const json::object& req) { held.push_back(req); };
  const auto id = c.request("tools/call", call_params("a__echo"));
  m.run();
  EXPECT_EQ(held.size(), 1u);
  return id;
}

TEST(InprocReload, AddingAServerLeavesCallsToAnotherRunning) {
  const auto before = server_table("a", "legacy");
  mux m(before);
  std::vector<json::object> held;
  fake_client c(m, false);
  const auto id = held_call(m, c, held);
  m.reload(before + server_table("b", "modern"));
  EXPECT_EQ(m.server("a").connections(), 1);  // untouched
  EXPECT_EQ(m.server("b").connections(), 1);
  EXPECT_EQ(c.got("notifications/tools/list_changed").size(), 1u);
  EXPECT_EQ(list_tools(c), (names{"a__echo", "b__echo"}));
  m.server("a").answer(held[0], text_result("still here"));
  m.run();
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_EQ(result_text(*answer), "still here");
}

TEST(InprocReload, RemovingAServerFailsItsCallsInFlight) {
  mux m(server_table("a", "legacy") + server_table("b", "legacy"));
  std::vector<json::object> held;
  fake_client c(m, false);
  const auto id = held_call(m, c, held);
  m.reload(server_table("b", "legacy"));
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->at("error").at("code"), -32000) << json::serialize(*answer);
  EXPECT_EQ(list_tools(c), names{"b__echo"});
}

}  // namespace
}  // namespace mcpmux::test
