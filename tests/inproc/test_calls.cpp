// Every exit of a call, through messages: what the client receives (its own ids, errors,
// progress under its own token) and what the server receives (ids, cancellations).
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>

#include "core/control.hpp"
#include "tests/inproc/harness.hpp"

namespace mcpmux::test {
namespace {

// One legacy server with a timeout of a second (`timeout_ms`), and `retry` as given.
std::string one_server(std::string_view retry = "safe", int timeout_ms = 1000) {
  return "[daemon]\ntimeout_ms = " + std::to_string(timeout_ms) +
         "\n[servers.a]\ncommand = \"fake\"\nera = \"legacy\"\nretry = \"" + std::string(retry) +
         "\"\n";
}

// The server holds every tools/call: the test answers (or not) later.
void hold_calls(fake_server& s, std::vector<json::object>& held) {
  s.on_call = [&held](fake_server&, const json::object& req) { held.push_back(req); };
}

int error_code(const json::object& answer) {
  return static_cast<int>(answer.at("error").at("code").to_number<std::int64_t>());
}

std::string error_text(const json::object& answer) {
  return std::string(answer.at("error").at("message").as_string());
}

// One call of a legacy client (with `capabilities`) that the server holds unanswered, on a
// daemon of `config`; with `progress`, the call carries that progress token.
struct held_call {
  explicit held_call(json::object capabilities = {}, const std::string& config = one_server(),
                     std::optional<std::string> progress = std::nullopt)
      : m(config), c((hold_calls(m.server("a"), held), m), false, std::move(capabilities)) {
    auto params = call_params("a__echo");
    if (progress) params["_meta"] = {{"progressToken", *progress}};
    id = c.request("tools/call", params);
    m.run();
    EXPECT_EQ(held.size(), 1u);
  }
  /// The progress token the server was given for it.
  const json::value& server_token() const {
    return held.at(0).at("params").at("_meta").at("progressToken");
  }
  mux m;
  std::vector<json::object> held;
  fake_client c;
  json::value id;
};

// The server's answer to its own request `id`, as the client's side sent it.
std::optional<json::object> reply_to(const fake_server& s, const json::value& id) {
  std::optional<json::object> out;
  for (const auto& msg : s.received())
    if (!msg.contains("method") && msg.at("id") == id) out = msg;
  return out;
}

TEST(InprocCalls, AnswerReachesTheClientUnderItsOwnId) {
  mux m(one_server());
  fake_client c(m, false);
  auto answer = c.ask("tools/call", call_params("a__echo", "hello"), json::value("x-7"));
  ASSERT_TRUE(answer);
  EXPECT_EQ(result_text(*answer), "hello");
  EXPECT_FALSE(answer->at("result").as_object().contains("resultType"));  // a legacy client
  auto calls = m.server("a").got("tools/call");
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].at("params").at("name"), "echo");
  EXPECT_EQ(calls[0].at("params").at("arguments").at("text"), "hello");
}

TEST(InprocCalls, ToolErrorIsAResultNotAnError) {
  mux m(one_server());
  m.server("a").on_call = [](fake_server& s, const json::object& req) {
    s.answer(req, {{"content", json::array{{{"type", "text"}, {"text", "no such file"}}}},
                   {"isError", true}});
  };
  fake_client c(m, false);
  const auto id = c.request("tools/call", call_params("a__echo"));
  m.run();
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  ASSERT_TRUE(answer->contains("result")) << json::serialize(*answer);
  EXPECT_EQ(answer->at("result").at("isError"), true);
  EXPECT_EQ(result_text(*answer), "no such file");
}

TEST(InprocCalls, ServerErrorReachesTheClientAsIs) {
  mux m(one_server());
  m.server("a").on_call = [](fake_server& s, const json::object& req) {
    s.fail(req, -32602, "bad arguments: text");
  };
  fake_client c(m, false);
  const auto id = c.request("tools/call", call_params("a__echo"));
  m.run();
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_EQ(error_code(*answer), -32602);
  EXPECT_EQ(error_text(*answer), "bad arguments: text");
}

