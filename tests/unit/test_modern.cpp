// The 2026-07-28 era's per-request rules (protocol/modern) and the MRTR registry.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/call.hpp"
#include "core/mrtr.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {
namespace {

json::object params_with(json::object meta) {
  return json::object{{"name", "t"}, {"_meta", std::move(meta)}};
}

TEST(modern_meta, a_complete_meta_is_read) {
  auto p = params_with({{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                        {"io.modelcontextprotocol/clientCapabilities", {{"roots", json::object{}}}},
                        {"io.modelcontextprotocol/clientInfo", {{"name", "c"}, {"version", "1"}}},
                        {"io.modelcontextprotocol/logLevel", "info"}});
  EXPECT_TRUE(mcp::has_modern_meta(p));
  auto r = mcp::read_request_meta(p);
  ASSERT_TRUE(r.ok());
  const auto& m = r.value();
  EXPECT_EQ(m.version, "2026-07-28");
  EXPECT_TRUE(m.capabilities.contains("roots"));
  EXPECT_EQ(m.client_info.at("name"), "c");
  EXPECT_EQ(m.log_level, "info");
}

TEST(modern_meta, what_is_missing_or_wrong_is_named) {
  const auto code = [](const json::object& p) {
    auto r = mcp::read_request_meta(p);
    return !r.ok() ? r.error().code : 0;
  };
  EXPECT_FALSE(mcp::has_modern_meta(json::object{}));
  EXPECT_EQ(code(json::object{}), -32602);
  EXPECT_EQ(code(params_with({{"io.modelcontextprotocol/protocolVersion", 7}})), -32602);
  EXPECT_EQ(code(params_with({{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}})), -32602);
  EXPECT_EQ(code(params_with({{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                              {"io.modelcontextprotocol/clientCapabilities", json::object{}},
                              {"io.modelcontextprotocol/logLevel", "chatty"}})),
            -32602);
  auto r = mcp::read_request_meta(
      params_with({{"io.modelcontextprotocol/protocolVersion", "2025-11-25"},
                   {"io.modelcontextprotocol/clientCapabilities", json::object{}}}));
  ASSERT_TRUE(!r.ok());
  const auto& e = r.error();
  EXPECT_EQ(e.code, -32022);
  EXPECT_EQ(e.data.at("requested"), "2025-11-25");
  EXPECT_EQ(e.data.at("supported").as_array().front(), "2026-07-28");
}

TEST(modern_meta, protocol_keys_are_stripped_and_others_kept) {
  auto p = params_with({{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                        {"progressToken", 5},
                        {"traceparent", "00-abc-def-01"}});
  mcp::strip_protocol_meta(p);
  EXPECT_EQ(p.at("_meta"), (json::object{{"progressToken", 5}, {"traceparent", "00-abc-def-01"}}));
  auto q = params_with({{"io.modelcontextprotocol/clientInfo", json::object{}}});
  mcp::strip_protocol_meta(q);
  EXPECT_FALSE(q.contains("_meta"));
}

TEST(modern_meta, mark_complete_adds_result_type_once_without_a_dom) {
  const auto marked = [](std::string line) {
    mcp::mark_complete(line);
    return json::parse(line);
  };
  auto v = marked(R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"text":"}\"{"}]}})");
  EXPECT_EQ(v.at("result").at("resultType"), "complete");
  EXPECT_EQ(v.at("result").at("content").at(0).at("text"), "}\"{");
  v = marked(R"({"result" : { } , "id":"x\"result\"","jsonrpc":"2.0"})");
  EXPECT_EQ(v.at("result"), (json::object{{"resultType", "complete"}}));
  v = marked(
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","a":{"resultType":1}}})");
  EXPECT_EQ(v.at("result").at("resultType"), "input_required");
  EXPECT_EQ(v.at("result").as_object().size(), 2u);
  std::string not_object = R"({"jsonrpc":"2.0","id":1,"result":[]})";
  mcp::mark_complete(not_object);
  EXPECT_EQ(not_object, R"({"jsonrpc":"2.0","id":1,"result":[]})");
}

