// Unit tests of core/reload_plan: old and new configuration in, what happens to each server out.
#include "core/reload_plan.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

server_config server(std::string name, std::string command = "run") {
  server_config s;
  s.name = std::move(name);
  s.command = std::move(command);
  return s;
}

TEST(ReloadPlan, SortsServersIntoAddedRemovedChangedAndUnchanged) {
  config old, next;
  old.servers = {server("keep"), server("change"), server("gone")};
  next.servers = {server("new"), server("change", "other"), server("keep")};
  const auto p = plan_reload(old, next, false);
  EXPECT_THAT(p.added, ElementsAre("new"));
  EXPECT_THAT(p.changed, ElementsAre("change"));
  EXPECT_THAT(p.unchanged, ElementsAre("keep"));
  EXPECT_THAT(p.removed, ElementsAre("gone"));
  EXPECT_THAT(p.restart_required, IsEmpty());
}

TEST(ReloadPlan, AnyChangedServerSettingRestartsIt) {
  config old, next;
  old.servers = {server("s")};
  next.servers = {server("s")};
  next.servers[0].env["K"] = "v";
  EXPECT_THAT(plan_reload(old, next, false).changed, ElementsAre("s"));
  next.servers = {server("s")};
  next.servers[0].enabled = false;
  EXPECT_THAT(plan_reload(old, next, false).changed, ElementsAre("s"));
}

TEST(ReloadPlan, OnlyNewFiltersKeepTheServerRunning) {
  config old, next;
  old.servers = {server("s"), server("t")};
  next.servers = {server("s"), server("t", "other")};
  next.servers[0].tools_shown = {"*", "!delete_*"};
  next.servers[1].prompts_shown = {"x"};  // with another change: restarted all the same
  auto p = plan_reload(old, next, false);
  EXPECT_THAT(p.refiltered, ElementsAre("s"));
  EXPECT_THAT(p.changed, ElementsAre("t"));
  EXPECT_TRUE(p.unchanged.empty());
}

TEST(ReloadPlan, SettingsBoundAtStartNeedARestart) {
  config old, next;
  next.daemon.http = "127.0.0.1:9000";
  next.daemon.http_token_file = "/t";
  auto p = plan_reload(old, next, true);
  EXPECT_THAT(p.restart_required,
              ElementsAre("daemon.socket", "daemon.http", "daemon.http_token_file"));
  next = old;
  next.daemon.timeout = std::chrono::milliseconds(5);  // applies at once
  EXPECT_THAT(plan_reload(old, next, false).restart_required, IsEmpty());
}

TEST(ReloadPlan, LimitsReadAtStartAreReportedAsNeedingARestart) {
  config old, next;
  next.daemon.max_message_bytes = old.daemon.max_message_bytes * 2;
  next.daemon.max_client_queue_bytes = old.daemon.max_client_queue_bytes * 2;
  next.daemon.http_max_requests_per_session = 1;
  next.daemon.http_max_sessions = 2;
  next.daemon.http_max_connections = 3;
  EXPECT_THAT(plan_reload(old, next, false).restart_required,
              ElementsAre("daemon.max_message_bytes", "daemon.max_client_queue_bytes",
                          "daemon.http_max_requests_per_session", "daemon.http_max_sessions",
                          "daemon.http_max_connections"));
}

}  // namespace
}  // namespace mcpmux
