// Unit tests of profiles (core/profiles), the catalogue's views of them and the tool search
// index (core/search_index), and of [profiles.NAME] in the config. Lists built by hand.
#include "config/config.hpp"
#include "core/profiles.hpp"
#include "core/search_index.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

json::object tool(std::string name, std::string description, json::object properties = {}) {
  return json::object{
      {"name", std::move(name)},
      {"description", std::move(description)},
      {"inputSchema", json::object{{"type", "object"}, {"properties", std::move(properties)}}}};
}

// Two servers: files (read, write, delete a file) and web (search the web, fetch a page).
struct world {
  std::vector<json::object> files{
      tool("read_file", "Read the complete contents of a file from disk",
           {{"path", json::object{{"type", "string"}, {"description", "Path of the file"}}}}),
      tool("write_file", "Create a new file or overwrite an existing one with new content"),
      tool("delete_file", "Remove a file permanently")};
  std::vector<json::object> web{tool("webSearch", "Search the internet for pages matching a query"),
                                tool("fetch_url", "Download a web page and return it as markdown",
                                     {{"url", json::object{{"type", "string"}}}})};
  std::vector<json::object> none;
  catalogue whole;
  naming_rules rules{"__", 64};
  std::vector<std::string> warnings;

  std::vector<catalogue_source> sources() {
    return {catalogue_source{"files", "files", {&files, &none, &none, &none}, {}},
            catalogue_source{"web", "web", {&web, &none, &none, &none}, {}}};
  }
  std::map<std::string, profile_set::changes> build(profile_set& set) {
    auto s = sources();
    whole.rebuild(s, rules, warnings);
    return set.rebuild(s, rules, {{"files", "Reads and writes your files."}, {"web", ""}}, whole);
  }
  /// Makes `index` hold the tools of both servers as they are now.
  void index_into(search_index& index) {
    whole.rebuild(sources(), rules, warnings);
    index.sync(whole);
  }
};

std::vector<std::string> names(const catalogue& c, collection k = collection::tools) {
  std::vector<std::string> out;
  for (const auto& [name, r] : c.routes(k)) out.push_back(name);
  return out;
}

std::vector<std::string> hit_names(const json::array& found) {
  std::vector<std::string> out;
  for (const auto& t : found) out.emplace_back(t.at("name").get_string());
  return out;
}

/// The name of `index`'s best hit for `query`, or "" when nothing matches.
std::string first_hit(const search_index& index, std::string_view query) {
  const auto hits = index.search(query, 1, nullptr);
  return hits.empty() ? "" : hits.front().name;
}

profile_config profile(std::string name) {
  profile_config p;
  p.name = std::move(name);
  return p;
}

TEST(SearchIndex, IdentifiersSplitIntoWords) {
  EXPECT_EQ(identifier_words("read_file"), "read file");
  EXPECT_EQ(identifier_words("webSearch"), "web search");
  EXPECT_EQ(identifier_words("HTTPServer-v2.get"), "http server v2 get");
  EXPECT_EQ(identifier_words("__x__"), "x");
  EXPECT_EQ(identifier_words(""), "");
}

TEST(SearchIndex, QueriesDropStopWordsAndQuoteEveryWord) {
  EXPECT_EQ(any_of_words(query_words("Read the file for me")), R"("read" OR "file")");
  EXPECT_EQ(any_of_words(query_words("the")), R"("the")");  // only stop words: keep them
  EXPECT_EQ(any_of_words(query_words("  \"OR\" NEAR( * ")),
            R"("near")");  // FTS5 syntax is not passed on
  EXPECT_EQ(any_of_words(query_words("")), "");
  // A person's words are not identifiers: GitHub stays one word; numbers and letters alone go.
  EXPECT_THAT(query_words("Close GitHub issue #42, step b"),
              ElementsAre("close", "github", "issue", "step"));
  EXPECT_THAT(query_words("42"), ElementsAre("42"));  // nothing else: kept
  EXPECT_THAT(related_words({"folder", "directory"}), ElementsAre("dir"));
  EXPECT_THAT(related_words({"pr"}), ElementsAre("pull"));
  EXPECT_THAT(related_words({"zebra"}), IsEmpty());
}

