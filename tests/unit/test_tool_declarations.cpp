// TypeScript declarations of tools (protocol/tool_declarations): real servers' tool lists
// (tests/bench/search/fixtures), each JSON Schema construct alone, descriptions that try to end
// their comment, names JavaScript does not allow bare, and the caps.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "protocol/tool_declarations.hpp"

namespace mcpmux {
namespace {

namespace json = boost::json;
using mcp::declared_tool;
using mcp::typescript_declarations;

json::value fixture(const std::string& name) {
  std::ifstream in(std::string(MCPMUX_SOURCE_DIR) + "/tests/bench/search/fixtures/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// A fixture's tools as the profile would offer them (`server__tool`); `doc` keeps the schemas.
std::vector<declared_tool> tools_of(const json::value& doc) {
  std::vector<declared_tool> out;
  const std::string server(doc.at("server").as_string());
  for (const auto& t : doc.at("tools").as_array()) {
    const auto& o = t.as_object();
    const std::string name(o.at("name").as_string());
    const auto* text = o.if_contains("description");
    out.push_back({server + "__" + name, server, name,
                   text ? std::string(text->as_string()) : std::string(),
                   o.if_contains("inputSchema"), o.if_contains("outputSchema")});
  }
  return out;
}

// One tool `s__t` whose arguments have the schema `input`: its whole method line(s).
std::string method_for(const std::string& input) {
  const auto schema = json::parse(input);
  const declared_tool t{"s__t", "s", "t", "", &schema, nullptr};
  const auto all = typescript_declarations(std::span(&t, 1));
  const auto from = all.find("    t(");
  return from == std::string::npos ? all : all.substr(from, all.find("\n  };", from) - from);
}

TEST(tool_declarations, a_real_server_becomes_a_typed_tools_object) {
  const auto doc = fixture("memory.json");
  const auto tools = tools_of(doc);
  const auto ts = typescript_declarations(tools);
  EXPECT_TRUE(ts.starts_with("interface Tools {\n  memory: {\n")) << ts;
  EXPECT_NE(ts.find("    /**\n     * Create multiple new entities in the knowledge graph\n"
                    "     * tools[\"memory__create_entities\"]\n     */\n"
                    "    create_entities(args: {\n      entities: {\n"
                    "        /** The name of the entity */\n        name: string;\n"),
            std::string::npos)
      << ts;
  EXPECT_NE(ts.find("observations: string[];"), std::string::npos);
  // Both ways to call, one declaration each.
  EXPECT_NE(ts.find("declare const tools: Tools & {\n"
                    "  \"memory__create_entities\": Tools[\"memory\"][\"create_entities\"];\n"),
            std::string::npos);
  for (const auto& t : tools) EXPECT_NE(ts.find(" " + t.tool + "(args"), std::string::npos);
  // memory's tools declare output schemas: their results are typed, not text.
  EXPECT_NE(ts.find("}): Promise<{\n      entities: {"), std::string::npos) << ts;
}

TEST(tool_declarations, names_javascript_does_not_allow_bare_are_quoted) {
  const auto doc = fixture("notion.json");
  const auto ts = typescript_declarations(tools_of(doc));
  EXPECT_NE(ts.find("    \"API-post-search\"(args?: {"), std::string::npos) << ts.substr(0, 2000);
  EXPECT_NE(ts.find("\"notion__API-post-search\": Tools[\"notion\"][\"API-post-search\"];"),
            std::string::npos);
  EXPECT_EQ(method_for(R"({"type":"object","properties":{"content-type":{"type":"string"},
                          "$ok_1":{"type":"number"}},"required":["$ok_1"]})"),
            "    t(args: {\n      \"content-type\"?: string;\n      $ok_1: number;\n    }): "
            "Promise<string>;");
}

TEST(tool_declarations, each_schema_construct_has_its_typescript) {
  const auto arg = [](const std::string& schema) {
    const auto m =
        method_for(R"({"type":"object","properties":{"a":)" + schema + R"(},"required":["a"]})");
    const auto from = m.find("a: ") + 3;
    return m.substr(from, m.find(";\n    }):") - from);
  };
  EXPECT_EQ(arg(R"({"type":"integer"})"), "number");
  EXPECT_EQ(arg(R"({"enum":["open","closed",3,null]})"), R"("open" | "closed" | 3 | null)");
  EXPECT_EQ(arg(R"({"const":"x"})"), R"("x")");
  EXPECT_EQ(arg(R"({"type":["string","null"]})"), "string | null");
  EXPECT_EQ(arg(R"({"type":"string","nullable":true})"), "string | null");
  EXPECT_EQ(arg(R"({"anyOf":[{"type":"string"},{"type":"array","items":{"type":"number"}}]})"),
            "string | number[]");
  EXPECT_EQ(arg(R"({"type":"array","items":{"oneOf":[{"type":"string"},{"type":"boolean"}]}})"),
            "(string | boolean)[]");
  EXPECT_EQ(arg(R"({"allOf":[{"type":"object","properties":{"x":{"type":"string"}}},
                             {"type":"object","properties":{"y":{"type":"number"}}}]})"),
            "{\n        x?: string;\n      } & {\n        y?: number;\n      }");
  EXPECT_EQ(arg(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"number"}]})"),
            "[string, number]");
  EXPECT_EQ(arg(R"({"type":"array"})"), "unknown[]");
  EXPECT_EQ(arg(R"({"type":"object","additionalProperties":{"type":"number"}})"),
            "{\n        [key: string]: number;\n      }");
  EXPECT_EQ(arg(R"({"type":"object"})"), "{\n        [key: string]: unknown;\n      }");
  EXPECT_EQ(arg(R"({"type":"object","additionalProperties":false})"), "{}");
  EXPECT_EQ(arg(R"({"description":"no type at all"})"), "unknown");
  EXPECT_EQ(arg(R"({"type":"string","format":"date-time","pattern":"^2"})"), "string");
  EXPECT_EQ(arg("true"), "unknown");
  EXPECT_EQ(arg("false"), "never");
}