TEST(InprocCalls, UnknownToolIsRefusedWithoutReachingAServer) {
  mux m(one_server());
  fake_client c(m, false);
  const auto id = c.request("tools/call", call_params("a__nothing"));
  m.run();
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_TRUE(answer->contains("error"));
  EXPECT_TRUE(m.server("a").got("tools/call").empty());
}

// No answer within the server's timeout: the client hears -32001, the server is told to stop.
TEST(InprocCalls, TimeoutAnswersTheClientAndCancelsAtTheServer) {
  held_call h;
  auto& [m, held, c, id] = h;
  m.advance(900ms);
  EXPECT_FALSE(c.answer(id));
  m.advance(200ms);
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_EQ(error_code(*answer), -32001);
  EXPECT_NE(error_text(*answer).find("did not answer tools/call within 1000ms"), std::string::npos)
      << error_text(*answer);
  auto cancels = m.server("a").got("notifications/cancelled");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].at("params").at("requestId"), held[0].at("id"));
  // A late answer is dropped: the client got one answer only (answer() checks).
  m.server("a").answer(held[0], {{"content", json::array{}}});
  m.run();
  c.answer(id);
}

// Progress from the server restarts the call's timeout (reset_timeout_on_progress) and reaches
// the client under the client's own token.
TEST(InprocCalls, ProgressCarriesTheClientsTokenAndExtendsTheDeadline) {
  held_call h({}, one_server(), "mine-1");
  auto& [m, held, c, id] = h;
  ASSERT_EQ(held.size(), 1u);
  const auto server_token = h.server_token();
  for (int i = 1; i <= 3; ++i) {
    m.advance(800ms);
    m.server("a").notify("notifications/progress",
                         {{"progressToken", server_token}, {"progress", i}, {"total", 3}});
    m.run();
  }
  EXPECT_FALSE(c.answer(id)) << "timed out although the server reported progress";
  auto progress = c.got("notifications/progress");
  ASSERT_EQ(progress.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(progress[i].at("params").at("progressToken"), "mine-1");
    EXPECT_EQ(progress[i].at("params").at("progress"), i + 1);
  }
  m.server("a").answer(held[0], {{"content", json::array{{{"type", "text"}, {"text", "done"}}}}});
  m.run();
  auto answer = c.answer(id);
  ASSERT_TRUE(answer);
  EXPECT_EQ(result_text(*answer), "done");
  // Progress after the end goes nowhere.
  m.server("a").notify("notifications/progress",
                       {{"progressToken", server_token}, {"progress", 9}});
  m.run();
  EXPECT_EQ(c.got("notifications/progress").size(), 3u);
}

// A progress message and the answer are redacted by the call (redact_results, default
// "patterns"); a server set to "off" is relayed as it wrote.
TEST(InprocCalls, ProgressMessagesAndAnswersAreRedacted) {
  constexpr std::string_view key = "AKIAIOSFODNN7EXAMPLE";
  for (const bool off : {false, true}) {
    held_call h({}, one_server() + (off ? "redact_results = \"off\"\n" : ""), "p");
    auto& [m, held, c, id] = h;
    ASSERT_EQ(held.size(), 1u);
    const auto token = h.server_token();
    m.server("a").notify(
        "notifications/progress",
        {{"progressToken", token}, {"progress", 1}, {"message", "using key " + std::string(key)}});
    m.server("a").answer(held[0], {{"content", json::array{{{"type", "text"}, {"text", key}}}}});
    m.run();
    auto progress = c.got("notifications/progress");
    ASSERT_EQ(progress.size(), 1u);
    auto answer = c.answer(id);
    ASSERT_TRUE(answer);
    if (off) {
      EXPECT_EQ(progress[0].at("params").at("message").as_string(),
                "using key " + std::string(key));
      EXPECT_EQ(result_text(*answer), key);
    } else {
      EXPECT_EQ(progress[0].at("params").at("message"), "using key [redacted: aws-access-key]");
      EXPECT_EQ(result_text(*answer), "[redacted: aws-access-key]");
      EXPECT_EQ(m.mgr().find_upstream("a")->stats().redacted.total(), 2u);
    }
  }
}