TEST(SearchIndex, QueriesLeaveOutValuesAndComparePluralsByStem) {
  // A web address is the word "url"; a quoted text is a value, not words about the tool (an
  // apostrophe in a word is no quote).
  EXPECT_THAT(query_words("Open https://example.com/a-b?q=1 and www.x.org"),
              ElementsAre("open", "url"));
  EXPECT_THAT(query_words("Wait until 'Payment complete' shows on stripe.com's page"),
              ElementsAre("wait", "until", "shows", "stripe", "com", "page"));
  EXPECT_THAT(query_words("Find \"Alice Chen\""), ElementsAre("find"));
  EXPECT_THAT(query_words("'only a quote'"), ElementsAre("only", "quote"));
  // With a stemmer a plural finds its word's group; without one only the word itself does.
  const auto plural = [](const std::string& w) {
    return w.size() > 3 && w.back() == 's' ? w.substr(0, w.size() - 1) : w;
  };
  EXPECT_THAT(related_words({"folders"}, plural), ElementsAre("directory", "dir"));
  EXPECT_THAT(related_words({"folders"}), IsEmpty());
}

TEST(SearchIndex, ToolNamedForTheVerbAndObjectRanksFirst) {
  world w;
  w.files.push_back(tool("create_directory", "Make a new directory"));
  w.files.push_back(tool("move_file", "Create the directory first if needed, then move a file"));
  w.web.push_back(tool("monitor_delete", "Stop watching a page"));
  w.web.push_back(tool("monitor_list", "Every page being watched, with its monitor id"));
  w.web.push_back(tool("cleanup", "Forget every page watched so far"));
  search_index index;
  w.index_into(index);
  // The verb and object of the name beat the same words in a description.
  EXPECT_EQ(first_hit(index, "create directory"), "files__create_directory");
  // Related words of plurals, by the index's stemmer: folders are directories.
  EXPECT_EQ(first_hit(index, "make folders"), "files__create_directory");
  // "get rid of" is deleting; "clean up" is the one word of cleanup's name.
  EXPECT_EQ(first_hit(index, "get rid of the monitor"), "web__monitor_delete");
  EXPECT_EQ(first_hit(index, "clean up everything"), "web__cleanup");
  // A web address asks for a tool that takes one.
  EXPECT_EQ(first_hit(index, "https://example.com/pricing"), "web__fetch_url");
}

TEST(SearchIndex, LongParameterDescriptionsDoNotHideTheWordsOfAName) {
  world w;
  // Each column's length counts against that column only (BM25F): a tool that documents its
  // parameters at length still ranks by its name.
  std::string manual;
  for (int i = 0; i < 60; ++i) manual += "The selector of the element, as CSS or as text. ";
  w.web.push_back(tool("page_click", "Click an element",
                       {{"selector", json::object{{"type", "string"}, {"description", manual}}},
                        {"button", json::object{{"type", "string"}, {"description", manual}}}}));
  w.web.push_back(tool("hover", "Move the mouse over an element, as before a page click"));
  search_index index;
  w.index_into(index);
  EXPECT_EQ(first_hit(index, "click on the page"), "web__page_click");
}

TEST(SearchIndex, RelatedWordsAndANamedServerHelp) {
  world w;
  w.files.push_back(tool("create_directory", "Make a new directory"));
  w.web.push_back(tool("create_directory", "Create a folder on the web drive"));
  search_index index;
  w.index_into(index);
  // "folder" finds a directory tool through its related words.
  auto hits = index.search("make a folder", 5, nullptr);
  ASSERT_GE(hits.size(), 2u);
  // The server the query names ranks first.
  EXPECT_EQ(first_hit(index, "make a folder on files"), "files__create_directory");
  EXPECT_EQ(first_hit(index, "make a folder on web"), "web__create_directory");
}

