// Unit tests of core/catalogue_service: the combined lists and profile views built from the
// upstreams' (cached) lists, rebuilds skipped when nothing changed, the route lookups and pages
// as a profile sees them, and trust's answers without a state store. The upstreams are never
// started: each serves the tools of its cache entry.
#include "core/catalogue_service.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include "core/tool_cache.hpp"
#include "core/upstream.hpp"

namespace mcpmux {
namespace {

struct quiet_observer : upstream_observer {
  void on_upstream_changed(const std::string&) override {}
  void on_upstream_notification(const std::string&, const message&) override {}
  void on_upstream_log(const std::string&, const std::string&) override {}
  void on_upstream_ready(const std::string&, upstream&) override {}
};

json::object tool(std::string name) {
  return {{"name", std::move(name)}, {"inputSchema", json::object{{"type", "object"}}}};
}

struct catalogue_service_test : ::testing::Test {
  boost::asio::io_context io;
  quiet_observer observer;
  config cfg;
  upstream_map upstreams;

  void add(const std::string& name, std::vector<std::string> tools) {
    server_config s;
    s.name = name;
    s.command = "unused";
    cache_entry cached;
    cached.tools.emplace();
    for (auto& t : tools) cached.tools->push_back(tool(std::move(t)));
    upstreams.emplace(name, std::make_shared<upstream>(
                                io, s, cfg.daemon, observer,
                                [](const channel_request&) {
                                  return result<opened_channel>(failure("no channels here"));
                                },
                                &cached));
  }
  void profile(std::string name, std::vector<std::string> servers) {
    profile_config p;
    p.name = std::move(name);
    p.servers = std::move(servers);
    p.tools = {"*"};
    cfg.profiles.push_back(std::move(p));
  }
};

TEST_F(catalogue_service_test, BuildsTheListsOnceUntilSomethingChanges) {
  add("files", {"read", "write"});
  add("git", {"log"});
  catalogue_service cat(cfg, upstreams, nullptr);
  auto first = cat.rebuild(true);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->lists[static_cast<std::size_t>(collection::tools)]);
  const auto* r = cat.find(collection::tools, "files__read");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->server, "files");
  EXPECT_EQ(r->original, "read");
  EXPECT_FALSE(cat.find(collection::tools, "read"));
  EXPECT_FALSE(cat.rebuild(true));  // nothing changed: nothing built
  cat.invalidate();
  auto again = cat.rebuild(true);
  ASSERT_TRUE(again);  // built, and the same lists
  EXPECT_FALSE(again->lists[static_cast<std::size_t>(collection::tools)]);
}

TEST_F(catalogue_service_test, AProfileSeesOnlyItsServers) {
  add("files", {"read"});
  add("git", {"log"});
  profile("ops", {"git"});
  catalogue_service cat(cfg, upstreams, nullptr);
  auto built = cat.rebuild(true);
  ASSERT_TRUE(built);
  EXPECT_TRUE(built->profiles.count("ops"));
  EXPECT_TRUE(cat.find(collection::tools, "git__log", "ops"));
  EXPECT_FALSE(cat.find(collection::tools, "files__read", "ops"));
  EXPECT_TRUE(cat.find(collection::tools, "files__read"));  // everything, without a profile
  auto page = cat.page(collection::tools, "", "ops");
  ASSERT_TRUE(page.ok());
  auto gone = cat.page(collection::tools, "", "nobody");
  ASSERT_TRUE(!gone.ok());
  EXPECT_EQ(gone.error().message, "the profile is gone");
}

TEST_F(catalogue_service_test, AnUnknownRequestedProfileNamesTheConfiguredOnes) {
  profile("ops", {});
  catalogue_service cat(cfg, upstreams, nullptr);
  client_identity who;
  who.requested_profile = "dev";
  auto out = cat.profile_for(who);
  ASSERT_TRUE(!out.ok());
  EXPECT_EQ(out.error().message, "unknown profile \"dev\" (configured: ops)");
  who.requested_profile = "ops";
  EXPECT_EQ(cat.profile_for(who).value(), "ops");
}

TEST_F(catalogue_service_test, ConfiguringProfilesAgainRebuildsTheirViews) {
  add("git", {"log"});
  catalogue_service cat(cfg, upstreams, nullptr);
  ASSERT_TRUE(cat.rebuild(true));
  profile("ops", {"git"});
  EXPECT_THAT(cat.configure_profiles(cfg.profiles), ::testing::ElementsAre("ops"));
  auto built = cat.rebuild(true);  // built although no list changed
  ASSERT_TRUE(built);
  EXPECT_TRUE(cat.find(collection::tools, "git__log", "ops"));
}

TEST_F(catalogue_service_test, RoutesOfWhatNoServerOffersAreNone) {
  add("files", {"read"});
  catalogue_service cat(cfg, upstreams, nullptr);
  cat.rebuild(true);
  EXPECT_FALSE(cat.route_resource("file:///a"));  // no server offers resources
  EXPECT_FALSE(cat.route_completion(json::object{{"type", "ref/prompt"}, {"name", "p"}}));
  EXPECT_FALSE(cat.route_completion(json::object{{"type", "ref/other"}}));
  EXPECT_FALSE(cat.tool_param_headers("files__missing"));
}

TEST_F(catalogue_service_test, WithoutAStoreNothingIsHeldOrApproved) {
  add("files", {"read"});
  catalogue_service cat(cfg, upstreams, nullptr);
  cat.rebuild(true);
  EXPECT_TRUE(cat.quarantined("files").empty());
  EXPECT_FALSE(cat.trusted("files"));
  EXPECT_FALSE(cat.changed_since_trust("files", collection::tools, "read"));
  auto unknown = cat.approve("nobody", {"x"}, false, {});
  ASSERT_TRUE(!unknown.ok());
  EXPECT_EQ(unknown.error().message, "no server named \"nobody\"");
  auto no_store = cat.approve("files", {"read"}, false, {});
  ASSERT_TRUE(!no_store.ok());
  EXPECT_EQ(no_store.error().message, "no state store to keep pins");
}

}  // namespace
}  // namespace mcpmux