// The client cancels: the server hears it for its own id, the client gets no answer.
TEST(InprocCalls, ClientCancelReachesTheServer) {
  held_call h;
  auto& [m, held, c, id] = h;
  c.notify("notifications/cancelled", {{"requestId", id}, {"reason", "user pressed stop"}});
  m.run();
  auto cancels = m.server("a").got("notifications/cancelled");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].at("params").at("requestId"), held[0].at("id"));
  m.server("a").answer(held[0], {{"content", json::array{}}});
  m.run();
  EXPECT_FALSE(c.answer(id)) << "a cancelled request was answered";
}

// The client goes away mid-call: the server is told to stop the call.
TEST(InprocCalls, ClientGoneCancelsAtTheServer) {
  mux m(one_server());
  std::vector<json::object> held;
  hold_calls(m.server("a"), held);
  {
    fake_client c(m, false);
    c.request("tools/call", call_params("a__echo"));
    m.run();
    ASSERT_EQ(held.size(), 1u);
    c.hang_up();
    m.run();
  }
  auto cancels = m.server("a").got("notifications/cancelled");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].at("params").at("requestId"), held[0].at("id"));
  EXPECT_EQ(m.mgr().clients(), 0u);
}

// The server's connection drops mid-call, per `retry`.
struct dropped_call {
  std::optional<json::object> answer;
  std::size_t calls_at_server;
};

dropped_call drop_mid_call(std::string_view retry, bool read_only_tool) {
  // A timeout long enough for the reconnect's backoff: the resent call keeps its deadline.
  mux m(one_server(retry, 60000), [&](mux& mm) {
    if (read_only_tool) mm.server("a").tools[0]["annotations"] = {{"readOnlyHint", true}};
  });
  auto& s = m.server("a");
  std::vector<json::object> held;
  s.on_call = [&held](fake_server& srv, const json::object& req) {
    held.push_back(req);
    if (held.size() > 1)  // the resend, on the next connection
      srv.answer(req, {{"content", json::array{{{"type", "text"}, {"text", "second"}}}}});
  };
  fake_client c(m, false);
  const auto id = c.request("tools/call", call_params("a__echo"), json::value(41));
  m.run();
  EXPECT_EQ(held.size(), 1u);
  s.hang_up("exited with code 1");
  m.run();
  EXPECT_TRUE(m.advance_until([&] { return s.connections() == 2 && c.answer(id); }));
  return {c.answer(id), held.size()};
}

TEST(InprocCalls, UpstreamClosedWithRetryNeverFailsTheCall) {
  auto r = drop_mid_call("never", true);
  ASSERT_TRUE(r.answer);
  EXPECT_EQ(error_code(*r.answer), -32000);
  EXPECT_NE(error_text(*r.answer).find("exited with code 1"), std::string::npos)
      << error_text(*r.answer);
  EXPECT_EQ(r.calls_at_server, 1u);
}

TEST(InprocCalls, UpstreamClosedWithRetryAlwaysResendsOnTheNextConnection) {
  auto r = drop_mid_call("always", false);
  ASSERT_TRUE(r.answer);
  EXPECT_EQ(result_text(*r.answer), "second");
  EXPECT_EQ(r.calls_at_server, 2u);
}

TEST(InprocCalls, UpstreamClosedWithRetrySafeResendsAReadOnlyTool) {
  auto r = drop_mid_call("safe", true);
  ASSERT_TRUE(r.answer);
  EXPECT_EQ(result_text(*r.answer), "second");
  EXPECT_EQ(r.calls_at_server, 2u);
}

TEST(InprocCalls, UpstreamClosedWithRetrySafeDoesNotRepeatAToolThatMayHarm) {
  auto r = drop_mid_call("safe", false);
  ASSERT_TRUE(r.answer);
  EXPECT_EQ(error_code(*r.answer), -32000);
  EXPECT_EQ(r.calls_at_server, 1u);
}