TEST(SearchIndex, ForgeVerbsFindTheirTools) {
  // On a forge, a reply is a comment and an approval a review.
  EXPECT_THAT(related_words({"reply"}), ElementsAre("comment"));
  EXPECT_THAT(related_words({"approved"},
                            [](const std::string& w) {
                              return w == "approved" ? std::string("approve") : w;
                            }),
              ElementsAre("review"));

  world w;
  // Without the related words the issue's and the pull request's own tools, which say their
  // words more often, would come first.
  w.web.push_back(tool("get_issue", "Get an issue by its issue number"));
  w.web.push_back(tool("add_issue_comment", "Add a comment to an issue"));
  w.web.push_back(tool("get_pull_request", "Get a pull request by its pull request number"));
  w.web.push_back(tool("create_pull_request_review", "Submit a review of a pull request"));
  search_index index;
  w.index_into(index);
  EXPECT_EQ(first_hit(index, "reply on issue 17 that it is fixed"), "web__add_issue_comment");
  EXPECT_EQ(first_hit(index, "approve pull request 88"), "web__create_pull_request_review");
}

TEST(SearchIndex, ADeletingToolIsFirstOnlyWhenAsked) {
  world w;
  // The delete tool's shorter description would rank it first for words both tools share.
  w.web.push_back(tool("create_relations",
                       "Create new relations between entities of the graph, "
                       "in active voice, from one entity to another"));
  w.web.push_back(tool("delete_relations", "Delete relations from the graph"));
  w.web.push_back(tool("browser_drop", "Put files onto an element of the page"));
  w.web.push_back(tool("browser_place", "Put files onto an element of the page"));
  search_index index;
  w.index_into(index);
  EXPECT_EQ(first_hit(index, "relations of the graph"), "web__create_relations");
  EXPECT_EQ(first_hit(index, "link Alice to Acme in the graph with a works_at relation"),
            "web__create_relations");
  // Asked in any word of its group, or any form of its own, the deleting tool is first again.
  EXPECT_EQ(first_hit(index, "delete relations of the graph"), "web__delete_relations");
  EXPECT_EQ(first_hit(index, "get rid of the relations in the graph"), "web__delete_relations");
  EXPECT_EQ(first_hit(index, "removing the graph's relations"), "web__delete_relations");
  // A drop onto a page deletes nothing: it counts in full, as much as a tool alike in all but
  // its name's verb.
  const auto put = index.search("put files onto an element of the page", 2, nullptr);
  ASSERT_EQ(put.size(), 2u);
  EXPECT_EQ(put[0].name, "web__browser_drop");
  EXPECT_EQ(put[1].name, "web__browser_place");
  EXPECT_DOUBLE_EQ(put[0].score, put[1].score);
}

TEST(SearchIndex, RanksByNameAndDescriptionAndKeepsInStepWithTheCatalogue) {
  world w;
  w.whole.rebuild(w.sources(), w.rules, w.warnings);
  search_index index;
  EXPECT_EQ(index.sync(w.whole), 5u);
  EXPECT_EQ(index.size(), 5u);
  const auto all = [](std::string_view) { return true; };
  auto hits = index.search("read a file from disk", 3, all);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits.front().name, "files__read_file");
  EXPECT_GT(hits.front().score, 0);
  EXPECT_EQ(first_hit(index, "download a page"), "web__fetch_url");
  EXPECT_EQ(first_hit(index, "search the internet"), "web__webSearch");
  // Parameters count: "url" is only a parameter name.
  EXPECT_EQ(first_hit(index, "url"), "web__fetch_url");
  EXPECT_THAT(index.search("kubernetes", 5, all), IsEmpty());
  // `accept` filters; the limit counts accepted hits.
  auto only_web = index.search("file download", 5,
                               [](std::string_view n) { return n.substr(0, 5) == "web__"; });
  ASSERT_EQ(only_web.size(), 1u);
  EXPECT_EQ(only_web.front().name, "web__fetch_url");

  // Unchanged tools are left alone; a changed one is indexed anew; a gone one is dropped.
  EXPECT_EQ(index.sync(w.whole), 0u);
  w.web[1] = tool("fetch_url", "Retrieve a kubernetes pod");
  w.files.pop_back();
  w.whole.rebuild(w.sources(), w.rules, w.warnings);
  EXPECT_EQ(index.sync(w.whole), 3u);  // fetch_url dropped and added, delete_file dropped
  EXPECT_EQ(index.size(), 4u);
  EXPECT_EQ(index.search("kubernetes", 5, all).front().name, "web__fetch_url");
  EXPECT_THAT(index.search("remove permanently", 5, all), IsEmpty());
}

