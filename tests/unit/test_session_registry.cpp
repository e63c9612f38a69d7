// Unit tests of core/session_registry: what the sessions ask of the servers together — the most
// verbose logging level, one subscription per resource, each server's listen filter following
// the watched tasks — what a leaving session drops, and who hears a server's notifications.
#include "core/session_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// The servers as the registry sees them: what it asked, and subscribe answers given by hand.
struct fake_servers : registry_servers {
  std::vector<std::string> levels;
  std::map<std::string, std::set<std::string>> listening;
  std::vector<std::pair<std::string, std::string>> subscribed, unsubscribed;
  std::vector<subscription_table::done_fn> pending;

  void set_log_level(const std::string& level) override { levels.push_back(level); }
  void listen_tasks(const std::string& server, std::set<std::string> ids) override {
    listening[server] = std::move(ids);
  }
  void subscribe_resource(const std::string& server, const std::string& uri,
                          subscription_table::done_fn done) override {
    subscribed.emplace_back(server, uri);
    pending.push_back(std::move(done));
  }
  void unsubscribe_resource(const std::string& server, const std::string& uri) override {
    unsubscribed.emplace_back(server, uri);
  }
};

struct session_registry_test : ::testing::Test {
  fake_servers servers;
  session_registry reg{servers};
};

TEST_F(session_registry_test, ServersGetTheMostVerboseLevelAnyClientWants) {
  reg.set_log_level(1, "warning");
  reg.set_log_level(2, "debug");
  reg.set_log_level(3, "error");
  EXPECT_THAT(servers.levels, ElementsAre("warning", "debug", "debug"));
  EXPECT_THAT(reg.log_recipients(log_severity("info")), ElementsAre(2));
  EXPECT_THAT(reg.log_recipients(log_severity("error")), UnorderedElementsAre(1, 2, 3));
  reg.set_log_level(2, "");  // logging off for 2
  EXPECT_EQ(servers.levels.back(), "warning");
  reg.detach(1);
  EXPECT_EQ(servers.levels.back(), "error");
  reg.detach(3);
  EXPECT_EQ(servers.levels.back(), "");
}

TEST_F(session_registry_test, OneServerSubscriptionPerResource) {
  std::vector<std::pair<std::uint64_t, int>> answers;
  const subscription_table::key k{"files", "file:///a"};
  auto done = [&](std::uint64_t id) {
    return [&answers, id](int code, std::string) { answers.emplace_back(id, code); };
  };
  reg.subscribe(1, k, done(1));
  reg.subscribe(2, k, done(2));  // waits for the same answer
  ASSERT_EQ(servers.subscribed.size(), 1u);
  EXPECT_TRUE(answers.empty());
  servers.pending[0](0, {});
  EXPECT_THAT(answers, UnorderedElementsAre(std::pair<std::uint64_t, int>{1, 0},
                                            std::pair<std::uint64_t, int>{2, 0}));
  EXPECT_THAT(reg.subscribed_uris("files"), IsEmpty());  // neither session is attached
}

TEST_F(session_registry_test, ARefusedSubscribeReachesEveryWaiter) {
  std::vector<int> codes;
  const subscription_table::key k{"files", "file:///b"};
  reg.subscribe(1, k, [&](int code, std::string) { codes.push_back(code); });
  reg.subscribe(2, k, [&](int code, std::string) { codes.push_back(code); });
  servers.pending[0](-32602, "no such resource");
  EXPECT_THAT(codes, ElementsAre(-32602, -32602));
  EXPECT_THAT(servers.unsubscribed, IsEmpty());
}

TEST_F(session_registry_test, ListenFiltersFollowTheWatchedTasks) {
  reg.watch_tasks(1, {{"build", "t1"}, {"build", "t2"}, {"test", "t9"}});
  reg.watch_tasks(2, {{"build", "t2"}});
  EXPECT_THAT(servers.listening["build"], ElementsAre("t1", "t2"));
  EXPECT_THAT(servers.listening["test"], ElementsAre("t9"));
  EXPECT_THAT(reg.task_watchers({"build", "t2"}), UnorderedElementsAre(1, 2));
  reg.unwatch_tasks(2, {{"build", "t2"}});
  EXPECT_THAT(reg.task_watchers({"build", "t2"}), ElementsAre(1));
  reg.detach(1);  // a leaving session's tasks are unwatched
  EXPECT_THAT(servers.listening["build"], IsEmpty());
  EXPECT_THAT(servers.listening["test"], IsEmpty());
  EXPECT_THAT(reg.task_watchers({"build", "t1"}), IsEmpty());
}

TEST_F(session_registry_test, NotificationsForNoSessionAreDroppedAndOthersRefused) {
  catalogue cat;
  reg.set_log_level(7, "debug");  // a level, but no session 7 attached: nothing to send to
  message_parser parser;
  const auto log =
      (parser.parse(
           R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})"))
          .value();
  const auto other =
      (parser.parse(
           R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}})"))
          .value();
  EXPECT_TRUE(reg.deliver("files", log, cat));
  EXPECT_FALSE(reg.deliver("files", other, cat));  // not the sessions' to hear
  EXPECT_EQ(reg.clients(), 0u);
}

struct recording_listener : catalogue_listener {
  std::string profile_;
  std::vector<collection> told;
  int removed = 0;
  void on_list_changed(collection c) override { told.push_back(c); }
  const std::string& profile() const override { return profile_; }
  void profile_removed() override {
    ++removed;
    profile_.clear();
  }
};

TEST_F(session_registry_test, ListenersHearTheirProfilesChangesAndItsRemoval) {
  recording_listener all, ops, gone;
  ops.profile_ = "ops";
  gone.profile_ = "old";
  for (auto* l : {&all, &ops, &gone}) reg.add_listener(l);
  std::array<bool, collection_count> changed{};
  changed[static_cast<std::size_t>(collection::tools)] = true;
  reg.notify_lists("ops", changed);
  EXPECT_TRUE(all.told.empty());
  EXPECT_THAT(ops.told, ElementsAre(collection::tools));
  reg.drop_profiles([](const std::string& p) { return p == "ops"; });
  EXPECT_EQ(gone.removed, 1);
  EXPECT_EQ(gone.told.size(), collection_count);  // every list anew
  EXPECT_EQ(ops.removed, 0);
  reg.remove_listener(&ops);
  reg.notify_lists("ops", changed);
  EXPECT_EQ(ops.told.size(), 1u);
}

}  // namespace
}  // namespace mcpmux
