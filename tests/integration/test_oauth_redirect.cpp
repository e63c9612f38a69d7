// The authorization redirect's loopback listener (transports/oauth_redirect), driven by the
// one-shot HTTP client as a browser would.
#include "transports/oauth_redirect.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <optional>
#include <thread>

#include "tests/fixtures/raw_http_client.hpp"
#include "transports/http_fetch.hpp"

namespace mcpmux {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

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
  auto started = start_redirect_listener(io, "/callback", [&](std::string_view q) {
    queries.emplace_back(q);
    return std::string("Logged in <to> server: you may close this window.");
  });
  ASSERT_TRUE(started) << started.error().message;
  const auto l = *started;
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

// A request with a second Host (or Origin, Authorization, Mcp-Session-Id) is refused with 400:
// the Host check reads the first one only.
TEST(OauthRedirect, ARepeatedHostOrOriginIsRefused) {
  boost::asio::io_context io;
  std::atomic<int> redirects{0};
  auto started = start_redirect_listener(io, "/callback", [&](std::string_view) {
    ++redirects;
    return std::string("ok");
  });
  ASSERT_TRUE(started) << started.error().message;
  const auto l = *started;
  std::thread runner([&] { io.run(); });
  const auto& uri = l->redirect_uri();
  const auto port = static_cast<unsigned short>(
      std::stoi(uri.substr(uri.rfind(':') + 1, uri.rfind('/') - uri.rfind(':') - 1)));
  auto status = [&](const test::header_list& h) {
    test::http_conn c(port);
    c.send_all(test::request_text("GET", "/callback?code=x&state=y", port, h, {}));
    auto r = c.read_head(5s);
    return r ? r->status : 0;
  };
  const std::string own = "127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(status({{"Host", own}, {"Host", "evil.example"}}), 400);
  EXPECT_EQ(status({{"Origin", "http://" + own}, {"Origin", "http://evil.example"}}), 400);
  EXPECT_EQ(redirects, 0);
  EXPECT_EQ(status({{"Host", own}}), 200);
  EXPECT_EQ(redirects, 1);
  io.stop();
  runner.join();
  l->close();
}

}  // namespace
}  // namespace mcpmux