TEST(CatalogueView, PicksServersAndNamesAndReplacesDescriptions) {
  world w;
  auto s = w.sources();
  std::vector<std::string> servers{"files"}, shown{"*", "!files__delete_*"};
  std::map<std::string, std::string> descriptions{{"files__read_file", "Read one file \"quoted\""}};
  catalogue_view view{&servers, {&shown, nullptr, nullptr, nullptr}, &descriptions};
  catalogue c;
  c.rebuild(s, w.rules, w.warnings, &view);
  EXPECT_THAT(names(c), ElementsAre("files__read_file", "files__write_file"));
  EXPECT_EQ(c.find(collection::tools, "files__delete_file"), nullptr);
  EXPECT_EQ(c.find(collection::tools, "web__fetch_url"), nullptr);
  auto item = json::parse(c.item(collection::tools, "files__read_file")).as_object();
  EXPECT_EQ(item.at("description"), "Read one file \"quoted\"");
  EXPECT_TRUE(item.contains("inputSchema"));
  auto page = (c.page(collection::tools, "", 100)).value();
  EXPECT_NO_THROW(json::parse(std::string_view(page.items_json)));
  EXPECT_EQ(json::parse(c.item(collection::tools, "files__write_file")).at("description"),
            w.files[1].at("description"));
  EXPECT_EQ(c.item(collection::tools, "nope"), "");
}

TEST(Profiles, EachViewShowsItsOwnPart) {
  world w;
  profile_set set;
  auto small = profile("small");
  small.servers = {"web"};
  auto safe = profile("safe");
  safe.tools = {"*", "!*delete*"};
  EXPECT_THAT(set.configure({safe, small}), ElementsAre("safe", "small"));
  auto changes = w.build(set);
  EXPECT_TRUE(changes.at("small")[0]);
  EXPECT_THAT(names(set.find("small")->shown), ElementsAre("web__fetch_url", "web__webSearch"));
  EXPECT_THAT(names(set.find("safe")->shown), ElementsAre("files__read_file", "files__write_file",
                                                          "web__fetch_url", "web__webSearch"));
  EXPECT_FALSE(set.find("safe")->searching);
  EXPECT_THAT(set.find("safe")->unmatched, IsEmpty());
  EXPECT_EQ(set.find("nope"), nullptr);
  // Unchanged settings keep their view; a change or removal is reported.
  EXPECT_THAT(set.configure({safe, small}), IsEmpty());
  small.servers = {"files"};
  EXPECT_THAT(set.configure({small}), ElementsAre("small", "safe"));
  EXPECT_EQ(set.find("safe"), nullptr);
}

TEST(Profiles, PatternsAndOverridesThatMatchNothingAreNamed) {
  world w;
  profile_set set;
  auto typo = profile("typo");
  typo.tools = {"*", "files__raed_*", "!files__delete_*", "!nothing*"};
  typo.prompts = {"review"};
  typo.descriptions = {{"files__read_file", "ok"}, {"web__fetch", "no such tool"}};
  set.configure({typo});
  w.build(set);
  EXPECT_THAT(set.find("typo")->unmatched,
              ElementsAre("tools[1] \"files__raed_*\"", "prompts[0] \"review\"",
                          "descriptions.web__fetch"));
}

