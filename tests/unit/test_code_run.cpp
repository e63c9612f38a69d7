// Code mode's run on its own (core/code_run): a scripted runner stands for the sandboxed Node
// process and says what a hostile or broken one could — the daemon's own checks (tools given,
// the call count, the protocol, the deadline) hold whatever the runner claims, inner calls are
// answered to the runner under its ids and audited with the run's id, and every end answers the
// client once and stops the runner.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/code_run.hpp"
#include "protocol/error.hpp"

namespace mcpmux {
namespace {

// The runner's side of the pipe: what the run sent it, and a way to speak as it.
struct scripted_runner : transport {
  transport_events* events = nullptr;
  std::vector<json::object> sent;
  bool closed = false;
  void start(transport_events& e) override { events = &e; }
  std::error_code send(std::string message) override {
    if (closed) return make_error_code(errc::transport_closed);
    sent.push_back(json::parse(message).as_object());
    return {};
  }
  void close() override { closed = true; }
  std::size_t queued_bytes() const override { return 0; }
  void say(std::string_view line) { events->on_message(line); }
};

// The session: starts inner calls (answered when the test says), records answers and audits.
struct host : code_host, call_caller {
  std::vector<std::shared_ptr<call>> calls;
  std::vector<json::object> answers;
  std::vector<audit_entry> audits;
  std::set<std::string> shown{"memory__read_graph", "everything__echo"};
  std::shared_ptr<call> start_inner_call(const std::shared_ptr<code_run>& run, json::value id,
                                         std::string_view name, json::value arguments) override {
    if (!shown.count(std::string(name))) return nullptr;
    call::request r(json::object{{"name", name}, {"arguments", std::move(arguments)}});
    r.client_id = std::move(id);
    r.key = serialize_id(r.client_id);
    r.method = "tools/call";
    r.exposed = name;
    r.audit.emplace();
    auto c = std::make_shared<call>(std::move(r), std::weak_ptr<call_caller>(run));
    calls.push_back(c);
    return c;
  }
  void run_answered(code_run&, json::object result) override {
    answers.push_back(std::move(result));
  }
  call_caller& client() override { return *this; }
  void call_replied(call&, std::string) override {}
  void call_audited(audit_fields& row) override { row.write_to(audits.emplace_back()); }
  void on_progress(const json::object&) override {}
  bool client_supports(std::string_view) const override { return false; }
  std::int64_t ask_client(std::string_view, const json::value&, response_handler) override {
    return 0;
  }
  void cancel_ask(std::int64_t, std::string_view) override {}
};

rpc_outcome reply(std::string_view text) {
  message_parser p;
  return {{}, p.parse(text).value()};
}

std::string answer_text(const json::object& result) {
  return std::string(result.at("content").as_array()[0].as_object().at("text").as_string());
}

bool is_error(const json::object& result) {
  const auto* e = result.if_contains("isError");
  return e && e->as_bool();
}

struct CodeRun : ::testing::Test {
  boost::asio::io_context io;
  std::shared_ptr<host> session = std::make_shared<host>();
  std::shared_ptr<scripted_runner> runner = std::make_shared<scripted_runner>();
  std::shared_ptr<code_run> run;

