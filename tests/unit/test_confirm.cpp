// Which calls a person confirms first (core/confirm): the spec's destructive defaults, globs over
// exposed names, the question and what its answer means.
#include "core/confirm.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

namespace mcpmux {
namespace {

using ::testing::HasSubstr;

json::object tool(std::string_view annotations_json) {
  json::object t{{"name", "t"}};
  if (!annotations_json.empty()) t["annotations"] = json::parse(annotations_json);
  return t;
}

TEST(Confirm, DestructiveFollowsTheSpecsDefaults) {
  // No annotations, or none of the two hints: destructive.
  EXPECT_TRUE(is_destructive(nullptr));
  const auto bare = tool("");
  EXPECT_TRUE(is_destructive(&bare));
  const auto titled = tool(R"({"title":"Delete"})");
  EXPECT_TRUE(is_destructive(&titled));
  // readOnlyHint true: never destructive, whatever destructiveHint says.
  const auto read_only = tool(R"({"readOnlyHint":true,"destructiveHint":true})");
  EXPECT_FALSE(is_destructive(&read_only));
  // destructiveHint false: additive only.
  const auto additive = tool(R"({"readOnlyHint":false,"destructiveHint":false})");
  EXPECT_FALSE(is_destructive(&additive));
  const auto explicit_yes = tool(R"({"readOnlyHint":false,"destructiveHint":true})");
  EXPECT_TRUE(is_destructive(&explicit_yes));
  // A hint that is not a boolean is no hint.
  const auto stringly = tool(R"({"readOnlyHint":"true"})");
  EXPECT_TRUE(is_destructive(&stringly));
}

TEST(Confirm, TheFirstMatchingEntryIsReported) {
  const std::vector<std::string> rules = {"github__delete_*", "destructive"};
  const auto read_only = tool(R"({"readOnlyHint":true})");
  EXPECT_EQ(confirm_rule_for(rules, "github__delete_repo", &read_only), "github__delete_*");
  EXPECT_EQ(confirm_rule_for(rules, "fs__write_file", nullptr), "destructive");
  EXPECT_EQ(confirm_rule_for(rules, "fs__read_file", &read_only), std::nullopt);
  // Globs only: no destructive word, annotations do not matter.
  const std::vector<std::string> globs = {"*__drop_?"};
  EXPECT_EQ(confirm_rule_for(globs, "db__drop_x", &read_only), "*__drop_?");
  EXPECT_EQ(confirm_rule_for(globs, "db__drop_xy", nullptr), std::nullopt);
  EXPECT_EQ(confirm_rule_for({}, "anything", nullptr), std::nullopt);
}

TEST(Confirm, FindsTheToolByTheServersName) {
  const std::vector<json::object> tools = {json::object{{"name", "a"}},
                                           json::object{{"name", "b"}, {"x", 1}}};
  ASSERT_NE(find_tool(tools, "b"), nullptr);
  EXPECT_TRUE(find_tool(tools, "b")->contains("x"));
  EXPECT_EQ(find_tool(tools, "c"), nullptr);
}

TEST(Confirm, TheQuestionShowsTheArgumentsClippedAndVisible) {
  const auto q = confirm_question("gh__delete_repo", json::parse(R"({"repo":"me/x\u001b[31m"})"));
  const std::string message(q.at("message").as_string());
  EXPECT_THAT(message, HasSubstr("Allow gh__delete_repo with {\"repo\":\"me/x"));
  EXPECT_EQ(message.find('\x1b'), std::string::npos) << "a terminal control reached the person";
  EXPECT_EQ(message.back(), '?');
  const auto& schema = q.at("requestedSchema").as_object();
  EXPECT_EQ(schema.at("type"), "object");
  const auto& allow = schema.at("properties").at("allow_for_session").as_object();
  EXPECT_EQ(allow.at("type"), "boolean");
  EXPECT_EQ(allow.at("title"), "Allow for the rest of this session");

  const auto big = confirm_question("t", json::value(std::string(10000, 'a')));
  EXPECT_LT(big.at("message").as_string().size(), 700u);
  EXPECT_THAT(std::string(confirm_question("t", nullptr).at("message").as_string()),
              HasSubstr("with no arguments"));
}

rpc_outcome answer(std::string_view result_json) {
  message m{message_kind::response, {}};
  m.body["result"] = json::parse(result_json);
  return {{}, std::move(m)};
}

TEST(Confirm, ReadsTheAnswer) {
  EXPECT_EQ(read_confirm_answer(answer(R"({"action":"accept"})")), confirm_answer::allow);
  EXPECT_EQ(
      read_confirm_answer(answer(R"({"action":"accept","content":{"allow_for_session":false}})")),
      confirm_answer::allow);
  EXPECT_EQ(
      read_confirm_answer(answer(R"({"action":"accept","content":{"allow_for_session":true}})")),
      confirm_answer::allow_for_session);
  EXPECT_EQ(read_confirm_answer(answer(R"({"action":"decline"})")), confirm_answer::declined);
  EXPECT_EQ(read_confirm_answer(answer(R"({"action":"cancel"})")), confirm_answer::cancelled);
  // Anything else is no consent.
  EXPECT_EQ(read_confirm_answer(answer(R"({"action":"yes"})")), confirm_answer::cancelled);
  EXPECT_EQ(read_confirm_answer(answer(R"({})")), confirm_answer::cancelled);
  message err{message_kind::error_response, {}};
  err.body["error"] = json::object{{"code", -32601}, {"message", "no"}};
  EXPECT_EQ(read_confirm_answer({{}, std::move(err)}), confirm_answer::cancelled);
  EXPECT_EQ(read_confirm_answer({std::make_error_code(std::errc::timed_out), std::nullopt}),
            confirm_answer::cancelled);
}

}  // namespace
}  // namespace mcpmux
