// Unit tests of core/catalogue: the servers' lists in, the exposed lists out (names, URI aliases,
// routes, pages and cursors). No daemon, no server: lists built by hand.
#include "config/filters.hpp"
#include "core/catalogue.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<json::object> items(std::string_view key, std::vector<std::string> ids) {
  std::vector<json::object> out;
  for (auto& id : ids) out.push_back(json::object{{key, id}, {"description", "d " + id}});
  return out;
}

struct fixture {
  std::array<std::vector<json::object>, collection_count> a, b;
  catalogue cat;
  std::vector<std::string> warnings;
  naming_rules rules{"__", 64};
  std::string prefix_a = "a", prefix_b = "b";
  std::array<std::vector<std::string>, collection_count> shown_a;  // a's filters

  std::array<bool, collection_count> rebuild() {
    std::vector<catalogue_source> s(2);
    s[0].server = "a";
    s[0].prefix = prefix_a;
    s[1].server = "b";
    s[1].prefix = prefix_b;
    for (std::size_t i = 0; i < collection_count; ++i) {
      s[0].lists[i] = &a[i];
      s[1].lists[i] = &b[i];
      s[0].shown[i] = &shown_a[i];
    }
    return cat.rebuild(s, rules, warnings);
  }
  std::vector<std::string> exposed(collection c) const {
    std::vector<std::string> out;
    for (const auto& [name, r] : cat.routes(c)) out.push_back(name);
    return out;
  }
};

constexpr auto tools = static_cast<std::size_t>(collection::tools);
constexpr auto resources = static_cast<std::size_t>(collection::resources);
constexpr auto templates = static_cast<std::size_t>(collection::resource_templates);

TEST(Catalogue, NamesArePrefixedSortedAndRouteBackToTheirServer) {
  fixture f;
  f.a[tools] = items("name", {"read", "write"});
  f.b[tools] = items("name", {"read"});
  auto changed = f.rebuild();
  EXPECT_TRUE(changed[tools]);
  EXPECT_THAT(f.exposed(collection::tools), ElementsAre("a__read", "a__write", "b__read"));
  const auto* r = f.cat.find(collection::tools, "b__read");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->server, "b");
  EXPECT_EQ(r->original, "read");
  EXPECT_FALSE(f.cat.find(collection::tools, "read"));
  EXPECT_TRUE(f.warnings.empty());
  // The exposed list is the items with their exposed names, in order.
  auto page = (f.cat.page(collection::tools, "", 100)).value();
  const auto arr = json::parse(std::string_view(page.items_json)).as_array();
  ASSERT_EQ(arr.size(), 3u);
  EXPECT_EQ(arr[2].at("name").as_string(), "b__read");
  EXPECT_EQ(arr[2].at("description").as_string(), "d read");
  EXPECT_FALSE(page.next_cursor);
}

// A name is found by its hash: every one of many, in a copy too, and none that is not there,
// after a rebuild that moved and dropped some.
TEST(Catalogue, EveryExposedNameIsFoundAndNoOther) {
  fixture f;
  std::vector<std::string> names;
  for (int i = 0; i < 1000; ++i) names.push_back("tool_" + std::to_string(i * 7919 % 1000));
  f.a[tools] = items("name", names);
  f.b[tools] = items("name", {"tool_1", "zz"});
  f.rebuild();
  const catalogue copy = f.cat;
  for (const auto& n : names) {
    SCOPED_TRACE(n);
    const auto* r = copy.find(collection::tools, "a__" + n);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->server, "a");
    EXPECT_EQ(r->original, n);
    EXPECT_FALSE(copy.item(collection::tools, "a__" + n).empty());
  }
  EXPECT_EQ(copy.find(collection::tools, "b__zz")->original, "zz");
  EXPECT_FALSE(copy.find(collection::tools, "b__tool_2"));
  EXPECT_FALSE(copy.find(collection::tools, ""));
  EXPECT_TRUE(copy.item(collection::tools, "a__tool_1000").empty());
  f.a[tools] = items("name", {"tool_5"});
  f.rebuild();
  EXPECT_FALSE(f.cat.find(collection::tools, "a__tool_6"));
  EXPECT_EQ(f.cat.find(collection::tools, "a__tool_5")->server, "a");
  EXPECT_EQ(copy.find(collection::tools, "a__tool_6")->original, "tool_6");  // the copy is its own
}

