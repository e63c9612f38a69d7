// Secrets kept out of what clients receive (issue 46, point 1), through the real daemon: a
// server that echoes the ${secret:…} value it was given and three credential shapes, in a tool's
// text and structured content and in a log message; what the client gets, what status and the
// audit log count; a server with redact_results = "off" beside it.
#include <sys/stat.h>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

constexpr std::string_view secret_value = "Zq81-user-secret-value-x7Kp";
constexpr std::string_view aws_id = "AKIAIOSFODNN7EXAMPLE";
constexpr std::string_view ghp = "ghp_4ezcLL34oOHjLI8ZcbeYuO0d1biJ6sHv9T7W";
const std::string pem =
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "T81ysFg2+UZJoN9l5T1n18prD381hC/wCxUBYzLu5o/QYw3JzQPmCKFrt/+z/d7O\n"
    "T81ysFg2+UZJoN9l5T1n18prD381hC/wCxUBYzLu5o/QYw3JzQPmCKFrt/+z/d7O\n"
    "-----END RSA PRIVATE KEY-----";

class redaction : public daemon_test {
 protected:
  daemon& start_with_secret() {
    const auto secrets =
        dir_.write("secrets.json", "{\"api\": \"" + std::string(secret_value) + "\"}");
    ::chmod(secrets.c_str(), 0600);
    daemon_options opt;
    opt.env["MCPMUX_SECRETS_FILE"] = secrets;
    return start(
        fake_server_table("alpha", {"--logging"}, "env = { API_KEY = \"${secret:api}\" }") +
            fake_server_table("plain", {"--name", "plain"}, "redact_results = \"off\""),
        opt);
  }

  /// Everything a client was sent for `tool` called with `text`, serialized.
  std::string echoed(client& c, std::string_view tool, std::string_view text) {
    auto r = c.call(tool, json::object{{"text", text}});
    EXPECT_TRUE(r && !error_code(r)) << (r ? json::serialize(*r) : "no answer");
    return r ? json::serialize(*r) : std::string();
  }
};

TEST_F(redaction, SecretsAndCredentialShapesNeverReachTheClient) {
  start_with_secret();
  auto c = connect_initialized();
  const std::string text = "key " + std::string(secret_value) + " aws " + std::string(aws_id) +
                           " gh " + std::string(ghp) + "\n" + pem + "\nend";
  const auto got = echoed(c, "alpha__echo", text);
  // In the text and in structuredContent alike: none of the values, each kind named.
  for (auto value :
       {std::string(secret_value), std::string(aws_id), std::string(ghp), std::string("T81ysFg2")})
    EXPECT_FALSE(contains(got, value)) << value << " reached the client: " << got;
  for (auto kind : {"[redacted: known-secret]", "[redacted: aws-access-key]",
                    "[redacted: github-token]", "[redacted: private-key]"})
    EXPECT_TRUE(contains(got, kind)) << kind << " missing: " << got;
  EXPECT_TRUE(contains(got, "\"key [redacted: known-secret] aws")) << got;

  // A server whose table says off is relayed as it answered.
  const auto plain = echoed(c, "plain__echo", text);
  EXPECT_TRUE(contains(plain, aws_id)) << plain;

  // An ordinary answer is unchanged.
  EXPECT_TRUE(contains(echoed(c, "alpha__echo", "hello there"), "\"hello there\""));

  // Counted per server in status (never the values), and in each call's audit row.
  auto st = daemon_->status();
  json::value alpha;
  for (const auto& s : st.at("servers").as_array())
    if (s.at("name") == "alpha") alpha = s;
  ASSERT_TRUE(alpha.is_object()) << json::serialize(st);
  const auto& redacted = alpha.at("redacted").as_object();
  EXPECT_EQ(redacted.at("total").to_number<std::int64_t>(), 8) << json::serialize(redacted);
  EXPECT_EQ(redacted.at("by_kind").at("aws-access-key").to_number<std::int64_t>(), 2);
  EXPECT_FALSE(contains(json::serialize(st), secret_value));
  // The audit row is written by a thread of its own, in batches: wait for it.
  std::vector<std::string> rows;
  wait_until(
      [&] {
        rows.clear();
        auto history = run_cli(daemon_->socket(), {"history", "--json"});
        auto entries = parse_or_null(history.out);
        if (!entries.is_array()) return false;
        for (const auto& e : entries.as_array())
          if (e.at("name") == "alpha__echo") rows.emplace_back(e.at("redacted").as_string());
        return rows.size() == 2;
      },
      5s);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], "known-secret 2, private-key 2, aws-access-key 2, github-token 2");
  EXPECT_EQ(rows[1], "");
}

TEST_F(redaction, LogMessagesAreRedactedToo) {
  start_with_secret();
  auto c = connect_initialized();
  ASSERT_TRUE(c.request("logging/setLevel", json::object{{"level", "debug"}}));
  auto r = c.call("alpha__log",
                  json::object{{"level", "info"}, {"text", "token is " + std::string(ghp)}});
  ASSERT_TRUE(r && !error_code(r));
  auto n = c.wait_notification("notifications/message");
  ASSERT_TRUE(n) << "no log message";
  const auto text = json::serialize(*n);
  EXPECT_FALSE(contains(text, ghp)) << text;
  EXPECT_TRUE(contains(text, "[redacted: github-token]")) << text;
}

}  // namespace
}  // namespace mcpmux::test
