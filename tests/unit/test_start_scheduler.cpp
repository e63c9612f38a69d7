// Unit tests of core/start_scheduler: servers started one at a time in name order, the startup
// gate (opened by every server settling, or by startup_wait), private upstreams per session, and
// stop. Upstreams get a channel factory that opens nothing, so a start fails at once (backoff).
#include "core/start_scheduler.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "core/catalogue.hpp"
#include "core/upstream.hpp"

namespace mcpmux {
namespace {

using ::testing::ElementsAre;

struct quiet_observer : upstream_observer {
  void on_upstream_changed(const std::string&) override {}
  void on_upstream_notification(const std::string&, const message&) override {}
  void on_upstream_log(const std::string&, const std::string&) override {}
  void on_upstream_ready(const std::string&, upstream&) override {}
};

struct start_scheduler_test : ::testing::Test {
  boost::asio::io_context io;
  daemon_config d;
  quiet_observer observer;
  std::vector<std::string> opened;  ///< the servers a connection was asked for, in order
  upstream_map upstreams;
  start_scheduler starts{io, upstreams};

  channel_factory refuse() {
    return [this](const channel_request& r) {
      opened.push_back(r.server.name);
      return result<opened_channel>(failure("no channels in this test"));
    };
  }
  std::shared_ptr<upstream> add(const std::string& name) {
    server_config s;
    s.name = name;
    s.command = "unused";
    auto up = std::make_shared<upstream>(io, s, d, observer, refuse());
    upstreams.emplace(name, up);
    return up;
  }
};

TEST_F(start_scheduler_test, StartsOneServerATurnInNameOrder) {
  add("zeta");
  add("alpha");
  starts.start(std::chrono::milliseconds(10000));
  EXPECT_TRUE(opened.empty());  // nothing starts before the loop is idle
  EXPECT_TRUE(starts.starts_pending());
  EXPECT_FALSE(starts.startup_over());
  EXPECT_TRUE(starts.start_next());
  EXPECT_THAT(opened, ElementsAre("alpha"));
  EXPECT_FALSE(starts.start_next());
  EXPECT_THAT(opened, ElementsAre("alpha", "zeta"));
  EXPECT_FALSE(starts.starts_pending());
  EXPECT_TRUE(starts.startup_over());  // both failed, backing off: none is connecting
}

TEST_F(start_scheduler_test, TheGateOpensWhenEveryServerHasSettled) {
  add("alpha");
  starts.start(std::chrono::milliseconds(10000));
  int released = 0;
  starts.when_settled([&] { ++released; });
  EXPECT_FALSE(starts.settled());  // its start is still to come
  starts.check_settled();
  EXPECT_EQ(released, 0);
  starts.start_next();  // fails: settled (backing off)
  starts.check_settled();
  EXPECT_EQ(released, 1);
  EXPECT_TRUE(starts.gate_open());
  starts.when_settled([&] { ++released; });  // at once from now on
  EXPECT_EQ(released, 2);
}

TEST_F(start_scheduler_test, TheGateOpensAfterStartupWaitAtTheLatest) {
  add("alpha");
  starts.start(std::chrono::milliseconds(5));
  int released = 0;
  starts.when_settled([&] { ++released; });
  io.run_one();  // the gate's timer
  EXPECT_EQ(released, 1);
  EXPECT_FALSE(starts.settled());  // the server never started
}

TEST_F(start_scheduler_test, EachSessionGetsItsOwnPrivateUpstream) {
  auto shared = add("alpha");
  int made = 0;
  auto make = [&] {
    ++made;
    server_config s = shared->config();
    return std::make_shared<upstream>(io, s, d, observer, refuse());
  };
  auto a = starts.private_upstream(*shared, 1, make);
  EXPECT_EQ(starts.private_upstream(*shared, 1, make), a);  // made once per session
  auto b = starts.private_upstream(*shared, 2, make);
  EXPECT_NE(a, b);
  EXPECT_EQ(made, 2);
  EXPECT_EQ(opened.size(), 2u);  // each started on first use
  starts.drop_session(1);
  EXPECT_EQ(a->state(), upstream_state::stopped);
  EXPECT_NE(b->state(), upstream_state::stopped);
  starts.stop();
  EXPECT_EQ(b->state(), upstream_state::stopped);
}

TEST_F(start_scheduler_test, AfterStopNothingMoreStarts) {
  add("alpha");
  add("beta");
  starts.start(std::chrono::milliseconds(10000));
  starts.start_next();
  starts.stop();
  EXPECT_FALSE(starts.starts_pending());
  EXPECT_FALSE(starts.start_next());
  EXPECT_THAT(opened, ElementsAre("alpha"));
}

TEST_F(start_scheduler_test, WithoutAStoreEveryCacheEntryIsEmpty) {
  config cfg;
  cfg.servers.resize(2);
  catalogue cat;
  const auto entries = starts.read_tool_cache(nullptr, cfg, cat);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_FALSE(entries[0].tools);
  EXPECT_FALSE(starts.cached_reads_pending());
  EXPECT_FALSE(starts.next_cached_read());
}

}  // namespace
}  // namespace mcpmux