TEST(Profiles, SearchModeListsTwoToolsThatNameTheServers) {
  world w;
  profile_set set;
  auto finder = profile("finder");
  finder.exposure = exposure_mode::search;
  finder.servers = {"files"};
  finder.descriptions = {{"files__write_file", "Save notes about the weather"}};
  set.configure({finder});
  w.build(set);
  const auto* v = set.find("finder");
  ASSERT_TRUE(v->searching);
  EXPECT_EQ(v->search_tool, "mcpmux__search_tools");
  EXPECT_EQ(v->call_tool, "mcpmux__call_tool");
  EXPECT_THAT(names(v->search_listing), ElementsAre("mcpmux__call_tool", "mcpmux__search_tools"));
  auto search = json::parse(v->search_listing.item(collection::tools, "mcpmux__search_tools"));
  const std::string description(search.at("description").get_string());
  EXPECT_THAT(description, HasSubstr("files: Reads and writes your files."));
  EXPECT_THAT(description, HasSubstr("read_file"));
  EXPECT_THAT(description, Not(HasSubstr("web")));  // not this profile's server
  EXPECT_EQ(search.at("inputSchema").at("properties").at("server").at("enum"),
            json::parse(R"(["files"])"));

  // Searches see only the profile's tools, with its own descriptions, best first.
  EXPECT_THAT(hit_names(set.search(*v, "read a file", "", 5)),
              ::testing::Contains("files__read_file"));
  EXPECT_THAT(hit_names(set.search(*v, "web page", "", 5)), IsEmpty());
  auto weather = set.search(*v, "weather", "", 5);
  ASSERT_EQ(weather.size(), 1u);
  EXPECT_EQ(weather[0].at("name"), "files__write_file");
  EXPECT_EQ(weather[0].at("description"), "Save notes about the weather");
  EXPECT_EQ(weather[0].at("server"), "files");
  EXPECT_TRUE(weather[0].as_object().contains("inputSchema"));
  EXPECT_THAT(hit_names(set.search(*v, "weather", "web", 5)), IsEmpty());
  // The original description of an overridden tool is not what this profile matches.
  EXPECT_THAT(hit_names(set.search(*v, "overwrite existing", "", 5)), IsEmpty());
}

TEST(Profiles, AutoSearchesOnlyAboveItsBudget) {
  world w;
  profile_set set;
  auto roomy = profile("roomy");
  roomy.exposure = exposure_mode::auto_select;
  roomy.tool_budget_tokens = 100000;
  auto tight = profile("tight");
  tight.exposure = exposure_mode::auto_select;
  tight.tool_budget_tokens = 10;
  set.configure({roomy, tight});
  w.build(set);
  EXPECT_FALSE(set.find("roomy")->searching);
  EXPECT_TRUE(set.find("tight")->searching);
  EXPECT_GT(set.find("tight")->estimated_tokens, 10u);
  EXPECT_EQ(set.indexed(), 5u);
}

TEST(Profiles, ClientsAreMatchedByTheirAgent) {
  profile_set set;
  auto claude = profile("claude");
  claude.match = {"claude", "*claude-code*"};
  auto editors = profile("editors");
  editors.match = {"code", "zed"};
  set.configure({claude, editors});
  client_identity who;
  who.agent_program = "/usr/bin/node";
  who.agent_args = {"node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"};
  EXPECT_EQ(set.profile_for(who), "claude");
  who.agent_program = "/opt/zed/zed";
  who.agent_args = {"zed"};
  EXPECT_EQ(set.profile_for(who), "editors");
  who.requested_profile = "claude";  // asked for: wins
  EXPECT_EQ(set.profile_for(who), "claude");
  client_identity nobody;
  EXPECT_EQ(set.profile_for(nobody), "");
  auto fallback = profile("default");
  set.configure({claude, fallback});
  EXPECT_EQ(set.profile_for(nobody), "default");
}

