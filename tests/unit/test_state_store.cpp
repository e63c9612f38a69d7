// Unit tests of core/state_store: the audit log's table — private file, batches, queries,
// retention, and a database that survives being reopened — pins and trust, and a store in memory.
#include "core/state_store.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;

struct temp_db {
  std::string dir;
  temp_db() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mcpmux-store-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
  }
  ~temp_db() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string path() const { return dir + "/state/state.db"; }
};

audit_entry entry(std::int64_t t, std::string server, std::string name, std::string outcome) {
  audit_entry e;
  e.time_ms = t;
  e.kind = "tools/call";
  e.client = "socket pid 1 /usr/bin/node";
  e.server = std::move(server);
  e.name = std::move(name);
  e.duration_us = 120;
  e.outcome = std::move(outcome);
  e.request_bytes = 80;
  e.response_bytes = 200;
  return e;
}

std::vector<std::string> names(const std::vector<audit_entry>& v) {
  std::vector<std::string> out;
  for (const auto& e : v) out.push_back(e.name);
  return out;
}

TEST(StateStore, KeepsTheAuditLogPrivatelyAndAcrossReopens) {
  temp_db t;
  std::string error;
  auto store = state_store::open(t.path(), error);
  ASSERT_TRUE(store) << error;
  struct stat st {};
  ASSERT_EQ(::stat(t.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((t.dir + "/state").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  EXPECT_EQ(store->append({entry(1000, "gh", "gh__a", "ok"), entry(2000, "fs", "fs__b", "error"),
                           entry(3000, "gh", "gh__c", "tool_error")}),
            "");
  EXPECT_EQ(store->append({}), "");
  EXPECT_EQ(store->audit_rows(), 3);
  EXPECT_THAT(names(store->history({})), ElementsAre("gh__a", "fs__b", "gh__c"));  // oldest first
  EXPECT_THAT(names(store->history({.server = "gh"})), ElementsAre("gh__a", "gh__c"));
  EXPECT_THAT(names(store->history({.name = "fs__b"})), ElementsAre("fs__b"));
  EXPECT_THAT(names(store->history({.since_ms = 2000})), ElementsAre("fs__b", "gh__c"));
  EXPECT_THAT(names(store->history({.limit = 2})), ElementsAre("fs__b", "gh__c"));  // the newest
  const auto all = store->history({});
  EXPECT_EQ(all[2].outcome, "tool_error");
  EXPECT_EQ(all[2].client, "socket pid 1 /usr/bin/node");
  EXPECT_EQ(all[2].duration_us, 120);
  EXPECT_EQ(all[2].response_bytes, 200);

  store.reset();
  store = state_store::open(t.path(), error);
  ASSERT_TRUE(store) << error;
  EXPECT_EQ(store->audit_rows(), 3);
}

TEST(StateStore, RetentionDropsTheOldestByAgeAndCount) {
  temp_db t;
  std::string error;
  auto store = state_store::open(t.path(), error);
  ASSERT_TRUE(store) << error;
  const std::int64_t day = 86400000, now = 100 * day;
  std::vector<audit_entry> batch;
  for (int i = 0; i < 10; ++i) batch.push_back(entry(now - (40 - i) * day, "s", "old", "ok"));
  for (int i = 0; i < 2000; ++i) batch.push_back(entry(now - 1000 + i, "s", "new", "ok"));
  ASSERT_EQ(store->append(batch), "");
  EXPECT_EQ(store->trim({.days = 30, .max_rows = 1500}, now), 10 + 500);
  EXPECT_EQ(store->audit_rows(), 1500);
  EXPECT_EQ(store->history({.limit = 1}).front().time_ms, now + 999);  // the newest stay
}

TEST(StateStore, KeepsPinsAndTrustPerServerAndConfiguration) {
  temp_db t;
  std::string error;
  auto store = state_store::open(t.path(), error);
  ASSERT_TRUE(store) << error;
  EXPECT_FALSE(store->trusted("fs", "h1"));
  ASSERT_EQ(store->put_pins({{"fs", "tools", "read", "{\"description\":\"a\"}"},
                             {"fs", "prompts", "read", "{}"},
                             {"web", "tools", "get", "{}"}}),
            "");
  ASSERT_EQ(store->set_trusted("fs", "h1", 1000), "");
  // A pin is replaced by name; the server's pins are its own.
  ASSERT_EQ(store->put_pins({{"fs", "tools", "read", "{\"description\":\"b\"}"}}), "");
  store.reset();
  store = state_store::open(t.path(), error);
  ASSERT_TRUE(store) << error;
  const auto pins = store->pins("fs");
  ASSERT_EQ(pins.size(), 2u);
  for (const auto& p : pins)
    if (p.kind == "tools") EXPECT_EQ(p.definition, "{\"description\":\"b\"}");
  EXPECT_TRUE(store->trusted("fs", "h1"));
  EXPECT_FALSE(store->trusted("fs", "h2"));  // another configuration of it is not
  EXPECT_FALSE(store->trusted("web", "h1"));
  ASSERT_EQ(store->set_trusted("fs", "h2", 2000), "");
  EXPECT_TRUE(store->trusted("fs", "h2"));
  EXPECT_FALSE(store->trusted("fs", "h1"));
}

TEST(StateStore, InMemoryWhenAsked) {
  std::string error;
  auto store = state_store::open(":memory:", error);
  ASSERT_TRUE(store) << error;
  ASSERT_EQ(store->put_cached_tools({"s", "h", "{}"}), "");
  EXPECT_EQ(store->cached_tools().size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(":memory:"));
}

TEST(StateStore, AnUnusablePathIsAnError) {
  std::string error;
  EXPECT_FALSE(state_store::open("/proc/mcpmux-no/state.db", error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace mcpmux
