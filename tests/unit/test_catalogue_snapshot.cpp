// Unit tests of core/catalogue_snapshot and the state store's side of it: a tools list kept and
// put back is the list it was (items, routes, pages); a row that does not decode or fit changes
// nothing; the key follows what the list depends on; and a snapshot is found only at the tool
// cache's generation it was taken at.
#include "core/catalogue_snapshot.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "core/tool_cache.hpp"

namespace mcpmux {
namespace {

constexpr auto tools_i = static_cast<std::size_t>(collection::tools);

// A catalogue of two servers' tools, built as a start builds it.
struct built {
  std::vector<json::object> a, b;
  const std::vector<json::object> none;
  catalogue cat;
  explicit built(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      a.push_back({{"name", "tool_" + std::to_string(i)}, {"description", "a \"quoted\" one"}});
      b.push_back({{"name", "tool_" + std::to_string(i)}, {"inputSchema", {{"type", "object"}}}});
    }
    std::vector<catalogue_source> s(2);
    s[0].server = s[0].prefix = "a";
    s[1].server = s[1].prefix = "b";
    for (auto& src : s) src.lists.fill(&none);
    s[0].lists[tools_i] = &a;
    s[1].lists[tools_i] = &b;
    std::vector<std::string> warnings;
    cat.rebuild(s, {"__", 64}, warnings);
  }
  catalogue_snapshot_row row(const std::vector<snapshot_server>& cached) const {
    return {7, "key", std::string(cat.joined(collection::tools)),
            encode_catalogue_routes(cat, cached)};
  }
};

TEST(CatalogueSnapshot, AKeptListIsPutBackAsItWas) {
  built b(50);
  const std::vector<snapshot_server> cached{{"a", "modern"}, {"b", ""}};
  catalogue restored;
  auto servers = restore_catalogue(restored, b.row(cached));
  ASSERT_TRUE(servers);
  EXPECT_EQ(*servers, cached);
  EXPECT_EQ(restored.joined(collection::tools), b.cat.joined(collection::tools));
  EXPECT_EQ(restored.routes(collection::tools), b.cat.routes(collection::tools));
  EXPECT_EQ(restored.size(collection::tools), 100u);
  EXPECT_EQ(restored.item(collection::tools, "b__tool_7"),
            b.cat.item(collection::tools, "b__tool_7"));
  ASSERT_NE(restored.find(collection::tools, "a__tool_3"), nullptr);
  EXPECT_EQ(restored.find(collection::tools, "a__tool_3")->original, "tool_3");
  // Pages cut where the catalogue's own pages cut.
  auto mine = (restored.page(collection::tools, "", 30)).value();
  auto theirs = (b.cat.page(collection::tools, "", 30)).value();
  EXPECT_EQ(std::string_view(mine.items_json), std::string_view(theirs.items_json));
  auto second = (restored.page(collection::tools, *mine.next_cursor, 30)).value();
  auto their_second = (b.cat.page(collection::tools, *theirs.next_cursor, 30)).value();
  EXPECT_EQ(std::string_view(second.items_json), std::string_view(their_second.items_json));
}

TEST(CatalogueSnapshot, AnEmptyListRoundTrips) {
  built b(0);
  catalogue restored;
  auto servers = restore_catalogue(restored, b.row({}));
  ASSERT_TRUE(servers);
  EXPECT_TRUE(servers->empty());
  EXPECT_EQ(restored.joined(collection::tools), "[]");
}

TEST(CatalogueSnapshot, ARowThatDoesNotFitChangesNothing) {
  built b(5);
  const auto good = b.row({{"a", ""}});
  std::vector<std::pair<std::string, catalogue_snapshot_row>> bad;
  auto with = [&](std::string what, auto change) {
    auto r = good;
    change(r);
    bad.emplace_back(std::move(what), std::move(r));
  };
  with("routes cut short", [](auto& r) { r.routes.resize(r.routes.size() - 3); });
  with("a byte more", [](auto& r) { r.routes += 'x'; });
  with("another format", [](auto& r) { r.routes[0] = 'X'; });
  with("no routes", [](auto& r) { r.routes.clear(); });
  with("a huge count", [](auto& r) {
    auto at = r.routes.find('\n') + 1;  // the servers' count follows the magic line
    r.routes.replace(at, 4, "\xff\xff\xff\x7f");
  });
  with("list text changed", [](auto& r) { r.tools.insert(1, " "); });
  with("list text cut", [](auto& r) { r.tools.resize(r.tools.size() / 2); });
  with("not an array", [](auto& r) { r.tools.front() = '{'; });
  catalogue cat;
  const auto before = std::string(cat.joined(collection::tools));
  for (auto& [what, row] : bad) {
    EXPECT_FALSE(restore_catalogue(cat, row)) << what;
    EXPECT_EQ(cat.joined(collection::tools), before) << what;
    EXPECT_TRUE(cat.routes(collection::tools).empty()) << what;
  }
}

TEST(CatalogueSnapshot, RestoreChecksThePartsFitTogether) {
  catalogue cat;
  const catalogue::routes_t two{{"a__x", {"a", "x"}}, {"a__y", {"a", "y"}}};
  const std::string text = R"([{"name":"a__x"},{"name":"a__y"}])";
  EXPECT_TRUE(cat.restore(collection::tools, text, {1, 17}, two));
  EXPECT_EQ(cat.item(collection::tools, "a__y"), R"({"name":"a__y"})");
  catalogue other;
  EXPECT_FALSE(other.restore(collection::tools, text, {1, 18}, two)) << "a begin off by one";
  EXPECT_FALSE(other.restore(collection::tools, text, {1}, two)) << "a route without an item";
  EXPECT_FALSE(other.restore(collection::tools, text, {1, 17}, {two[1], two[0]}))
      << "routes out of name order";
  EXPECT_FALSE(other.restore(collection::resources, text, {1, 17}, two))
      << "resources are not listed in route order";
  EXPECT_TRUE(other.routes(collection::tools).empty());
}

server_config server(std::string name) {
  server_config s;
  s.name = std::move(name);
  s.command = "srv";
  return s;
}

TEST(CatalogueSnapshot, TheKeyFollowsWhatTheListDependsOn) {
  config cfg;
  cfg.servers = {server("a"), server("b")};
  const auto key = catalogue_snapshot_key(cfg);
  EXPECT_EQ(catalogue_snapshot_key(cfg), key);
  auto changed = [&](auto change) {
    config c = cfg;
    change(c);
    return catalogue_snapshot_key(c) != key;
  };
  EXPECT_TRUE(changed([](config& c) { c.daemon.tool_separator = "_"; }));
  EXPECT_TRUE(changed([](config& c) { c.daemon.max_tool_name = 32; }));
  EXPECT_TRUE(changed([](config& c) { c.servers[0].prefix = "x"; }));
  EXPECT_TRUE(changed([](config& c) { c.servers[1].tools_shown = {"read*"}; }));
  EXPECT_TRUE(changed([](config& c) { c.servers[1].args = {"--more"}; }));
  EXPECT_TRUE(changed([](config& c) { c.servers[1].enabled = false; }));
  EXPECT_TRUE(changed([](config& c) { c.servers.push_back(server("c")); }));
  // What the tools list does not depend on leaves it.
  EXPECT_FALSE(changed([](config& c) { c.servers[0].prompts_shown = {"p"}; }));
  EXPECT_FALSE(changed([](config& c) { c.daemon.page_size = 3; }));
}

struct temp_store {
  std::string dir;
  std::unique_ptr<state_store> store;
  temp_store() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mcpmux-snap-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
    auto opened = state_store::open(dir + "/state.db");
    EXPECT_TRUE(opened) << opened.error().message;
    if (opened) store = std::move(*opened);
  }
  ~temp_store() {
    store.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

TEST(CatalogueSnapshot, ASnapshotIsFoundOnlyAtItsGenerationAndKey) {
  temp_store t;
  auto& s = *t.store;
  EXPECT_EQ(s.tool_cache_generation(), 0);
  EXPECT_FALSE(s.catalogue_snapshot("k"));
  EXPECT_FALSE(s.catalogue_snapshot_generation("k"));
  // Taken at generation 0 and found there, whole.
  const catalogue_snapshot_row row{0, "k", std::string(1 << 20, 'x'), std::string("\0r\0", 3)};
  ASSERT_TRUE(s.put_catalogue_snapshot(row));
  auto got = s.catalogue_snapshot("k");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->tools, row.tools);
  EXPECT_EQ(got->routes, row.routes);
  EXPECT_EQ(s.catalogue_snapshot_generation("k"), 0);
  EXPECT_FALSE(s.catalogue_snapshot("another key"));
  // Every change to the tool cache moves the generation on: the snapshot is no longer found.
  ASSERT_TRUE(s.put_cached_tools({"a", "h", "{}"}).ok());
  EXPECT_EQ(s.tool_cache_generation(), 1);
  EXPECT_FALSE(s.catalogue_snapshot("k"));
  ASSERT_TRUE(s.put_cached_tools({"a", "h", "{\"other\":1}"}).ok());  // a replaced entry
  EXPECT_EQ(s.tool_cache_generation(), 2);
  // One taken at an older generation is not kept; one at the current one is.
  EXPECT_FALSE(s.put_catalogue_snapshot({1, "k", "[]", "r"}));
  EXPECT_EQ(s.catalogue_snapshot_generation("k"), 0);
  EXPECT_TRUE(s.put_catalogue_snapshot({2, "k", "[]", "r"}));
  ASSERT_TRUE(s.catalogue_snapshot("k"));
  EXPECT_EQ(s.catalogue_snapshot("k")->tools, "[]");
}

}  // namespace
}  // namespace mcpmux