  void start(code_limits limits = {}) {
    run = std::make_shared<code_run>(io, session, runner, "r0001", "mcpmux__run_code", limits);
    run->start("return 1", {{"memory__read_graph", "memory", "read_graph"},
                            {"everything__echo", "everything", "echo"},
                            {"memory__delete_entities", "memory", "delete_entities"}});
  }
};

TEST_F(CodeRun, TheProgramGoesOutWithItsToolsAndLimits) {
  code_limits limits;
  limits.calls = 7;
  start(limits);
  ASSERT_EQ(runner->sent.size(), 1u);
  const auto& first = runner->sent[0];
  EXPECT_EQ(first.at("program"), "return 1");
  EXPECT_EQ(first.at("tools").as_array().size(), 3u);
  EXPECT_EQ(first.at("tools").as_array()[1].at("server"), "everything");
  EXPECT_EQ(first.at("limits").at("calls"), 7);
}

TEST_F(CodeRun, AnInnerCallIsAnsweredUnderTheProgramsIdAndAuditedWithTheRun) {
  start();
  runner->say(R"({"call":1,"tool":"everything__echo","arguments":{"message":"hi"}})");
  ASSERT_EQ(session->calls.size(), 1u);
  EXPECT_EQ(session->calls[0]->params().at("arguments").at("message"), "hi");
  session->calls[0]->finish(reply(
      R"({"jsonrpc":"2.0","id":9,"result":{"content":[{"type":"text","text":"Echo: hi"}]}})"));
  ASSERT_EQ(runner->sent.size(), 2u);
  EXPECT_EQ(runner->sent[1].at("result"), 1);
  EXPECT_EQ(runner->sent[1].at("content").as_array()[0].at("text"), "Echo: hi");
  ASSERT_EQ(session->audits.size(), 1u);
  EXPECT_EQ(session->audits[0].run, "r0001");
  // An error answer reaches the program as an error with the server's message.
  runner->say(R"({"call":2,"tool":"memory__read_graph"})");
  session->calls[1]->finish(
      reply(R"({"jsonrpc":"2.0","id":10,"error":{"code":-32603,"message":"disk full"}})"));
  EXPECT_EQ(runner->sent.back().at("error").at("message"), "disk full");
  runner->say(R"({"done":{"value":{"n":2},"logs":"two calls\n"}})");
  ASSERT_EQ(session->answers.size(), 1u);
  EXPECT_FALSE(is_error(session->answers[0]));
  EXPECT_EQ(answer_text(session->answers[0]), "two calls\n{\"n\":2}");
  EXPECT_TRUE(runner->closed);
  EXPECT_EQ(run->calls(), 2u);
}

TEST_F(CodeRun, ToolsTheProgramWasNotGivenAreRefusedWhateverTheRunnerSays) {
  start();
  // Not in its list (a runner that escaped its vm can name anything).
  runner->say(R"({"call":1,"tool":"secret__steal"})");
  EXPECT_EQ(runner->sent.back().at("error").at("message"),
            "unknown tool secret__steal: not one this program may call");
  // In its list, but hidden since the program started: the session says no.
  runner->say(R"({"call":2,"tool":"memory__delete_entities"})");
  EXPECT_EQ(runner->sent.back().at("error").at("message"),
            "unknown tool memory__delete_entities: not one this program may call");
  // No programs inside programs.
  runner->say(R"({"call":3,"tool":"mcpmux__run_code","arguments":{"code":"1"}})");
  EXPECT_EQ(runner->sent.back().at("error").at("message"),
            "mcpmux__run_code cannot be called from inside a program");
  // Arguments that are not an object.
  runner->say(R"({"call":4,"tool":"everything__echo","arguments":[1]})");
  EXPECT_EQ(runner->sent.back().at("error").at("message"),
            "the arguments of a tool call must be an object");
  EXPECT_TRUE(session->calls.empty());
  EXPECT_TRUE(session->answers.empty());  // the program goes on
}

TEST_F(CodeRun, TheCallLimitIsTheDaemonsToo) {
  code_limits limits;
  limits.calls = 2;
  start(limits);
  runner->say(R"({"call":1,"tool":"everything__echo"})");
  runner->say(R"({"call":2,"tool":"everything__echo"})");
  runner->say(R"({"call":3,"tool":"everything__echo"})");
  ASSERT_EQ(session->answers.size(), 1u);
  EXPECT_TRUE(is_error(session->answers[0]));
  EXPECT_NE(answer_text(session->answers[0]).find("calls limit"), std::string::npos);
  // The calls in flight are cancelled with the run, audited as such, never answered.
  ASSERT_EQ(session->calls.size(), 2u);
  for (const auto& c : session->calls) EXPECT_TRUE(c->finished());
  ASSERT_EQ(session->audits.size(), 2u);
  EXPECT_EQ(session->audits[0].outcome, "cancelled");
  EXPECT_TRUE(runner->closed);
}

TEST_F(CodeRun, ABrokenProtocolEndsTheRunWithAClearError) {
  for (const char* line : {"not json", R"({"call":{"x":1},"tool":"everything__echo"})"}) {
    runner = std::make_shared<scripted_runner>();
    session->answers.clear();
    start();
    runner->say(line);
    ASSERT_EQ(session->answers.size(), 1u) << line;
    EXPECT_NE(answer_text(session->answers[0]).find("broke its protocol"), std::string::npos);
    EXPECT_TRUE(runner->closed);
  }
  // A call id already in flight.
  runner = std::make_shared<scripted_runner>();
  session->answers.clear();
  start();
  runner->say(R"({"call":1,"tool":"everything__echo"})");
  runner->say(R"({"call":1,"tool":"everything__echo"})");
  ASSERT_EQ(session->answers.size(), 1u);
  EXPECT_NE(answer_text(session->answers[0]).find("already in flight"), std::string::npos);
}

TEST_F(CodeRun, TheRunnersEndsAreNamed) {
  start();
  runner->events->on_closed({}, "killed: memory limit 512 MiB");
  ASSERT_EQ(session->answers.size(), 1u);
  EXPECT_EQ(answer_text(session->answers[0]),
            "The program's runner ended before the program did (killed: memory limit 512 MiB).");
  runner = std::make_shared<scripted_runner>();
  start();
  runner->events->on_oversize(20u << 20);
  ASSERT_EQ(session->answers.size(), 2u);
  EXPECT_NE(answer_text(session->answers[1]).find("output limit"), std::string::npos);
}

TEST_F(CodeRun, TheDeadlineHoldsWhenTheRunnerDoesNot) {
  code_limits limits;
  limits.wall = std::chrono::milliseconds(20);
  limits.grace = std::chrono::milliseconds(10);
  start(limits);
  io.run_for(std::chrono::seconds(2));
  ASSERT_EQ(session->answers.size(), 1u);
  EXPECT_NE(answer_text(session->answers[0]).find("timeout limit"), std::string::npos);
  EXPECT_TRUE(runner->closed);
}

TEST_F(CodeRun, ACancelledRunAnswersNobody) {
  start();
  runner->say(R"({"call":1,"tool":"everything__echo"})");
  run->cancel();
  runner->say(R"({"done":{"value":1,"logs":""}})");
  EXPECT_TRUE(session->answers.empty());
  EXPECT_TRUE(session->calls[0]->finished());
  EXPECT_TRUE(runner->closed);
}

TEST(CodeAnswer, SaysWhatTheProgramPrintedAndWhatWentWrong) {
  const auto text = [](std::string_view end) {
    return answer_text(code_answer(json::parse(end).as_object()));
  };
  EXPECT_EQ(text(R"({"done":{"value":"plain words","logs":""}})"), "plain words");
  EXPECT_EQ(text(R"({"done":{"value":null,"logs":"a\nb\n"}})"), "a\nb");
  EXPECT_EQ(text(R"({"done":{"value":null,"logs":""}})"),
            "(the program printed nothing and returned nothing)");
  EXPECT_EQ(text(R"({"error":{"kind":"syntax","message":"Unexpected token ';'","line":2,)"
                 R"("column":9}})"),
            "The program did not compile: Unexpected token ';' (line 2, column 9)");
  EXPECT_EQ(text(R"({"error":{"kind":"exception","message":"Error: boom","line":1,"column":7,)"
                 R"("stack":"Error: boom\n    at program.js:1:7","logs":"before\n"}})"),
            "The program threw Error: boom (line 1, column 7)\nError: boom\n    at "
            "program.js:1:7\nIt printed before it ended:\nbefore\n");
  EXPECT_EQ(text(R"({"error":{"kind":"memory","message":"more than 64 MiB"}})"),
            "The program was stopped at its memory limit: more than 64 MiB.");
  EXPECT_TRUE(is_error(code_answer(json::parse(R"({"error":{}})").as_object())));
}

}  // namespace
}  // namespace mcpmux
