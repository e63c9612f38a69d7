// The call object on its own: every end answers at most once and audits once, in either era.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/call.hpp"
#include "core/mrtr.hpp"
#include "protocol/error.hpp"

namespace mcpmux {
namespace {

struct caller : call_caller {
  std::vector<json::value> replies;
  std::vector<audit_entry> audits;
  std::vector<json::object> progress;
  void call_replied(call&, std::string text) override { replies.push_back(json::parse(text)); }
  void call_audited(audit_fields& row) override { row.write_to(audits.emplace_back()); }
  void on_progress(const json::object& p) override { progress.push_back(p); }
  bool client_supports(std::string_view) const override { return false; }
  std::int64_t ask_client(std::string_view, const json::value&, response_handler) override {
    return 0;
  }
  void cancel_ask(std::int64_t, std::string_view) override {}
};

std::shared_ptr<call> make_call(const std::shared_ptr<caller>& who, mcp::era era,
                                mrtr_registry* mrtr = nullptr,
                                std::function<void(json::object&)> after = {}) {
  call::request r;
  r.client_id = "c-7";
  r.key = R"("c-7")";
  r.method = "tools/call";
  r.exposed = "fs__read";
  r.era = era;
  r.after = std::move(after);
  r.params = json::object{{"name", "read"}, {"_meta", {{"progressToken", "tok-1"}}}};
  r.audit.emplace();
  r.audit->server = "fs";
  r.audit->request_bytes = 42;
  return std::make_shared<call>(std::move(r), who, mrtr);
}

rpc_outcome answer(std::string_view text) {
  message_parser p;
  return {{}, (p.parse(text)).value()};
}

TEST(Call, TheFirstEndAnswersAndAuditsOnceUnderTheClientsId) {
  auto who = std::make_shared<caller>();
  auto c = make_call(who, mcp::era::legacy);
  EXPECT_EQ(c->tool(), "read");
  c->finish(answer(R"({"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":true}})"));
  c->finish(answer(R"({"jsonrpc":"2.0","id":3,"result":{}})"));  // a second end is ignored
  c->cancel("too late");
  ASSERT_EQ(who->replies.size(), 1u);
  EXPECT_EQ(who->replies[0].at("id"), "c-7");
  EXPECT_FALSE(who->replies[0].at("result").as_object().contains("resultType"));
  ASSERT_EQ(who->audits.size(), 1u);
  EXPECT_EQ(who->audits[0].outcome, "tool_error");
  EXPECT_GT(who->audits[0].response_bytes, 0);
  // The row: what its start kept and the call's own.
  EXPECT_EQ(who->audits[0].kind, "tools/call");
  EXPECT_EQ(who->audits[0].name, "fs__read");
  EXPECT_EQ(who->audits[0].server, "fs");
  EXPECT_EQ(who->audits[0].request_bytes, 42);
  EXPECT_TRUE(c->finished());
}

TEST(Call, ACancelledCallIsNotAnsweredAndIsAuditedAsCancelled) {
  auto who = std::make_shared<caller>();
  auto c = make_call(who, mcp::era::legacy);
  c->cancel("cancelled by client");
  c->finish(answer(R"({"jsonrpc":"2.0","id":3,"result":{}})"));
  EXPECT_TRUE(who->replies.empty());
  ASSERT_EQ(who->audits.size(), 1u);
  EXPECT_EQ(who->audits[0].outcome, "cancelled");
}

TEST(Call, AFailureWithoutAnAnswerStillAnswersWithAnError) {
  auto who = std::make_shared<caller>();
  auto c = make_call(who, mcp::era::legacy);
  c->finish({errc::transport_closed, std::nullopt});
  ASSERT_EQ(who->replies.size(), 1u);
  EXPECT_EQ(who->replies[0].at("error").at("code"), rpc_code::internal_error);
  EXPECT_EQ(who->audits.at(0).outcome, "error");
}

TEST(Call, AModernAnswerIsMarkedCompleteAndAMissingResourceIsInvalidParams) {
  auto who = std::make_shared<caller>();
  make_call(who, mcp::era::modern)
      ->finish(answer(R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})"));
  make_call(who, mcp::era::modern)
      ->finish(answer(R"({"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"gone"}})"));
  ASSERT_EQ(who->replies.size(), 2u);
  EXPECT_EQ(who->replies[0].at("result").at("resultType"), "complete");
  EXPECT_EQ(who->replies[1].at("error").at("code"), rpc_code::invalid_params);
  EXPECT_EQ(who->audits.at(1).outcome, "error");
}

TEST(Call, TheAfterStageAdjustsASuccessfulResult) {
  auto who = std::make_shared<caller>();
  auto c = make_call(who, mcp::era::legacy, nullptr,
                     [](json::object& result) { result["seen"] = true; });
  c->finish(answer(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
  EXPECT_EQ(who->replies.at(0).at("result").at("seen"), true);
}

TEST(Call, ProgressReachesTheCallerUnderItsOwnToken) {
  auto who = std::make_shared<caller>();
  auto c = make_call(who, mcp::era::legacy);
  c->on_progress(json::object{{"progressToken", 17}, {"progress", 1}});
  ASSERT_EQ(who->progress.size(), 1u);
  EXPECT_EQ(who->progress[0].at("progressToken"), "tok-1");
  EXPECT_EQ(who->progress[0].at("progress"), 1);
}

TEST(Call, AModernCallParkedForInputKeepsItsAnswerForTheRetry) {
  mrtr_registry reg;
  auto who = std::make_shared<caller>();
  auto c = make_call(who, mcp::era::modern, &reg);
  std::optional<rpc_outcome> server_got;
  c->ask_client("roots/list", json::object{}, [&](rpc_outcome o) { server_got = std::move(o); });
  ASSERT_EQ(who->replies.size(), 1u);  // input_required, under the first id
  const auto& asked = who->replies[0].at("result").as_object();
  EXPECT_EQ(asked.at("resultType"), "input_required");
  EXPECT_EQ(who->audits.at(0).outcome, "input_required");
  const auto state = std::string(asked.at("requestState").as_string());
  // The server answers before the client comes back: held, then given to the retry.
  c->finish(answer(R"({"jsonrpc":"2.0","id":9,"result":{"content":[]}})"));
  EXPECT_EQ(who->replies.size(), 1u);
  ASSERT_TRUE(server_got && server_got->ec);  // its question no longer matters
  auto back = reg.take(state, mrtr_registry::clock::now());
  ASSERT_EQ(back, c);
  back->attach(who, "c-8", R"("c-8")");
  back->resume(nullptr);
  ASSERT_EQ(who->replies.size(), 2u);
  EXPECT_EQ(who->replies[1].at("id"), "c-8");
  EXPECT_EQ(who->replies[1].at("result").at("resultType"), "complete");
  EXPECT_EQ(who->audits.size(), 1u);  // the row was the first request's
}

TEST(Call, AParkedCallWhoseClientLeftStillAnswersTheRetryOnAnotherConnection) {
  mrtr_registry reg;
  auto first = std::make_shared<caller>();
  auto c = make_call(first, mcp::era::modern, &reg);
  c->ask_client("elicitation/create", json::object{}, [](rpc_outcome) {});
  ASSERT_EQ(first->replies.size(), 1u);
  const auto state = std::string(first->replies[0].at("result").at("requestState").as_string());
  first.reset();  // that connection is gone
  c->finish(answer(R"({"jsonrpc":"2.0","id":9,"result":{"content":[]}})"));
  auto second = std::make_shared<caller>();
  auto back = reg.take(state, mrtr_registry::clock::now());
  ASSERT_EQ(back, c);
  back->attach(second, 4, "4");
  back->resume(nullptr);
  ASSERT_EQ(second->replies.size(), 1u);
  EXPECT_EQ(second->replies[0].at("id"), 4);
  EXPECT_EQ(second->replies[0].at("result").at("resultType"), "complete");
}

}  // namespace
}  // namespace mcpmux