TEST(Catalogue, HiddenItemsGetNoNameAndNoRoute) {
  fixture f;
  f.a[tools] = items("name", {"read", "delete_repo", "delete_all", "write"});
  f.b[tools] = items("name", {"delete_repo"});  // another server's rules are its own
  f.shown_a[tools] = {"*", "!delete_*"};
  f.a[resources] = items("uri", {"file:///pub/a", "file:///secret/b"});
  f.shown_a[resources] = {"file:///pub/*"};
  f.rebuild();
  EXPECT_THAT(f.exposed(collection::tools), ElementsAre("a__read", "a__write", "b__delete_repo"));
  EXPECT_FALSE(f.cat.find(collection::tools, "a__delete_repo"));
  EXPECT_THAT(f.exposed(collection::resources), ElementsAre("file:///pub/a"));
  EXPECT_FALSE(f.cat.find(collection::resources, "file:///secret/b"));
}

TEST(Filters, GlobsAndTheLastMatchingRuleDecides) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("delete_*", "delete_repo"));
  EXPECT_FALSE(glob_match("delete_*", "undelete_repo"));
  EXPECT_TRUE(glob_match("?ead", "read"));
  EXPECT_TRUE(glob_match("*_*_*", "a_b_c"));
  EXPECT_FALSE(glob_match("a*b", "a"));
  EXPECT_TRUE(glob_match("file:///*.md", "file:///x/y.md"));
  EXPECT_TRUE(shown_by({}, "anything"));
  EXPECT_TRUE(shown_by({"*", "!delete_*"}, "read"));
  EXPECT_FALSE(shown_by({"*", "!delete_*"}, "delete_x"));
  EXPECT_TRUE(shown_by({"*", "!delete_*", "delete_draft"}, "delete_draft"));
  EXPECT_FALSE(shown_by({"read_*"}, "write"));  // an allow-list hides what it does not name
  EXPECT_FALSE(shown_by({"!x"}, "y"));
}

TEST(Filters, AnnotationWordsFollowTheSpecsDefaults) {
  const tool_hints nothing_said;  // a tool without annotations
  const tool_hints reader{
      .read_only = true, .destructive = false, .idempotent = true, .open_world = false};
  EXPECT_FALSE(shown_by({"@read-only"}, "x", &nothing_said));
  EXPECT_TRUE(shown_by({"@destructive"}, "x", &nothing_said));
  EXPECT_TRUE(shown_by({"@open-world"}, "x", &nothing_said));
  EXPECT_FALSE(shown_by({"@idempotent"}, "x", &nothing_said));
  EXPECT_TRUE(shown_by({"@read-only"}, "x", &reader));
  EXPECT_TRUE(shown_by({"@idempotent"}, "x", &reader));
  EXPECT_FALSE(shown_by({"@open-world"}, "x", &reader));
  // Combined with globs and negations; the last matching rule still decides.
  EXPECT_TRUE(shown_by({"@read-only", "github__*", "!@destructive"}, "gh", &reader));
  EXPECT_TRUE(shown_by({"@read-only", "github__*", "!@destructive"}, "github__x", &reader));
  EXPECT_FALSE(shown_by({"@read-only", "github__*", "!@destructive"}, "github__x", &nothing_said));
  // Not a tool (a prompt, a resource): an annotation word matches nothing.
  EXPECT_FALSE(shown_by({"@destructive"}, "x"));
  EXPECT_TRUE(annotation_filter("read-only"));
  EXPECT_FALSE(annotation_filter("readonly"));
}

