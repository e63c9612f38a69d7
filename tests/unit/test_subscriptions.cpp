// Unit tests of core/subscriptions: one upstream subscription per (server, URI), however many
// sessions subscribed; the first asks the server, the others wait for its answer or join.
#include "core/subscriptions.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using next = subscription_table::next;

struct answers {
  std::vector<std::pair<std::uint64_t, int>> got;
  subscription_table::done_fn for_session(std::uint64_t s) {
    return [this, s](int code, std::string) { got.emplace_back(s, code); };
  }
};

const subscription_table::key k{"srv", "file:///a"};
const auto everyone_alive = [](std::uint64_t) { return true; };

TEST(Subscriptions, TheFirstAsksTheServerAndLaterOnesWaitThenJoin) {
  subscription_table t;
  answers a;
  EXPECT_EQ(t.subscribe(k, 1, a.for_session(1)), next::ask_server);
  EXPECT_EQ(t.subscribe(k, 2, a.for_session(2)), next::wait);
  EXPECT_THAT(a.got, IsEmpty());
  t.answered(k, 0, {}, everyone_alive);
  EXPECT_THAT(
      a.got, ElementsAre(std::pair<std::uint64_t, int>{1, 0}, std::pair<std::uint64_t, int>{2, 0}));
  EXPECT_EQ(t.subscribe(k, 3, a.for_session(3)), next::done);  // joins at once
  EXPECT_THAT(t.subscribers(k), ElementsAre(1, 2, 3));
  EXPECT_THAT(t.uris_of("srv"), ElementsAre("file:///a"));
}

TEST(Subscriptions, ARefusalReachesEveryWaiterAndSubscribesNobody) {
  subscription_table t;
  answers a;
  t.subscribe(k, 1, a.for_session(1));
  t.subscribe(k, 2, a.for_session(2));
  t.answered(k, -32601, "Method not found", everyone_alive);
  EXPECT_THAT(a.got, ElementsAre(std::pair<std::uint64_t, int>{1, -32601},
                                 std::pair<std::uint64_t, int>{2, -32601}));
  EXPECT_THAT(t.subscribers(k), IsEmpty());
  EXPECT_EQ(t.subscribe(k, 3, a.for_session(3)), next::ask_server);  // asked again
}

TEST(Subscriptions, ASessionGoneMeanwhileIsNotSubscribed) {
  subscription_table t;
  answers a;
  t.subscribe(k, 1, a.for_session(1));
  t.subscribe(k, 2, a.for_session(2));
  t.answered(k, 0, {}, [](std::uint64_t s) { return s != 1; });
  EXPECT_THAT(t.subscribers(k), ElementsAre(2));
}

TEST(Subscriptions, OnlyTheLastUnsubscribeTellsTheServer) {
  subscription_table t;
  answers a;
  t.subscribe(k, 1, a.for_session(1));
  t.answered(k, 0, {}, everyone_alive);
  t.subscribe(k, 2, a.for_session(2));
  EXPECT_THAT(t.of_session(2), ElementsAre(k));
  EXPECT_FALSE(t.unsubscribe(k, 1));
  EXPECT_FALSE(t.unsubscribe(k, 1));  // twice: nothing
  EXPECT_TRUE(t.unsubscribe(k, 2));
  EXPECT_THAT(t.uris_of("srv"), IsEmpty());
  EXPECT_FALSE(t.unsubscribe(k, 2));
}

}  // namespace
}  // namespace mcpmux