TEST(ProfileConfig, ParsesEveryKey) {
  auto r = parse_config(R"([servers.files]
command = "x"
[servers.web]
command = "y"
[profiles.agent]
servers = ["f*"]
tools = ["*", "!files__delete_*"]
prompts = ["none"]
resources = ["file:///pub/*"]
exposure = "auto"
tool_budget_tokens = 5000
match = ["claude*"]
descriptions = { files__read_file = "Read one file" }
list_found_tools = true
[profiles.default]
)",
                        "t.toml");
  ASSERT_TRUE(r.value) << (r.errors.empty() ? "" : r.errors[0].to_string());
  ASSERT_EQ(r.value->profiles.size(), 2u);
  const auto& p = r.value->profiles[0];
  EXPECT_EQ(p.name, "agent");
  EXPECT_THAT(p.servers, ElementsAre("f*"));
  EXPECT_THAT(p.tools, ElementsAre("*", "!files__delete_*"));
  EXPECT_EQ(p.exposure, exposure_mode::auto_select);
  EXPECT_EQ(p.tool_budget_tokens, 5000u);
  EXPECT_THAT(p.match, ElementsAre("claude*"));
  EXPECT_EQ(p.descriptions.at("files__read_file"), "Read one file");
  EXPECT_TRUE(p.list_found_tools);
  EXPECT_FALSE(r.value->profiles[1].list_found_tools);
  EXPECT_EQ(r.value->profiles[1].name, "default");
  EXPECT_EQ(r.value->profiles[1].exposure, exposure_mode::all);
}

TEST(ProfileConfig, BadProfilesAreClearErrors) {
  const auto errors = [](std::string text) {
    std::vector<std::string> out;
    for (const auto& e : parse_config(text, "t.toml").errors)
      out.push_back(e.key + ": " + e.message);
    return out;
  };
  EXPECT_THAT(
      errors("[servers.a]\ncommand = \"x\"\n[profiles.p]\nservers = [\"b\", \"a*\", \"z*\"]\n"),
      ElementsAre("profiles.p.servers[0]: no server is named \"b\"",
                  "profiles.p.servers[2]: \"z*\" matches no configured server"));
  EXPECT_THAT(errors("[profiles.p]\nexposure = \"searchy\"\n"),
              ElementsAre(HasSubstr("did you mean \"search\"")));
  EXPECT_THAT(errors("[profiles.p]\nexposur = \"all\"\n"),
              ElementsAre(HasSubstr("did you mean \"exposure\"")));
  EXPECT_THAT(errors("[profiles.\"a b\"]\n"), ElementsAre(HasSubstr("profile name")));
  EXPECT_THAT(errors("[profiles.p]\ntools = [\"\"]\n"),
              ElementsAre(HasSubstr("profiles.p.tools[0]: a pattern must not be empty")));
  EXPECT_THAT(errors("[profiles.p]\ntool_budget_tokens = 0\n"),
              ElementsAre(HasSubstr("profiles.p.tool_budget_tokens")));
  EXPECT_THAT(errors("[profiles.p]\ndescriptions = [\"x\"]\n"),
              ElementsAre(HasSubstr("profiles.p.descriptions")));
  EXPECT_THAT(errors("profiles = 3\n"), ElementsAre(HasSubstr("a table of profile tables")));
  // A server the profile names may come from an include: checked once the includes are in.
  EXPECT_THAT(
      errors("[daemon]\ninclude = [\"/nonexistent/x.json\"]\n[profiles.p]\nservers = [\"b\"]\n"),
      IsEmpty());
}

}  // namespace
}  // namespace mcpmux