// A modern client's tools/call of "a__t", not yet answered by any server.
std::shared_ptr<call> modern_call(mrtr_registry& reg, json::object capabilities = {},
                                  std::weak_ptr<call_caller> caller = {}) {
  call::request r;
  r.method = "tools/call";
  r.exposed = "a__t";
  r.era = mcp::era::modern;
  r.capabilities = std::move(capabilities);
  r.params = json::object{{"name", "t"}};
  return std::make_shared<call>(std::move(r), std::move(caller), &reg);
}

TEST(mrtr, a_state_takes_its_call_back_once_and_forgeries_find_nothing) {
  mrtr_registry reg(std::chrono::seconds(10));
  const auto t0 = mrtr_registry::clock::now();
  auto call = modern_call(reg);
  const auto state = reg.park(call, t0);
  EXPECT_TRUE(mrtr_registry::ours(state));
  EXPECT_FALSE(mrtr_registry::ours("eyJzZXJ2ZXIiOiJzdGF0ZSJ9"));
  EXPECT_EQ(reg.parked(), 1u);
  EXPECT_EQ(reg.take(state + "0", t0), nullptr);
  EXPECT_EQ(reg.take(state.substr(0, state.size() - 1), t0), nullptr);
  EXPECT_EQ(reg.take(state, t0), call);
  EXPECT_EQ(reg.take(state, t0), nullptr);
  EXPECT_EQ(reg.parked(), 0u);
  // Two parks never share a state.
  EXPECT_NE(reg.park(call, t0), reg.park(call, t0));
}

TEST(mrtr, a_parked_call_expires_and_its_questions_fail) {
  mrtr_registry reg(std::chrono::seconds(10));
  const auto t0 = mrtr_registry::clock::now();
  auto call = modern_call(reg);
  bool failed = false;
  call->ask_client("elicitation/create", json::object{{"message", "?"}},
                   [&](rpc_outcome out) { failed = static_cast<bool>(out.ec); });
  const auto state = reg.park(call, t0);
  EXPECT_EQ(reg.take(state, t0 + std::chrono::seconds(11)), nullptr);
  EXPECT_TRUE(failed);
  EXPECT_EQ(reg.parked(), 0u);
}

}  // namespace
}  // namespace mcpmux

namespace mcpmux {
namespace {

TEST(mrtr, the_registry_is_bounded_and_the_oldest_call_gives_way) {
  mrtr_registry reg(std::chrono::seconds(100));
  const auto t0 = mrtr_registry::clock::now();
  auto first = modern_call(reg);
  bool first_failed = false;
  first->ask_client("roots/list", json::object{},
                    [&](rpc_outcome out) { first_failed = static_cast<bool>(out.ec); });
  const auto first_state = reg.park(first, t0);
  for (std::size_t i = 1; i < mrtr_registry::max_parked; ++i)
    reg.park(modern_call(reg), t0 + std::chrono::milliseconds(i));
  EXPECT_EQ(reg.parked(), mrtr_registry::max_parked);
  EXPECT_FALSE(first_failed);
  reg.park(modern_call(reg), t0 + std::chrono::seconds(1));
  EXPECT_EQ(reg.parked(), mrtr_registry::max_parked);
  EXPECT_TRUE(first_failed);
  EXPECT_EQ(reg.take(first_state, t0 + std::chrono::seconds(1)), nullptr);
}

}  // namespace
}  // namespace mcpmux

