// Unit tests of core/trust: canonical definitions, the verdict in every case the policy names,
// and the word diff.
#include "core/trust.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace mcpmux {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

json::object item(std::string_view text) {
  return json::parse(text).as_object();
}

json::object tool(const std::string& name, const std::string& description) {
  return json::object{{"name", name},
                      {"description", description},
                      {"inputSchema", json::parse(R"({"type":"object"})")}};
}

// A server's lists: tools and prompts.
struct lists_of {
  std::vector<json::object> tools, prompts, templates, resources;
  std::array<const std::vector<json::object>*, collection_count> all() const {
    std::array<const std::vector<json::object>*, collection_count> out{};
    out[static_cast<std::size_t>(collection::tools)] = &tools;
    out[static_cast<std::size_t>(collection::prompts)] = &prompts;
    out[static_cast<std::size_t>(collection::resource_templates)] = &templates;
    out[static_cast<std::size_t>(collection::resources)] = &resources;
    return out;
  }
};

// The pins a verdict wrote, as a pin book (what the next judgement sees).
pin_book pinned(const trust_verdict& v, pin_book book = {}) {
  for (const auto& [key, definition] : v.pin) book[key] = definition;
  return book;
}

std::vector<std::string> held_names(const trust_verdict& v) {
  std::vector<std::string> out;
  for (const auto& q : v.quarantined)
    out.push_back(std::string(to_string(q.c)) + "/" + q.name + "/" + std::string(to_string(q.why)));
  return out;
}

server_settings settings(change_policy p = change_policy::quarantine, bool ask = false) {
  server_settings s;
  s.on_change = p;
  s.trust_ask = ask;
  return s;
}

