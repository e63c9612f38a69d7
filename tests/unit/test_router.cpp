// Unit tests of core/router: progress tokens made unique per upstream and routed back, and the
// server's requests to clients remembered per connection for their cancellation.
#include "core/router.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace mcpmux {
namespace {

TEST(ProgressRouter, TwoClientsWithTheSameTokenGetDifferentOnesAndTheirOwnBack) {
  progress_router<int> r;
  auto a = json::parse(R"({"name":"t","_meta":{"progressToken":"tok"}})");
  auto b = json::parse(R"({"name":"t","_meta":{"progressToken":"tok"}})");
  const auto ta = r.rewrite(a, 1, 100);
  const auto tb = r.rewrite(b, 2, 200);
  ASSERT_TRUE(ta && tb);
  EXPECT_NE(*ta, *tb);
  EXPECT_EQ(a.at("_meta").at("progressToken").as_int64(), *ta);
  EXPECT_EQ(a.at("name").as_string(), "t");  // the rest is untouched
  const auto* back = r.find(json::value(*tb));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->owner, 2);
  EXPECT_EQ(back->client_token.as_string(), "tok");
  EXPECT_EQ(back->call, 200u);
  r.release(*tb);
  EXPECT_FALSE(r.find(json::value(*tb)));
  EXPECT_FALSE(r.find(json::value("tok")));  // never a client's own token
  EXPECT_EQ(r.size(), 1u);
}

TEST(ProgressRouter, ACallWithoutATokenIsLeftAlone) {
  progress_router<int> r;
  for (auto params : {json::parse(R"({"name":"t"})"), json::parse(R"({"_meta":{}})"),
                      json::parse(R"({"_meta":"x"})"), json::value(nullptr)}) {
    const auto before = json::serialize(params);
    EXPECT_FALSE(r.rewrite(params, 1, 1));
    EXPECT_EQ(json::serialize(params), before);
  }
  EXPECT_EQ(r.size(), 0u);
}

TEST(RequestRouter, ACancellationReachesTheClientAskedOnThatConnectionOnly) {
  request_router<int> r;
  r.remember(json::value("srv-1"), 7, 41, 1);
  r.remember(json::value(5), 8, 42, 1);
  auto e = r.take(json::value("srv-1"), 1);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->owner, 7);
  EXPECT_EQ(e->client_id, 41);
  EXPECT_FALSE(r.take(json::value("srv-1"), 1));  // once
  EXPECT_FALSE(r.take(json::value(5), 2));        // another connection's
  r.forget(json::value(5), 1);                    // answered
  EXPECT_FALSE(r.take(json::value(5), 1));
}

TEST(RequestRouter, RequestsOfAnOlderConnectionAreForgotten) {
  request_router<int> r;
  r.remember(json::value(1), 7, 41, 1);
  r.remember(json::value(2), 7, 43, 2);  // the server reconnected
  EXPECT_EQ(r.size(), 1u);
  EXPECT_FALSE(r.take(json::value(1), 1));
  EXPECT_TRUE(r.take(json::value(2), 2));
}

}  // namespace
}  // namespace mcpmux