TEST(tool_declarations, local_refs_are_inlined_and_recursion_stops) {
  EXPECT_EQ(method_for(R"({"type":"object","properties":{
                            "who":{"$ref":"#/$defs/person"},
                            "old":{"$ref":"#/definitions/id"},
                            "far":{"$ref":"https://example.com/schema.json"}},
                          "required":["who"],
                          "$defs":{"person":{"type":"object","properties":{
                            "name":{"type":"string"},
                            "boss":{"$ref":"#/$defs/person"}}}},
                          "definitions":{"id":{"type":"integer"}}})"),
            "    t(args: {\n      who: {\n        name?: string;\n        boss?: unknown;\n"
            "      };\n      old?: number;\n      far?: unknown;\n    }): Promise<string>;");
}

TEST(tool_declarations, a_description_cannot_end_its_comment) {
  const auto schema = json::parse(R"({"type":"object","properties":{"q":{"type":"string",
      "description":"ends here */ declare const pwned: 1; /*"}}})");
  const declared_tool t{"s__t", "s", "t", "Line one */ x\nline two", &schema, nullptr};
  const auto ts = typescript_declarations(std::span(&t, 1));
  EXPECT_EQ(ts.find("*/ declare"), std::string::npos) << ts;
  EXPECT_EQ(ts.find("*/ x"), std::string::npos) << ts;
  EXPECT_NE(ts.find("/** ends here *\\/ declare const pwned: 1; /* */"), std::string::npos) << ts;
  EXPECT_NE(ts.find("     * Line one *\\/ x\n     * line two\n"), std::string::npos) << ts;
}

TEST(tool_declarations, output_schema_types_the_result_else_it_is_text) {
  const auto out = json::parse(R"({"type":"object","properties":{"n":{"type":"integer"}},
                                   "required":["n"]})");
  const declared_tool typed{"s__count", "s", "count", "", nullptr, &out};
  const declared_tool text{"s__say", "s", "say", "", nullptr, nullptr};
  const std::vector<declared_tool> both{typed, text};
  const auto ts = typescript_declarations(both);
  EXPECT_NE(ts.find("count(args?: {}): Promise<{\n      n: number;\n    }>;"), std::string::npos)
      << ts;
  EXPECT_NE(ts.find("say(args?: {}): Promise<string>;"), std::string::npos) << ts;
}

TEST(tool_declarations, depth_description_and_size_are_bounded) {
  std::string deep = R"({"type":"string"})";
  for (int i = 0; i < 12; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  const auto nested = method_for(R"({"type":"object","properties":{"a":)" + deep + "}}");
  EXPECT_NE(nested.find("unknown[][][][][]"), std::string::npos) << nested;
  EXPECT_EQ(nested.find("string[]"), std::string::npos);  // cut before the innermost

  const std::string long_text(100000, 'w');
  const declared_tool wordy{"s__t", "s", "t", long_text, nullptr, nullptr};
  EXPECT_LT(typescript_declarations(std::span(&wordy, 1)).size(), 1500u);

  // Every server of the benchmark: far over the cap; the rest named, the whole bounded.
  std::vector<json::value> docs;
  for (const char* f : {"github.json", "gitlab.json", "notion.json", "playwright.json",
                        "kubernetes.json", "firecrawl.json", "sentry.json", "slack.json"})
    docs.push_back(fixture(f));
  std::vector<declared_tool> all;
  for (const auto& d : docs)
    for (auto& t : tools_of(d)) all.push_back(std::move(t));
  mcp::declaration_limits limits;
  limits.total = 16 * 1024;
  const auto ts = typescript_declarations(all, limits);
  EXPECT_LT(ts.size(), limits.total + limits.total / 16 + 4096);
  EXPECT_NE(ts.find("more not declared here (size limit)"), std::string::npos);
  EXPECT_NE(ts.find("create_or_update_file(args: {"), std::string::npos);  // github's first
}

}  // namespace
}  // namespace mcpmux