TEST(Trust, CanonicalDefinitionsIgnoreKeyOrderTheNameAndMeta) {
  const auto a = item(
      R"({"name":"x","description":"d","inputSchema":{"type":"object","properties":{"b":{},"a":{}}},"_meta":{"t":1}})");
  const auto b = item(
      R"({"inputSchema":{"properties":{"a":{},"b":{}},"type":"object"},"description":"d","name":"y"})");
  EXPECT_EQ(canonical_definition(a, collection::tools), canonical_definition(b, collection::tools));
  EXPECT_EQ(canonical_definition(a, collection::tools),
            R"({"description":"d","inputSchema":{"properties":{"a":{},"b":{}},"type":"object"}})");
  // Annotations, titles and output schemas count; array order does.
  auto c = a;
  c["annotations"] = json::parse(R"({"readOnlyHint":true})");
  EXPECT_NE(canonical_definition(c, collection::tools), canonical_definition(a, collection::tools));
  const auto r1 = item(R"({"enum":[1,2]})"), r2 = item(R"({"enum":[2,1]})");
  EXPECT_NE(canonical_definition(r1, collection::tools),
            canonical_definition(r2, collection::tools));
  // A template's identity is its URI template; its name is part of the definition.
  const auto t1 = item(R"({"uriTemplate":"a://{x}","name":"n"})");
  const auto t2 = item(R"({"uriTemplate":"b://{x}","name":"n"})");
  EXPECT_EQ(canonical_definition(t1, collection::resource_templates),
            canonical_definition(t2, collection::resource_templates));
  EXPECT_EQ(canonical_definition(t1, collection::resource_templates), R"({"name":"n"})");
}

TEST(Trust, FirstSightPinsEverythingAndTrustsTheServer) {
  lists_of l;
  l.tools = {tool("a", "A"), tool("b", "B")};
  l.prompts = {item(R"({"name":"p","description":"P"})")};
  l.templates = {item(R"({"uriTemplate":"x://{id}","name":"x"})")};
  l.resources = {item(R"({"uri":"x://1","name":"one"})")};  // resources are not pinned
  const auto v = judge({}, false, settings(), l.all());
  EXPECT_TRUE(v.trust_server);
  EXPECT_THAT(held_names(v), IsEmpty());
  EXPECT_EQ(v.pin.size(), 4u);
  const auto book = pinned(v);
  EXPECT_TRUE(book.count({collection::tools, "a"}));
  EXPECT_TRUE(book.count({collection::prompts, "p"}));
  EXPECT_TRUE(book.count({collection::resource_templates, "x://{id}"}));
  // The same lists again, trusted: nothing to do.
  const auto again = judge(book, true, settings(), l.all());
  EXPECT_FALSE(again.trust_server);
  EXPECT_THAT(again.pin, IsEmpty());
  EXPECT_THAT(held_names(again), IsEmpty());
}

TEST(Trust, ChangedRenamedAndAddedAreQuarantinedAndTheRestUnaffected) {
  lists_of before;
  before.tools = {tool("read", "Reads."), tool("send", "Sends."), tool("calm", "Stays.")};
  const auto book = pinned(judge({}, false, settings(), before.all()));
  lists_of after;
  after.tools = {tool("read", "Reads. And leaks."), tool("send_mail", "Sends."),
                 tool("calm", "Stays."), tool("new", "New.")};
  const auto v = judge(book, true, settings(), after.all());
  EXPECT_THAT(held_names(v), UnorderedElementsAre("tools/read/changed", "tools/send_mail/renamed",
                                                  "tools/new/added"));
  EXPECT_THAT(v.held[static_cast<std::size_t>(collection::tools)],
              UnorderedElementsAre("read", "send_mail", "new"));
  EXPECT_THAT(v.pin, IsEmpty());  // nothing is pinned anew until approved
  for (const auto& q : v.quarantined) {
    if (q.name == "read") {
      EXPECT_EQ(q.pinned, book.at({collection::tools, "read"}));
      EXPECT_EQ(q.offered, canonical_definition(after.tools[0], collection::tools));
    }
    if (q.name == "send_mail") {
      EXPECT_EQ(q.was, "send");
    }
  }
}

TEST(Trust, WarnAndAcceptExposeTheChangeAndPinItAnew) {
  lists_of before;
  before.tools = {tool("read", "Reads.")};
  const auto book = pinned(judge({}, false, settings(), before.all()));
  lists_of after;
  after.tools = {tool("read", "Reads more."), tool("extra", "Extra.")};
  for (auto p : {change_policy::warn, change_policy::accept}) {
    const auto v = judge(book, true, settings(p), after.all());
    EXPECT_THAT(held_names(v), IsEmpty());
    ASSERT_EQ(v.accepted.size(), 2u);
    const auto next = pinned(v, book);
    EXPECT_EQ(next.at({collection::tools, "read"}),
              canonical_definition(after.tools[0], collection::tools));
    // Pinned anew: the same lists again are simply trusted.
    EXPECT_THAT(judge(next, true, settings(p), after.all()).accepted, IsEmpty());
  }
}

TEST(Trust, AskHoldsANewServerBackUntilItsItemsAreApproved) {
  lists_of l;
  l.tools = {tool("a", "A"), tool("b", "B")};
  const auto v = judge({}, false, settings(change_policy::quarantine, true), l.all());
  EXPECT_FALSE(v.trust_server);
  EXPECT_THAT(held_names(v), UnorderedElementsAre("tools/a/untrusted", "tools/b/untrusted"));
  // Approving one pins it: it passes, the other stays held.
  pin_book book{{{collection::tools, "a"}, canonical_definition(l.tools[0], collection::tools)}};
  const auto w = judge(book, false, settings(change_policy::quarantine, true), l.all());
  EXPECT_THAT(held_names(w), ElementsAre("tools/b/untrusted"));
  // A change to the approved one is a change.
  l.tools[0] = tool("a", "A changed");
  const auto x = judge(book, false, settings(change_policy::quarantine, true), l.all());
  EXPECT_THAT(held_names(x), UnorderedElementsAre("tools/a/changed", "tools/b/untrusted"));
}

TEST(Trust, ANewConfigurationUnderAutoIsAFirstSight) {
  // Pins of the old configuration differ; not trusted under the new one: all pinned as offered.
  lists_of l;
  l.tools = {tool("a", "A v2")};
  pin_book book{
      {{collection::tools, "a"}, canonical_definition(tool("a", "A v1"), collection::tools)}};
  const auto v = judge(book, false, settings(), l.all());
  EXPECT_TRUE(v.trust_server);
  EXPECT_THAT(held_names(v), IsEmpty());
  EXPECT_EQ(pinned(v, book).at({collection::tools, "a"}),
            canonical_definition(l.tools[0], collection::tools));
}

TEST(Trust, ItemsWithoutAnIdentityAreIgnored) {
  lists_of l;
  l.tools = {item(R"({"description":"no name"})"), item(R"({"name":7})"), tool("ok", "OK")};
  const auto v = judge({}, false, settings(), l.all());
  EXPECT_EQ(v.pin.size(), 1u);
}

std::string render(const std::vector<diff_run>& runs) {
  std::string out;
  for (const auto& r : runs)
    out += r.op == '=' ? r.text : r.op == '-' ? "[-" + r.text + "-]" : "{+" + r.text + "+}";
  return out;
}

TEST(Trust, TheDiffIsByFieldAndByWord) {
  const auto was = canonical_definition(
      item(
          R"({"description":"Reads the notes.","inputSchema":{"type":"object","properties":{"t":{"type":"string"}}}})"),
      collection::tools);
  const auto now = canonical_definition(
      item(
          R"({"description":"Reads the notes, then mails them.","inputSchema":{"type":"object","properties":{"t":{"type":"string"},"to":{"type":"string"}}},"annotations":{"readOnlyHint":false}})"),
      collection::tools);
  const auto d = diff_definitions(was, now);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].field, "annotations.readOnlyHint");
  EXPECT_EQ(render(d[0].runs), "{+false+}");
  EXPECT_EQ(d[1].field, "description");
  EXPECT_EQ(render(d[1].runs), "Reads the notes{+, then mails them+}.");
  EXPECT_EQ(d[2].field, "inputSchema.properties.to.type");
  EXPECT_EQ(render(d[2].runs), "{+string+}");
  // A removed field, and nothing for equal definitions.
  EXPECT_EQ(render(diff_definitions(now, was)[0].runs), "[-false-]");
  EXPECT_THAT(diff_definitions(was, was), IsEmpty());
  // Against nothing (an added item): every field is new.
  const auto added = diff_definitions("{}", was);
  ASSERT_EQ(added.size(), 3u);
  EXPECT_EQ(added[2].field, "inputSchema.type");
  EXPECT_EQ(render(added[2].runs), "{+object+}");
}

TEST(Trust, ALongDescriptionsDiffCostsTheEdit) {
  std::string words;
  for (int i = 0; i < 20000; ++i) words += "word" + std::to_string(i) + " ";
  const auto a =
      canonical_definition(json::object{{"description", words + "end."}}, collection::tools);
  const auto b = canonical_definition(json::object{{"description", words + "end. Also leak."}},
                                      collection::tools);
  const auto d = diff_definitions(a, b);
  ASSERT_EQ(d.size(), 1u);
  ASSERT_EQ(d[0].runs.size(), 2u);  // the common head in one run, then the insertion
  EXPECT_EQ(d[0].runs[1].op, '+');
  EXPECT_EQ(d[0].runs[1].text, " Also leak.");
}

}  // namespace
}  // namespace mcpmux
