// Secrets kept out of what clients receive (protocol/result_redaction): each credential shape in
// realistic surroundings, known values anywhere, ordinary text and code untouched, and every
// string of each MCP result shape a client sees.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "base/redact.hpp"
#include "core/redaction.hpp"
#include "protocol/result.hpp"
#include "protocol/result_redaction.hpp"

namespace mcpmux {
namespace {

using mcp::redaction_mode;
using mcp::secret_detector;
using mcp::secret_kind;

// Well-shaped, made-up credentials (the AWS pair is AWS's own documentation example).
constexpr std::string_view aws_id = "AKIAIOSFODNN7EXAMPLE";
constexpr std::string_view aws_secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr std::string_view ghp = "ghp_4ezcLL34oOHjLI8ZcbeYuO0d1biJ6sHv9T7W";
constexpr std::string_view github_pat =
    "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";
constexpr std::string_view glpat = "glpat-RT4l3tzKQ89bHPUcmXpx";
constexpr std::string_view slack = "xoxb-123456789012-1234567890123-8fezCPliWyIX20rUQEyTjYyQ";
constexpr std::string_view stripe = "sk_live_tyiycgdmhy0urPNU15G6udzp";
constexpr std::string_view openai = "sk-proj-IX_NLfEaQYIh-hQL3bjsAcVLvacYlDpVb0sBhRt_GXuKpxQD";
constexpr std::string_view anthropic =
    "sk-ant-api03-MLQTk-8IE1923xlE3tqi2fPiyPnfqAJV-K37sCQM1ORSAvSaF8gtRlrKl5EctCuwAUpaEQ8GyXKYVPnPU"
    "jE1vnkxBeLSXAA";
constexpr std::string_view google = "AIzaTKihqRIXceXyGWY1M9KGfXHentPhwNMfeV3";
constexpr std::string_view jwt_token =
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0Ij"
    "oxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
constexpr std::string_view pem_line =
    "T81ysFg2+UZJoN9l5T1n18prD381hC/wCxUBYzLu5o/QYw3JzQPmCKFrt/+z/d7O";

std::string cat(std::initializer_list<std::string_view> parts) {
  std::string s;
  for (auto p : parts) s += p;
  return s;
}

std::string pem_block(std::string_view label = "RSA PRIVATE KEY", bool with_end = true) {
  auto s = cat({"-----BEGIN ", label, "-----\n", pem_line, "\n", pem_line, "\n", pem_line, "\n"});
  if (with_end) s += cat({"-----END ", label, "-----"});
  return s;
}

const secret_detector& patterns() {
  static const secret_detector d(redaction_mode::patterns, {});
  return d;
}

struct redacted {
  std::string text;
  mcp::redaction_counts counts;
};

redacted run(const secret_detector& d, std::string text) {
  auto counts = d.redact(text);
  return {std::move(text), counts};
}

TEST(ResultRedaction, ModesAndKindNames) {
  EXPECT_EQ(mcp::parse_redaction_mode("patterns"), redaction_mode::patterns);
  EXPECT_EQ(mcp::parse_redaction_mode("known"), redaction_mode::known);
  EXPECT_EQ(mcp::parse_redaction_mode("off"), redaction_mode::off);
  EXPECT_EQ(mcp::parse_redaction_mode("Patterns"), std::nullopt);
  EXPECT_EQ(mcp::to_string(redaction_mode::known), "known");
  EXPECT_EQ(mcp::kind_name(secret_kind::aws_access_key), "aws-access-key");
  EXPECT_EQ(mcp::kind_name(secret_kind::api_key), "api-key");
}

TEST(ResultRedaction, DotEnvFile) {
  const auto env =
      cat({"# production\n"
           "DATABASE_URL=postgres://app@db.internal:5432/app\n"
           "DB_PASSWORD=Xk9mP2vL8qR4nT7wZc3\n"
           "AWS_ACCESS_KEY_ID=",
           aws_id, "\nAWS_SECRET_ACCESS_KEY=", aws_secret, "\nGITHUB_TOKEN=", ghp,
           "\nSLACK_BOT_TOKEN=", slack, "\nSTRIPE_SECRET_KEY=", stripe, "\nOPENAI_API_KEY=", openai,
           "\nexport ANTHROPIC_API_KEY=\"", anthropic, "\"\nGOOGLE_API_KEY=", google,
           "\nDEBUG=true\nPORT=8080\nLOG_LEVEL=info\n"});
  const auto r = run(patterns(), env);
  EXPECT_EQ(r.text,
            "# production\n"
            "DATABASE_URL=postgres://app@db.internal:5432/app\n"
            "DB_PASSWORD=[redacted: password]\n"
            "AWS_ACCESS_KEY_ID=[redacted: aws-access-key]\n"
            "AWS_SECRET_ACCESS_KEY=[redacted: aws-secret-key]\n"
            "GITHUB_TOKEN=[redacted: github-token]\n"
            "SLACK_BOT_TOKEN=[redacted: slack-token]\n"
            "STRIPE_SECRET_KEY=[redacted: stripe-key]\n"
            "OPENAI_API_KEY=[redacted: openai-key]\n"
            "export ANTHROPIC_API_KEY=\"[redacted: anthropic-key]\"\n"
            "GOOGLE_API_KEY=[redacted: google-api-key]\n"
            "DEBUG=true\nPORT=8080\nLOG_LEVEL=info\n");
  EXPECT_EQ(r.counts.total(), 9u);
  EXPECT_EQ(r.counts[secret_kind::password], 1u);
  EXPECT_EQ(r.counts[secret_kind::aws_access_key], 1u);
  EXPECT_EQ(r.counts[secret_kind::aws_secret_key], 1u);
  EXPECT_EQ(r.counts[secret_kind::github_token], 1u);
  EXPECT_EQ(r.counts[secret_kind::anthropic_key], 1u);
  EXPECT_EQ(r.counts[secret_kind::google_api_key], 1u);
}

TEST(ResultRedaction, JsonConfig) {
  const auto config = cat({R"({
  "name": "deploy-bot",
  "gitlab": {"url": "https://gitlab.example.com", "token": ")",
                           glpat, R"("},
  "github": {"pat": ")",
                           github_pat, R"("},
  "oauth": {"client_id": "deploy-bot-prod", "client_secret": "q8Fz2LmN0vXr7TbK4sWd9Yh"},
  "aws": {"SecretAccessKey": ")",
                           aws_secret, R"(", "Region": "eu-west-1"},
  "apiKey": "c29tZS1yYW5kb20ta2V5LTEyMzQ1Ng",
  "max_tokens": 4096
})"});
  const auto r = run(patterns(), config);
  EXPECT_EQ(r.text, R"({
  "name": "deploy-bot",
  "gitlab": {"url": "https://gitlab.example.com", "token": "[redacted: gitlab-token]"},
  "github": {"pat": "[redacted: github-token]"},
  "oauth": {"client_id": "deploy-bot-prod", "client_secret": "[redacted: secret]"},
  "aws": {"SecretAccessKey": "[redacted: aws-secret-key]", "Region": "eu-west-1"},
  "apiKey": "[redacted: api-key]",
  "max_tokens": 4096
})");
  EXPECT_EQ(r.counts.total(), 5u);
  EXPECT_EQ(r.counts[secret_kind::secret], 1u);
  EXPECT_EQ(r.counts[secret_kind::api_key], 1u);
}

TEST(ResultRedaction, LogLines) {
  const auto log = cat({"2026-12-05T10:00:00Z INFO GET /v1/me Authorization: Bearer ", jwt_token,
                        " status=200\n2026-12-05T10:00:01Z DEBUG retry with token: ",
                        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5 (attempt 2)\n"});
  const auto r = run(patterns(), log);
  EXPECT_EQ(r.text,
            "2026-12-05T10:00:00Z INFO GET /v1/me Authorization: Bearer [redacted: jwt] "
            "status=200\n2026-12-05T10:00:01Z DEBUG retry with token: [redacted: token] (attempt "
            "2)\n");
  EXPECT_EQ(r.counts[secret_kind::jwt], 1u);
  EXPECT_EQ(r.counts[secret_kind::token], 1u);
}

TEST(ResultRedaction, PrivateKeyInProse) {
  const auto prose =
      cat({"Here is the deploy key you asked for:\n\n", pem_block("OPENSSH PRIVATE KEY"),
           "\n\nKeep it safe. The public half is in ~/.ssh/id_ed25519.pub.\n"});
  const auto r = run(patterns(), prose);
  EXPECT_EQ(r.text,
            "Here is the deploy key you asked for:\n\n[redacted: private-key]\n\nKeep it safe. "
            "The public half is in ~/.ssh/id_ed25519.pub.\n");
  EXPECT_EQ(r.counts[secret_kind::private_key], 1u);
  EXPECT_EQ(r.counts.total(), 1u);

  // A key cut short (no END line) is still a key, up to where its base64 stops.
  const auto cut = run(patterns(), cat({"head: ", pem_block("PRIVATE KEY", false), "<eof>"}));
  EXPECT_EQ(cut.text, "head: [redacted: private-key]<eof>");
  // Inside a JSON text the line ends are escaped.
  std::string escaped = pem_block();
  for (std::size_t at; (at = escaped.find('\n')) != std::string::npos;)
    escaped.replace(at, 1, "\\n");
  EXPECT_EQ(run(patterns(), cat({R"({"key": ")", escaped, R"("})"})).text,
            R"({"key": "[redacted: private-key]"})");
}

void expect_untouched(std::string_view text) {
  const auto r = run(patterns(), std::string(text));
  EXPECT_EQ(r.text, text);
  EXPECT_TRUE(r.counts.empty()) << text;
}

TEST(ResultRedaction, MentionsOfShapesAreNotSecrets) {
  for (std::string_view text : {
           "A PEM key starts with -----BEGIN RSA PRIVATE KEY----- and ends with its END line.",
           "-----BEGIN PUBLIC KEY-----\nT81ysFg2+UZJoN9l5T1n18prD381hC/wCxUBYzLu5o/QYw3JzQPmCKFrt/"
           "+z/d7O\n-----END PUBLIC KEY-----",
           "AWS keys look like AKIAXXXXXXXXXXXXXXX or AKIA followed by sixteen characters.",
           "pip install sk-learn-extensions-and-more-things; see task-sk-1234567890abcdefghij",
           "the header eyJhbGciOiJIUzI1NiJ9 alone is not a token; neither is "
           "eyJub3QiOiJqd3QifQ.e30.",
       })
    expect_untouched(text);
}

TEST(ResultRedaction, OrdinaryTextAndCodeUnchanged) {
  for (std::string_view text : {
           "The password must be at least twelve characters; set it with `mcpmux secret set`.",
           "password: see the team vault\ntoken = get_token(user)\nmax_tokens: 4096\n",
           "if (password == expected_password_for_user) return token_is_valid;\n",
           "password=changeme\nsecret=correcthorsebatterystaple\napi_key=${API_KEY}\n",
           "token_file=/home/alice/.config/gh/hosts.yml\nGITHUB_TOKEN_PATH=/run/secrets/gh\n",
           R"({"description": "The token used to authenticate requests", "token": "<your token>"})",
           "auth_token: \"{{ vault_lookup('prod/github/deploy_token') }}\"\n",
           "for (const auto& s : secrets) add_secret(s); // secret = resolve(name);\n",
           "url = https://example.com/callback?state=abc&token=short\n",
           "progressToken: ProgressTokenSchema$1.optional(),\nprogress_token: "
           "ProgressTokenSchema$1\n"
           "\npassword: zod_1.default.string(),\n",
           "token: messages_1.Messages.UnexpectedToken;\nAPI_KEY = "
           "\"${secret:context7_API_KEY}\"\n",
           "skip sk- and rk_live_ and ghp_ and xoxb- and AIza and glpat- prefixes alone",
           "ключ: значение; 日本語のテキスト; emoji 🙂 "
           "token=🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂🙂",
       })
    expect_untouched(text);
}

TEST(ResultRedaction, KnownValuesAnywhere) {
  const secret_detector d(redaction_mode::known, {"hunter2-but-longer", "hunter2-but-longer-still",
                                                  "short", "s3cr3t-v4lue"});
  const auto r = run(d,
                     "a=hunter2-but-longer-still, b=Xhunter2-but-longerX, c=short, "
                     "url=https://u:s3cr3t-v4lue@host/, d=hunter2-but-longe");
  EXPECT_EQ(r.text,
            "a=[redacted: known-secret], b=X[redacted: known-secret]X, c=short, "
            "url=https://u:[redacted: known-secret]@host/, d=hunter2-but-longe");
  EXPECT_EQ(r.counts[secret_kind::known_secret], 3u);
  EXPECT_EQ(r.counts.total(), 3u);

  // known mode leaves the shapes alone; patterns mode does both, the known value first.
  const auto with_shapes = cat({"GITHUB_TOKEN=", ghp, " pass=s3cr3t-v4lue"});
  EXPECT_EQ(run(d, with_shapes).text,
            cat({"GITHUB_TOKEN=", ghp, " pass=[redacted: known-secret]"}));
  const secret_detector both(redaction_mode::patterns, {"s3cr3t-v4lue", std::string(ghp)});
  const auto r2 = run(both, with_shapes);
  EXPECT_EQ(r2.text, "GITHUB_TOKEN=[redacted: known-secret] pass=[redacted: known-secret]");
  EXPECT_EQ(r2.counts[secret_kind::known_secret], 2u);
}

TEST(ResultRedaction, OffChangesNothing) {
  const secret_detector d(redaction_mode::off, {"s3cr3t-v4lue"});
  const auto text = cat({"s3cr3t-v4lue ", ghp, "\n", pem_block()});
  const auto r = run(d, text);
  EXPECT_EQ(r.text, text);
  EXPECT_TRUE(r.counts.empty());
}

// Shapes that may look alike are told apart, and end where their alphabet ends.
TEST(ResultRedaction, ShapeEdges) {
  EXPECT_EQ(run(patterns(), cat({"(", aws_id, ")"})).text, "([redacted: aws-access-key])");
  EXPECT_EQ(run(patterns(), cat({aws_id, "X"})).text, cat({aws_id, "X"}));  // 17 characters
  EXPECT_EQ(run(patterns(), cat({"key ", stripe})).text, "key [redacted: stripe-key]");
  EXPECT_EQ(run(patterns(), "rk_live_tyiycgdmhy0urPNU15G6udzp.").text, "[redacted: stripe-key].");
  EXPECT_EQ(run(patterns(), "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv").text, "[redacted: openai-key]");
  EXPECT_EQ(run(patterns(), cat({"'", openai, "'"})).text, "'[redacted: openai-key]'");
  EXPECT_EQ(run(patterns(), cat({"x", ghp})).text, cat({"x", ghp}));  // not at a token start
}

// --- JSON results -------------------------------------------------------------------------------

json::value parse(std::string_view s) {
  return json::parse(s);
}

TEST(ResultRedaction, ToolResult) {
  auto result = parse(cat({R"({
    "content": [
      {"type": "text", "text": "found AWS_ACCESS_KEY_ID=)",
                           aws_id, R"("},
      {"type": "resource", "resource": {"uri": "file:///app/.env", "mimeType": "text/plain",
                                        "text": "GITHUB_TOKEN=)",
                           ghp, R"("}},
      {"type": "resource", "resource": {"uri": "file:///key.bin", "blob": ")",
                           ghp, R"("}},
      {"type": "resource_link", "uri": "file:///k", "name": "k",
       "description": "key )",
                           glpat, R"("},
      {"type": "image", "data": ")",
                           ghp, R"(", "mimeType": "image/png"}
    ],
    "structuredContent": {"env": [{"name": "OPENAI", "value": ")",
                           openai, R"("}],
                          "n": 3, "nested": {"deep": [[")",
                           jwt_token, R"("]]}},
    "isError": false
  })"}));
  const auto counts = mcp::redact_result(result, patterns());
  EXPECT_EQ(result, parse(cat({R"({
    "content": [
      {"type": "text", "text": "found AWS_ACCESS_KEY_ID=[redacted: aws-access-key]"},
      {"type": "resource", "resource": {"uri": "file:///app/.env", "mimeType": "text/plain",
                                        "text": "GITHUB_TOKEN=[redacted: github-token]"}},
      {"type": "resource", "resource": {"uri": "file:///key.bin", "blob": ")",
                               ghp, R"("}},
      {"type": "resource_link", "uri": "file:///k", "name": "k",
       "description": "key [redacted: gitlab-token]"},
      {"type": "image", "data": ")",
                               ghp, R"(", "mimeType": "image/png"}
    ],
    "structuredContent": {"env": [{"name": "OPENAI", "value": "[redacted: openai-key]"}],
                          "n": 3, "nested": {"deep": [["[redacted: jwt]"]]}},
    "isError": false
  })"})));
  EXPECT_EQ(counts.total(), 5u);
  EXPECT_EQ(counts[secret_kind::jwt], 1u);
}

TEST(ResultRedaction, ResourcesRead) {
  json::value result = {
      {"contents", json::array{json::object{{"uri", "file:///etc/app.pem"}, {"text", pem_block()}},
                               json::object{{"uri", "file:///x.bin"}, {"blob", aws_id}}}}};
  const auto counts = mcp::redact_result(result, patterns());
  EXPECT_EQ(result.at("contents").at(0).at("text"), "[redacted: private-key]");
  EXPECT_EQ(result.at("contents").at(1).at("blob").as_string(), aws_id);
  EXPECT_EQ(counts.total(), 1u);
}

TEST(ResultRedaction, PromptsGet) {
  auto result = parse(cat({R"({"description": "uses )", slack, R"(",
    "messages": [
      {"role": "user", "content": {"type": "text", "text": "token: )",
                           google, R"("}},
      {"role": "assistant", "content": {"type": "resource",
        "resource": {"uri": "mem://x", "text": "sk )",
                           stripe, R"("}}}]})"}));
  const auto counts = mcp::redact_result(result, patterns());
  EXPECT_EQ(result, parse(R"({"description": "uses [redacted: slack-token]",
    "messages": [
      {"role": "user", "content": {"type": "text", "text": "token: [redacted: google-api-key]"}},
      {"role": "assistant", "content": {"type": "resource",
        "resource": {"uri": "mem://x", "text": "sk [redacted: stripe-key]"}}}]})"));
  EXPECT_EQ(counts.total(), 3u);
}

TEST(ResultRedaction, Notifications) {
  const secret_detector d(redaction_mode::patterns, {"s3cr3t-v4lue"});
  auto log = parse(cat({R"({"level": "info", "logger": "s3cr3t-v4lue",
    "data": {"msg": "login with s3cr3t-v4lue", "headers": ["x-api-key: )",
                        anthropic, R"("]}})"}));
  const auto c1 = mcp::redact_notification("notifications/message", log, d);
  EXPECT_EQ(log, parse(R"({"level": "info", "logger": "s3cr3t-v4lue",
    "data": {"msg": "login with [redacted: known-secret]",
             "headers": ["x-api-key: [redacted: anthropic-key]"]}})"));
  EXPECT_EQ(c1.total(), 2u);

  auto text_data = parse(R"({"level": "info", "data": "s3cr3t-v4lue"})");
  EXPECT_EQ(mcp::redact_notification("notifications/message", text_data, d).total(), 1u);
  EXPECT_EQ(text_data.at("data"), "[redacted: known-secret]");

  auto progress = parse(R"({"progressToken": "s3cr3t-v4lue", "progress": 1,
                            "message": "cloning with s3cr3t-v4lue"})");
  EXPECT_EQ(mcp::redact_notification("notifications/progress", progress, d).total(), 1u);
  EXPECT_EQ(progress.at("message"), "cloning with [redacted: known-secret]");
  EXPECT_EQ(progress.at("progressToken"), "s3cr3t-v4lue");  // the client's own token

  auto other = parse(R"({"uri": "s3cr3t-v4lue"})");
  EXPECT_TRUE(mcp::redact_notification("notifications/resources/updated", other, d).empty());
}

TEST(ResultRedaction, ErrorMessageAndData) {
  const secret_detector d(redaction_mode::patterns, {"s3cr3t-v4lue"});
  auto error = parse(cat({R"({"code": -32000, "message": "bad token s3cr3t-v4lue",
    "data": {"sent": ")",
                          aws_id, R"(", "n": 3}})"}));
  EXPECT_EQ(mcp::redact_error(error, d).total(), 2u);
  EXPECT_EQ(error, parse(R"({"code": -32000, "message": "bad token [redacted: known-secret]",
    "data": {"sent": "[redacted: aws-access-key]", "n": 3}})"));
}

TEST(ResultRedaction, LinearOnHostileInput) {
  // Many starts that fail late: each would rescan the rest if a scanner were not bounded.
  std::string hostile;
  for (int i = 0; i < 20000; ++i)
    hostile += "-----BEGIN RSA PRIVATE KEY----- token=token=eyJ-eyJ.a.b AKIA sk-ant- ";
  const auto r = run(patterns(), hostile);
  EXPECT_EQ(r.text.size(), hostile.size());
  EXPECT_TRUE(r.counts.empty());
}

// The check on an answer's text before any parse: it must say yes whenever redact_result would
// change the parsed answer, whatever JSON's escapes did to the value.
TEST(ResultRedaction, MayHoldSecretSeesThroughJsonEscapes) {
  const secret_detector known(redaction_mode::known, {"quote\"d/secret\\value"});
  const auto answer = [](std::string_view text) {
    return json::serialize(json::object{{"content", json::array{json::object{{"text", text}}}}});
  };
  const auto check = [&](const secret_detector& d, std::string_view text) {
    const auto raw = answer(text);
    auto parsed = parse(raw);
    const bool changes = !mcp::redact_result(parsed, d).empty();
    return std::pair{mcp::may_hold_secret(raw, d), changes};
  };
  // A known value with a quote, a slash and a backslash, written escaped in the JSON text.
  EXPECT_EQ(check(known, "x quote\"d/secret\\value y"), std::pair(true, true));
  const std::string slashed = R"({"content":[{"text":"quote\"d\/secret\\value"}]})";
  EXPECT_TRUE(mcp::may_hold_secret(slashed, known));
  // A private key's lines are joined by \n escapes in the text.
  EXPECT_EQ(check(patterns(), pem_block()), std::pair(true, true));
  // Letters written as \u00XX: only a server hiding a value does that; the answer is parsed.
  EXPECT_TRUE(mcp::may_hold_secret(R"({"text":"\u0067hp_4ezcLL34oOHjLI8ZcbeYuO0d1biJ6sHv9T7W"})",
                                   patterns()));
  // What encoders escape for HTML's sake does not.
  EXPECT_FALSE(mcp::may_hold_secret(R"({"text":"a \u003cb\u003e \u0026 c"})", patterns()));
  // Ordinary answers are relayed unparsed.
  EXPECT_EQ(check(patterns(), "Found 3 issues in src/main.cpp: line 4"), std::pair(false, false));
  EXPECT_EQ(check(known, "nothing here"), std::pair(false, false));
  const secret_detector off(redaction_mode::off, {"quote\"d/secret\\value"});
  EXPECT_FALSE(mcp::may_hold_secret(answer("quote\"d/secret\\value"), off));
}

// A call takes the detector of its mode when it starts; one learned later (a token refreshed, a
// login) is in the next call's.
TEST(RedactionDetectors, BuiltAgainWhenMcpmuxLearnsASecret) {
  redaction_detectors detectors;
  EXPECT_EQ(detectors.get(redaction_mode::off), nullptr);
  const auto before = detectors.get(redaction_mode::known);
  ASSERT_NE(before, nullptr);
  EXPECT_EQ(detectors.get(redaction_mode::known), before);  // shared while nothing changed
  add_secret("learned-later-Qx81-value");
  const auto after = detectors.get(redaction_mode::known);
  EXPECT_NE(after, before);
  std::string text = "token learned-later-Qx81-value and AKIAIOSFODNN7EXAMPLE";
  auto counts = after->redact(text);
  EXPECT_EQ(text, "token [redacted: known-secret] and AKIAIOSFODNN7EXAMPLE");
  text = "token learned-later-Qx81-value and AKIAIOSFODNN7EXAMPLE";
  counts += detectors.get(redaction_mode::patterns)->redact(text);
  EXPECT_EQ(describe(counts), "known-secret 2, aws-access-key 1");
}

}  // namespace
}  // namespace mcpmux