TEST(Catalogue, ToolsAreSelectedByTheirAnnotations) {
  fixture f;
  f.a[tools] = items("name", {"get", "put", "plain"});
  f.a[tools][0]["annotations"] = json::object{{"readOnlyHint", true}};
  f.a[tools][1]["annotations"] = json::object{{"destructiveHint", false}};
  f.shown_a[tools] = {"@read-only"};
  f.rebuild();
  EXPECT_THAT(f.exposed(collection::tools), ElementsAre("a__get"));
  f.shown_a[tools] = {"*", "!@destructive"};  // put says it is not destructive; plain says nothing
  f.rebuild();
  EXPECT_THAT(f.exposed(collection::tools), ElementsAre("a__get", "a__put"));
}

TEST(Catalogue, ACollisionIsResolvedAndReportedOnce) {
  // The same exposed name from two servers (both with prefix "").
  fixture g;
  g.prefix_a = g.prefix_b = "";
  g.a[tools] = items("name", {"same"});
  g.b[tools] = items("name", {"same"});
  g.rebuild();
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_THAT(g.warnings[0], HasSubstr("collision"));
  EXPECT_EQ(g.cat.routes(collection::tools).size(), 2u);
  EXPECT_EQ(g.cat.find(collection::tools, "same")->server, "a");
  g.rebuild();
  EXPECT_EQ(g.warnings.size(), 1u);  // not again
}

TEST(Catalogue, ASharedUriIsAliasedAndResourcesRouteByUriAliasAndTemplate) {
  fixture f;
  f.a[resources] = items("uri", {"shared://x", "a://1"});
  f.b[resources] = items("uri", {"shared://x"});
  f.b[templates] = items("uriTemplate", {"b://item/{id}"});
  f.rebuild();
  EXPECT_THAT(f.exposed(collection::resources),
              ElementsAre("a://1", "mcpmux://b/shared://x", "shared://x"));
  ASSERT_EQ(f.warnings.size(), 1u);
  auto known = [](std::string_view s) { return s == "a" || s == "b"; };
  EXPECT_EQ(f.cat.route_resource("shared://x", known)->server, "a");
  auto alias = f.cat.route_resource("mcpmux://b/shared://x", known);
  ASSERT_TRUE(alias);
  EXPECT_EQ(alias->server, "b");
  EXPECT_EQ(alias->original, "shared://x");
  auto by_template = f.cat.route_resource("b://item/42", known);
  ASSERT_TRUE(by_template);
  EXPECT_EQ(by_template->server, "b");
  EXPECT_EQ(by_template->original, "b://item/42");
  EXPECT_FALSE(f.cat.route_resource("mcpmux://nobody/x", known));
  EXPECT_FALSE(f.cat.route_resource("zzz://1", known));
}

TEST(Catalogue, PagesCarryCursorsThatAChangeMakesStale) {
  fixture f;
  f.a[tools] = items("name", {"t1", "t2", "t3", "t4", "t5"});
  f.rebuild();
  std::vector<std::string> seen;
  std::string cursor;
  for (int n = 0; n < 10; ++n) {
    auto page = (f.cat.page(collection::tools, cursor, 2)).value();
    const auto arr = json::parse(std::string_view(page.items_json));
    for (const auto& v : arr.as_array()) seen.emplace_back(v.at("name").as_string());
    if (!page.next_cursor) break;
    cursor = *page.next_cursor;
  }
  EXPECT_THAT(seen, ElementsAre("a__t1", "a__t2", "a__t3", "a__t4", "a__t5"));

  auto first = (f.cat.page(collection::tools, "", 2)).value();
  ASSERT_TRUE(first.next_cursor);
  auto unchanged = f.rebuild();  // nothing changed: the cursor still holds
  EXPECT_FALSE(unchanged[tools]);
  EXPECT_TRUE((f.cat.page(collection::tools, *first.next_cursor, 2)).ok());
  f.a[tools].pop_back();
  EXPECT_TRUE(f.rebuild()[tools]);
  auto stale = f.cat.page(collection::tools, *first.next_cursor, 2);
  ASSERT_TRUE(!stale.ok());
  EXPECT_THAT(stale.error().message, HasSubstr("stale cursor"));
  for (std::string_view bad : {"x", "1", "0.99"})
    EXPECT_TRUE(!(f.cat.page(collection::tools, bad, 2)).ok()) << bad;
}

}  // namespace
}  // namespace mcpmux