// A reconnect with several calls in flight: each is resent and answered under its client's id.
TEST(InprocCalls, ReconnectWithCallsInFlight) {
  mux m(one_server("always", 60000));
  auto& s = m.server("a");
  int connection_of_answer = 2;
  s.on_call = [&](fake_server& srv, const json::object& req) {
    if (srv.connections() < connection_of_answer) return;  // the first connection holds them
    srv.answer(req,
               {{"content", json::array{{{"type", "text"},
                                         {"text", req.at("params").at("arguments").at("text")}}}}});
  };
  fake_client c1(m, false), c2(m, false);
  const auto a = c1.request("tools/call", call_params("a__echo", "one"), json::value(7));
  const auto b = c2.request("tools/call", call_params("a__echo", "two"), json::value(7));
  const auto d = c1.request("tools/call", call_params("a__echo", "three"), json::value("z"));
  m.run();
  EXPECT_EQ(s.got("tools/call").size(), 3u);
  s.hang_up();
  m.run();
  ASSERT_TRUE(m.advance_until([&] { return s.connections() == 2 && c1.answer(a); }));
  EXPECT_EQ(s.got("tools/call").size(), 6u);
  ASSERT_TRUE(c1.answer(a) && c2.answer(b) && c1.answer(d));
  EXPECT_EQ(result_text(*c1.answer(a)), "one");
  EXPECT_EQ(result_text(*c2.answer(b)), "two");
  EXPECT_EQ(result_text(*c1.answer(d)), "three");
}

// The server asks the client for a sampling in the middle of a call (a legacy client): the
// request reaches the client under an id of the client connection, the answer the server
// under its own id.
TEST(InprocCalls, ServerAsksALegacyClientForSampling) {
  held_call h({{"sampling", json::object{}}});
  auto& [m, held, c, id] = h;
  m.server("a").say({{"jsonrpc", "2.0"},
                     {"id", "srv-9"},
                     {"method", "sampling/createMessage"},
                     {"params", {{"messages", json::array{}}, {"maxTokens", 10}}}});
  m.run();
  auto asked = c.got("sampling/createMessage");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].at("params").at("maxTokens"), 10);
  c.say({{"jsonrpc", "2.0"},
         {"id", asked[0].at("id")},
         {"result", {{"role", "assistant"}, {"content", {{"type", "text"}, {"text", "42"}}}}}});
  m.run();
  auto reply = reply_to(m.server("a"), "srv-9");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->at("result").at("content").at("text"), "42");
  m.server("a").answer(held[0], {{"content", json::array{}}});
  m.run();
  EXPECT_TRUE(c.answer(id));
}

// A client that did not declare sampling: the server's request is refused, the client never
// hears it.
TEST(InprocCalls, ServerAsksForSamplingTheClientDidNotDeclare) {
  held_call h;
  auto& [m, held, c, id] = h;
  m.server("a").say({{"jsonrpc", "2.0"},
                     {"id", 5},
                     {"method", "sampling/createMessage"},
                     {"params", {{"messages", json::array{}}, {"maxTokens", 10}}}});
  m.run();
  EXPECT_TRUE(c.got("sampling/createMessage").empty());
  auto reply = reply_to(m.server("a"), 5);
  ASSERT_TRUE(reply);
  EXPECT_TRUE(reply->contains("error"));
}

// A control method whose handler throws (a bug, a library's exception): the loop's edge answers
// that request -32603 with the reason, and the session and the daemon go on serving.
struct throwing_extension : control_extension {
  std::optional<result<json::value>> handle(std::string_view method, const json::object&) override {
    if (method != "mcpmux/test/throw") return std::nullopt;
    throw std::runtime_error("search index: disk I/O error");
  }
  void describe(const std::string&, json::object&) const override {}
};

TEST(InprocEdge, AHandlerThatThrowsFailsItsRequestAloneAndTheSessionGoesOn) {
  mux m(one_server());
  throwing_extension thrower;
  m.mgr().add_control_extension(&thrower);
  fake_client c(m, false);
  auto failed = c.ask("mcpmux/test/throw");
  ASSERT_TRUE(failed);
  EXPECT_EQ(error_code(*failed), rpc_code::internal_error);
  EXPECT_NE(error_text(*failed).find("disk I/O error"), std::string::npos) << error_text(*failed);
  EXPECT_FALSE(c.closed());
  auto answer = c.ask("tools/call", call_params("a__echo", "still here"));
  ASSERT_TRUE(answer);
  EXPECT_EQ(result_text(*answer), "still here");
}

}  // namespace
}  // namespace mcpmux::test
