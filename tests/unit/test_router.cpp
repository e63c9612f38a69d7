// Unit tests of core/router: progress tokens made unique per upstream and routed back, and the
// server's requests to clients remembered per connection for their cancellation.
#include "core/router.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace mcpmux {
namespace {

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
