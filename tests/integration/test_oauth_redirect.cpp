// The authorization redirect's loopback listener (transports/oauth_redirect), driven by the
// one-shot HTTP client as a browser would.
#include "transports/oauth_redirect.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <optional>

#include "transports/http_fetch.hpp"

namespace mcpmux {
namespace {

using ::testing::HasSubstr;

struct browser {
  boost::asio::io_context& io;
  fetch_response get(const std::string& url,
                     std::vector<std::pair<std::string, std::string>> h = {}) {
    std::optional<fetch_response> got;
    fetch_request req;
    req.url = url;
    req.accept = "text/html";
    req.headers = std::move(h);
    http_fetch(io, req, [&](fetch_response r) { got = std::move(r); });
    while (!got) io.run_one();
    return *got;
  }
};

TEST(OauthRedirect, TheRedirectIsReportedAndAnsweredWithAPage) {
  boost::asio::io_context io;
  std::vector<std::string> queries;
  std::string error;
  auto l = start_redirect_listener(
      io, "/callback",
      [&](std::string_view q) {
        queries.emplace_back(q);
        return std::string("Logged in <to> server: you may close this window.");
      },
      &error);
  ASSERT_TRUE(l) << error;
  EXPECT_THAT(l->redirect_uri(), ::testing::MatchesRegex("http://127\\.0\\.0\\.1:[0-9]+/callback"));
  browser b{io};
  auto r = b.get(l->redirect_uri() + "?code=abc&state=xyz");
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.content_type, "text/html");
  EXPECT_THAT(r.body, HasSubstr("Logged in &lt;to&gt; server"));  // escaped
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_EQ(queries[0], "code=abc&state=xyz");

  // Only that path, only a Host naming the listener.
  const auto base = l->redirect_uri().substr(0, l->redirect_uri().rfind('/'));
  EXPECT_EQ(b.get(base + "/other?code=x").status, 404u);
  EXPECT_EQ(b.get(l->redirect_uri() + "?code=x", {{"Host", "evil.example"}}).status, 400u);
  EXPECT_EQ(queries.size(), 1u);

  l->close();
  r = b.get(l->redirect_uri() + "?code=late");
  EXPECT_THAT(r.error, HasSubstr("cannot connect"));
  EXPECT_EQ(queries.size(), 1u);
}

}  // namespace
}  // namespace mcpmux