namespace mcpmux {
namespace {

// A caller that records what a modern call answers it: input_required results and the rest.
struct recording_caller : call_caller {
  std::vector<json::object> asked;
  std::vector<json::value> answered;
  void call_replied(call&, std::string text) override {
    auto v = json::parse(text);
    const auto& result = v.at("result").as_object();
    if (result.contains("resultType") && result.at("resultType") == "input_required")
      asked.push_back(result);
    else
      answered.push_back(std::move(v));
  }
  void call_audited(audit_fields&) override {}
  void on_progress(const json::object&) override {}
  bool client_supports(std::string_view) const override { return false; }
  std::int64_t ask_client(std::string_view, const json::value&, response_handler) override {
    return 0;
  }
  void cancel_ask(std::int64_t, std::string_view) override {}
};

TEST(mrtr, an_answer_that_is_not_an_object_leaves_the_question_open_and_it_is_asked_again) {
  mrtr_registry reg;
  auto sink = std::make_shared<recording_caller>();
  auto call = modern_call(reg, json::object{{"elicitation", json::object{}}});
  call->attach(sink, 1, "1");
  std::optional<rpc_outcome> server_got;
  call->ask_client("elicitation/create", json::object{{"message", "?"}},
                   [&](rpc_outcome out) { server_got = std::move(out); });
  ASSERT_EQ(sink->asked.size(), 1u);
  const auto state = std::string(sink->asked[0].at("requestState").as_string());
  auto back = reg.take(state, mrtr_registry::clock::now());
  ASSERT_EQ(back, call);
  call->attach(sink, 2, "2");
  json::object bad{{"q1", "not an object"}, {"zz", json::object{}}};
  call->resume(&bad);
  EXPECT_FALSE(server_got.has_value());  // the server was not given a string as a result
  ASSERT_EQ(sink->asked.size(), 2u);     // asked again, under a new state
  EXPECT_TRUE(sink->asked[1].at("inputRequests").as_object().contains("q1"));
  EXPECT_NE(sink->asked[1].at("requestState"), sink->asked[0].at("requestState"));
  back = reg.take(std::string(sink->asked[1].at("requestState").as_string()),
                  mrtr_registry::clock::now());
  call->attach(sink, 3, "3");
  json::object good{{"q1", json::object{{"action", "accept"}, {"content", json::object{}}}}};
  call->resume(&good);
  ASSERT_TRUE(server_got.has_value());
  EXPECT_FALSE(server_got->ec);
  EXPECT_EQ(server_got->reply->body.at("result").at("action"), "accept");
}

}  // namespace
}  // namespace mcpmux

namespace mcpmux {
namespace {

TEST(modern_meta, capability_flags_and_named_targets) {
  const json::object caps{{"resources", {{"subscribe", true}, {"listChanged", "yes"}}},
                          {"tools", json::object{}}};
  EXPECT_TRUE(mcp::capability_flag(caps, "resources", "subscribe"));
  EXPECT_FALSE(mcp::capability_flag(caps, "resources", "listChanged"));  // not a boolean
  EXPECT_FALSE(mcp::capability_flag(caps, "tools", "listChanged"));
  EXPECT_FALSE(mcp::capability_flag(caps, "prompts", "listChanged"));
  const auto parsed = [](std::string_view text) {
    message_parser p;
    return (p.parse(text)).value();
  };
  EXPECT_EQ(mcp::named_target(parsed(
                R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__t"}})")),
            std::optional<std::string>("a__t"));
  EXPECT_EQ(mcp::named_target(parsed(
                R"({"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x://y"}})")),
            std::optional<std::string>("x://y"));
  EXPECT_EQ(mcp::named_target(parsed(R"({"jsonrpc":"2.0","id":1,"method":"prompts/get"})")),
            std::optional<std::string>(""));
  EXPECT_EQ(mcp::named_target(parsed(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})")),
            std::nullopt);
  EXPECT_EQ(mcp::implementation().at("name"), "mcpmux");
  // The tasks extension names its task in Mcp-Name.
  EXPECT_EQ(mcp::named_target("tasks/get", json::object{{"taskId", "s/t-1"}}),
            std::optional<std::string>("s/t-1"));
  EXPECT_EQ(mcp::named_target("tasks/list", json::object{}), std::nullopt);
}

TEST(modern_meta, tasks_extension_ids_are_scoped_to_their_server) {
  const json::object caps{{"extensions", {{"io.modelcontextprotocol/tasks", json::object{}}}}};
  EXPECT_TRUE(mcp::has_extension(caps, mcp::tasks_extension));
  EXPECT_FALSE(mcp::has_extension(json::object{{"tasks", json::object{}}}, mcp::tasks_extension));
  EXPECT_FALSE(mcp::has_extension(json::object{{"extensions", "x"}}, mcp::tasks_extension));

  const auto id = mcp::scoped_task_id("github", "786512e2/with/slashes");
  EXPECT_EQ(id, "github/786512e2/with/slashes");
  auto parts = mcp::split_task_id(id);
  ASSERT_TRUE(parts);
  EXPECT_EQ(parts->first, "github");  // server names hold no '/': the first one splits
  EXPECT_EQ(parts->second, "786512e2/with/slashes");
  for (std::string_view bad : {"", "no-slash", "/leading", "trailing/"})
    EXPECT_FALSE(mcp::split_task_id(bad)) << bad;
}

}  // namespace
}  // namespace mcpmux
