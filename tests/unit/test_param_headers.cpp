// The Mcp-Param-{Name} header rules of 2026-07-28 Streamable HTTP (protocol/param_headers).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cctype>
#include <map>

#include "protocol/param_headers.hpp"

namespace mcpmux {
namespace {

using kind = mcp::param_header::kind;

// The conformance suite's `test_custom_headers` tool (http-custom-headers).
json::object custom_headers_schema() {
  return json::parse(R"({
    "type": "object",
    "properties": {
      "region": {"type": "string", "x-mcp-header": "Region"},
      "priority": {"type": "integer", "x-mcp-header": "Priority"},
      "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
      "empty_val": {"type": "string", "x-mcp-header": "EmptyVal"},
      "method_val": {"type": "string", "x-mcp-header": "Method"},
      "float_val": {"type": "number"},
      "non_ascii_val": {"type": "string", "x-mcp-header": "NonAscii"},
      "tab_val": {"type": "string", "x-mcp-header": "Tab"},
      "query": {"type": "string"}
    },
    "required": ["region", "priority", "query"]
  })")
      .as_object();
}

std::string invalid_why(std::string_view schema) {
  const auto got = mcp::param_headers(json::parse(schema).as_object());
  EXPECT_FALSE(got.ok()) << schema;
  if (got.ok()) return {};
  EXPECT_FALSE(got.error().message.empty()) << schema;
  return got.error().message;
}

std::vector<mcp::param_header> valid(std::string_view schema) {
  auto got = mcp::param_headers(json::parse(schema).as_object());
  EXPECT_TRUE(got.ok()) << (got.ok() ? "" : got.error().message);
  return got ? *got : std::vector<mcp::param_header>{};
}

// Headers as a server receives them: names ignore case.
struct header_map {
  std::map<std::string, std::string> fields;  // lower-case suffix → raw value
  std::vector<std::string> asked;

  header_map& set(std::string name, std::string value) {
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    fields[name] = std::move(value);
    return *this;
  }
  std::string check(const std::vector<mcp::param_header>& hs, const json::object& args) {
    return mcp::check_param_headers(hs, args, [&](std::string_view n) {
      asked.emplace_back(n);
      std::string lower(n);
      for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      const auto it = fields.find(lower);
      return it == fields.end() ? std::optional<std::string_view>()
                                : std::optional<std::string_view>(it->second);
    });
  }
};

TEST(param_headers, annotated_properties_are_found_in_schema_order) {
  const auto hs = mcp::param_headers(custom_headers_schema());
  ASSERT_TRUE(hs.ok()) << hs.error().message;
  ASSERT_EQ(hs->size(), 7u);
  EXPECT_EQ((*hs)[0].name, "Region");
  EXPECT_EQ((*hs)[0].path, std::vector<std::string>{"region"});
  EXPECT_EQ((*hs)[0].type, kind::string);
  EXPECT_EQ((*hs)[1].name, "Priority");
  EXPECT_EQ((*hs)[1].type, kind::integer);
  EXPECT_EQ((*hs)[2].type, kind::boolean);
  EXPECT_EQ((*hs)[4].name, "Method");  // a name, not the standard Mcp-Method
  for (const auto& h : *hs) EXPECT_NE(h.path.front(), "float_val");
}

TEST(param_headers, a_schema_without_annotations_has_none) {
  EXPECT_TRUE(valid(R"({"type":"object"})").empty());
  EXPECT_TRUE(valid(R"({"type":"object","properties":{"a":{"type":"string"}}})").empty());
  // A property may be called x-mcp-header, and instance data may contain the word.
  EXPECT_TRUE(valid(R"({"properties":{"x-mcp-header":{"type":"string"}},
                        "default":{"x-mcp-header":"D"},
                        "examples":[{"x-mcp-header":"E"}]})")
                  .empty());
}

TEST(param_headers, nested_object_properties_count) {
  const auto hs = valid(R"({"type":"object","properties":{
      "target":{"type":"object","properties":{
        "region":{"type":"string","x-mcp-header":"Region"},
        "zone":{"type":"object","properties":{"id":{"type":"integer","x-mcp-header":"Zone"}}}}},
      "dry":{"type":["boolean","null"],"x-mcp-header":"Dry-Run"}}})");
  ASSERT_EQ(hs.size(), 3u);
  EXPECT_EQ(hs[0].path, (std::vector<std::string>{"target", "region"}));
  EXPECT_EQ(hs[1].path, (std::vector<std::string>{"target", "zone", "id"}));
  EXPECT_EQ(hs[1].type, kind::integer);
  EXPECT_EQ(hs[2].name, "Dry-Run");
  EXPECT_EQ(hs[2].type, kind::boolean);  // nullable: a null value just sends no header
}

TEST(param_headers, names_must_be_non_empty_tokens) {
  // The suite's http-invalid-tool-headers names.
  EXPECT_NE(
      invalid_why(R"({"properties":{"v":{"type":"string","x-mcp-header":""}}})").find("empty"),
      std::string::npos);
  for (const char* name : {"My Region", "Region:Primary", "R\u00e9gion", "Region\t1", "A\r\nB",
                           "Region(1)", "a/b", "\"q\""}) {
    json::object schema{{"properties", {{"v", {{"type", "string"}, {"x-mcp-header", name}}}}}};
    const auto hs = mcp::param_headers(schema);
    ASSERT_FALSE(hs.ok()) << name;
    EXPECT_NE(hs.error().message.find("token"), std::string::npos) << hs.error().message;
  }
  // Every tchar is allowed.
  EXPECT_EQ(valid(R"({"properties":{"v":{"type":"string",
                      "x-mcp-header":"!#$%&'*+-.^_`|~09azAZ"}}})")
                .size(),
            1u);
  EXPECT_NE(invalid_why(R"({"properties":{"v":{"type":"string","x-mcp-header":7}}})")
                .find("not a string"),
            std::string::npos);
}

TEST(param_headers, names_are_unique_ignoring_case) {
  auto why = invalid_why(R"({"properties":{"field1":{"type":"string","x-mcp-header":"Region"},
                                           "field2":{"type":"string","x-mcp-header":"Region"}}})");
  EXPECT_NE(why.find("repeats"), std::string::npos) << why;
  why = invalid_why(R"({"properties":{"field1":{"type":"string","x-mcp-header":"MyField"},
                                      "field2":{"type":"string","x-mcp-header":"myfield"}}})");
  EXPECT_NE(why.find("'MyField'"), std::string::npos) << why;
  EXPECT_NE(why.find("arguments.field1"), std::string::npos) << why;
  // Also across nesting levels: the header namespace is the tool's.
  invalid_why(R"({"properties":{"a":{"type":"string","x-mcp-header":"X"},
                  "o":{"type":"object","properties":{"b":{"type":"integer","x-mcp-header":"x"}}}}})");
}

TEST(param_headers, only_string_integer_and_boolean_may_be_mirrored) {
  for (const char* type :
       {R"("number")", R"("object")", R"("array")", R"("null")", R"(["string","integer"])",
        R"(["null"])", R"(["number","null"])", R"(["string","null","null"])", "7"}) {
    const std::string schema =
        std::string(R"({"properties":{"p":{"type":)") + type + R"(,"x-mcp-header":"P"}}})";
    EXPECT_NE(invalid_why(schema).find("not string, integer or boolean"), std::string::npos)
        << type;
  }
  // No type at all: nothing says how to write the value.
  invalid_why(R"({"properties":{"p":{"enum":["a","b"],"x-mcp-header":"P"}}})");
}

TEST(param_headers, annotations_off_the_properties_chain_are_invalid) {
  // The spec: not through items, composition, conditionals, $ref, nor at the root.
  for (
      const char* schema : {
          R"({"properties":{"list":{"type":"array","items":{"type":"string","x-mcp-header":"I"}}}})",
          R"({"properties":{"p":{"anyOf":[{"type":"string","x-mcp-header":"A"},{"type":"integer"}]}}})",
          R"({"allOf":[{"properties":{"p":{"type":"string","x-mcp-header":"A"}}}]})",
          R"({"properties":{"p":{"not":{"type":"string","x-mcp-header":"N"}}}})",
          R"({"if":{"properties":{"p":{"type":"string","x-mcp-header":"C"}}}})",
          R"({"$defs":{"r":{"type":"string","x-mcp-header":"R"}},
               "properties":{"p":{"$ref":"#/$defs/r"}}})",
          R"({"properties":{"m":{"type":"object",
               "additionalProperties":{"type":"string","x-mcp-header":"M"}}}})",
          R"({"type":"string","x-mcp-header":"Root"})",
      }) {
    const auto why = invalid_why(schema);
    EXPECT_NE(why.find("not reached from the root through \"properties\""), std::string::npos)
        << why;
  }
  const auto why = invalid_why(
      R"({"properties":{"p":{"anyOf":[{"type":"integer"},{"type":"string","x-mcp-header":"A"}]}}})");
  EXPECT_NE(why.find("/properties/p/anyOf/1"), std::string::npos) << why;
}

TEST(param_headers, values_are_sent_plain_when_safe_and_base64_otherwise) {
  // The spec's encoding table.
  EXPECT_EQ(mcp::encode_header_value("us-west1"), "us-west1");
  EXPECT_EQ(mcp::encode_header_value("Hello, \u4e16\u754c"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
  EXPECT_EQ(mcp::encode_header_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
  EXPECT_EQ(mcp::encode_header_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
  EXPECT_EQ(mcp::encode_header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
  // And the suite's other cases.
  EXPECT_EQ(mcp::encode_header_value("us west 1"), "us west 1");
  EXPECT_EQ(mcp::encode_header_value(""), "");
  EXPECT_EQ(mcp::encode_header_value(" us-west1"), "=?base64?IHVzLXdlc3Qx?=");
  EXPECT_EQ(mcp::encode_header_value("us-west1 "), "=?base64?dXMtd2VzdDEg?=");
  EXPECT_EQ(mcp::encode_header_value("\tindented"), "=?base64?CWluZGVudGVk?=");
  EXPECT_EQ(mcp::encode_header_value("line1\r\nline2"), "=?base64?bGluZTENCmxpbmUy?=");
  EXPECT_FALSE(mcp::header_safe("a\tb"));  // tab is a control character
  EXPECT_FALSE(mcp::header_safe("del\x7f"));
  EXPECT_FALSE(mcp::header_safe(std::string_view("nul\0", 4)));
  EXPECT_FALSE(mcp::header_safe("=?base64?="));  // starts and ends like the sentinel
  EXPECT_TRUE(mcp::header_safe("=?base64?abc"));
  EXPECT_TRUE(mcp::header_safe("abc?="));
  EXPECT_TRUE(mcp::header_safe("~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./"));
}

TEST(param_headers, base64_values_decode_strictly) {
  EXPECT_EQ(mcp::decode_header_value("=?base64?SGVsbG8=?="), "Hello");
  EXPECT_EQ(mcp::decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?="), "Hello, \u4e16\u754c");
  EXPECT_EQ(mcp::decode_header_value("=?base64?"
                                     "?="),
            "");
  // The suite's http-custom-header-server-validation cases.
  EXPECT_EQ(mcp::decode_header_value("=?base64?SGVsbG8?="), std::nullopt);        // no padding
  EXPECT_EQ(mcp::decode_header_value("=?base64?SGVs!!!bG8=?="), std::nullopt);    // not alphabet
  EXPECT_EQ(mcp::decode_header_value("SGVsbG8="), "SGVsbG8=");                    // no prefix
  EXPECT_EQ(mcp::decode_header_value("=?base64?SGVsbG8="), "=?base64?SGVsbG8=");  // no suffix
  // Markers are case-sensitive, must not overlap, and padding only ends the text.
  EXPECT_EQ(mcp::decode_header_value("=?BASE64?SGVsbG8=?="), "=?BASE64?SGVsbG8=?=");
  EXPECT_EQ(mcp::decode_header_value("=?base64?="), "=?base64?=");
  EXPECT_EQ(mcp::decode_header_value("=?base64?SG=sbG8=?="), std::nullopt);
  EXPECT_EQ(mcp::decode_header_value("=?base64?====?="), std::nullopt);
  EXPECT_EQ(mcp::decode_header_value("=?base64?SGVs bG8=?="), std::nullopt);
  // OWS around a field value is not part of it.
  EXPECT_EQ(mcp::decode_header_value("  us-west1 \t"), "us-west1");
  EXPECT_EQ(mcp::decode_header_value(" =?base64?IHBhZGRlZCA=?= "), " padded ");
}

TEST(param_headers, every_byte_string_round_trips) {
  std::string s;
  for (int n = 0; n < 300; ++n) {
    const std::string enc = mcp::encode_header_value(s);
    for (char c : enc) ASSERT_TRUE(c >= 0x20 && c <= 0x7e) << n;
    ASSERT_EQ(mcp::decode_header_value(enc), s) << n;
    s += static_cast<char>((n * 37 + 11) % 256);
  }
}

TEST(param_headers, the_client_mirrors_present_values_by_type) {
  const auto hs = mcp::param_headers(custom_headers_schema());
  ASSERT_TRUE(hs);
  const auto args = json::parse(R"({"region":"us-west1","priority":42,"verbose":false,
      "empty_val":"","method_val":"test-method","float_val":3.14159,
      "non_ascii_val":"Hello, 世界","tab_val":"\tindented","query":"SELECT 1"})")
                        .as_object();
  const std::vector<std::pair<std::string, std::string>> want = {
      {"Mcp-Param-Region", "us-west1"},
      {"Mcp-Param-Priority", "42"},
      {"Mcp-Param-Verbose", "false"},
      {"Mcp-Param-EmptyVal", ""},
      {"Mcp-Param-Method", "test-method"},
      {"Mcp-Param-NonAscii", "=?base64?SGVsbG8sIOS4lueVjA==?="},
      {"Mcp-Param-Tab", "=?base64?CWluZGVudGVk?="}};
  EXPECT_EQ(mcp::param_header_fields(*hs, args), want);
  // test_custom_headers_null: null and absent values send nothing.
  EXPECT_EQ(
      mcp::param_header_fields(
          *hs, json::parse(R"({"region":"us-east1","priority":-7,"verbose":null})").as_object()),
      (std::vector<std::pair<std::string, std::string>>{{"Mcp-Param-Region", "us-east1"},
                                                        {"Mcp-Param-Priority", "-7"}}));
  EXPECT_TRUE(mcp::param_header_fields(*hs, json::object{}).empty());
}

TEST(param_headers, the_client_writes_what_the_body_holds) {
  const auto hs = valid(R"({"properties":{
      "n":{"type":"integer","x-mcp-header":"N"},
      "b":{"type":"boolean","x-mcp-header":"B"},
      "o":{"type":"object","properties":{"s":{"type":"string","x-mcp-header":"S"}}}}})");
  using fields = std::vector<std::pair<std::string, std::string>>;
  // Big integers stay exact; a value of the wrong JSON type is written as what it is, so the
  // server's schema check, not a header mismatch, is what answers.
  EXPECT_EQ(
      mcp::param_header_fields(
          hs, json::parse(R"({"n":9007199254740991,"b":true,"o":{"s":"x"}})").as_object()),
      (fields{{"Mcp-Param-N", "9007199254740991"}, {"Mcp-Param-B", "true"}, {"Mcp-Param-S", "x"}}));
  EXPECT_EQ(mcp::param_header_fields(
                hs, json::parse(R"({"n":"42","b":"yes","o":"not an object"})").as_object()),
            (fields{{"Mcp-Param-N", "42"}, {"Mcp-Param-B", "yes"}}));
  EXPECT_EQ(mcp::param_header_fields(
                hs, json::parse(R"({"n":42.0,"b":[true],"o":{"s":{"deep":1}}})").as_object()),
            (fields{{"Mcp-Param-N", "42"}}));
  EXPECT_EQ(mcp::param_header_fields(hs, json::parse(R"({"n":18446744073709551615})").as_object()),
            (fields{{"Mcp-Param-N", "18446744073709551615"}}));
}

TEST(param_headers, the_server_accepts_headers_that_agree) {
  const auto hs = mcp::param_headers(custom_headers_schema());
  ASSERT_TRUE(hs);
  const auto args = json::parse(R"({"region":"us-west1","priority":42,"verbose":true,
      "empty_val":"","non_ascii_val":"Hello, 世界","query":"q"})")
                        .as_object();
  header_map h;
  h.set("Region", "us-west1")
      .set("PRIORITY", "42")
      .set("verbose", "true")
      .set("EmptyVal", "")
      .set("NonAscii", "=?base64?SGVsbG8sIOS4lueVjA==?=")
      .set("Query", "anything");  // not annotated: never looked at
  EXPECT_EQ(h.check(*hs, args), "");
  for (const auto& n : h.asked) EXPECT_NE(n, "Query");
  // What param_header_fields writes is always accepted.
  header_map own;
  for (const auto& [name, value] : mcp::param_header_fields(*hs, args))
    own.set(name.substr(mcp::param_header_prefix.size()), value);
  EXPECT_EQ(own.check(*hs, args), "");
}

TEST(param_headers, the_server_compares_integers_as_numbers) {
  const auto hs = valid(R"({"properties":{"n":{"type":"integer","x-mcp-header":"N"}}})");
  const auto args = json::parse(R"({"n":42})").as_object();
  for (const char* same : {"42", "042", "42.0", "4.2e1", "420e-1", " 42 ", "=?base64?NDI=?="}) {
    header_map h;
    h.set("N", same);
    EXPECT_EQ(h.check(hs, args), "") << same;
  }
  for (const char* other : {"43", "+42", "0x2A", "42abc", "", "4 2", "inf", "nan", "-42", ".", "-",
                            "1e999", "forty-two"}) {
    header_map h;
    h.set("N", other);
    const auto msg = h.check(hs, args);
    EXPECT_NE(msg.find("Mcp-Param-N header value"), std::string::npos) << other << ": " << msg;
    EXPECT_NE(msg.find("body value '42'"), std::string::npos) << msg;
  }
  // Exact beyond a double's 53 bits.
  const auto big = json::parse(R"({"n":9007199254740993})").as_object();
  header_map b;
  b.set("N", "9007199254740992");
  EXPECT_NE(b.check(hs, big), "");
  b.set("N", "9007199254740993");
  EXPECT_EQ(b.check(hs, big), "");
  b.set("N", "-0");
  EXPECT_EQ(b.check(hs, json::parse(R"({"n":0})").as_object()), "");
}

TEST(param_headers, the_server_compares_strings_and_booleans_exactly) {
  const auto hs = valid(R"({"properties":{"s":{"type":"string","x-mcp-header":"S"},
                                          "b":{"type":"boolean","x-mcp-header":"B"}}})");
  const auto args = json::parse(R"({"s":"Hello","b":false})").as_object();
  header_map h;
  h.set("S", "=?base64?SGVsbG8=?=").set("B", "false");
  EXPECT_EQ(h.check(hs, args), "");
  h.set("B", "False");
  EXPECT_EQ(h.check(hs, args),
            "Header mismatch: Mcp-Param-B header value 'False' does not match body value 'false'");
  h.set("B", "0");
  EXPECT_NE(h.check(hs, args), "");
  h.set("B", "false").set("S", "hello");
  EXPECT_EQ(h.check(hs, args),
            "Header mismatch: Mcp-Param-S header value 'hello' does not match body value 'Hello'");
  // A plain value is literal even when it is valid Base64 of the body value.
  h.set("S", "SGVsbG8=");
  EXPECT_NE(h.check(hs, args), "");
  EXPECT_EQ(h.check(hs, json::parse(R"({"s":"SGVsbG8=","b":false})").as_object()), "");
}

TEST(param_headers, the_server_refuses_missing_extra_and_malformed_headers) {
  const auto hs = valid(R"({"properties":{"region":{"type":"string","x-mcp-header":"Region"},
      "o":{"type":"object","properties":{"id":{"type":"integer","x-mcp-header":"Id"}}}}})");
  const auto args = json::parse(R"({"region":"us-west1","o":{"id":5}})").as_object();
  header_map h;
  h.set("Region", "us-west1");
  EXPECT_EQ(h.check(hs, args),
            "Header mismatch: Mcp-Param-Id header is missing but arguments.o.id has a value");
  h.set("Id", "5");
  EXPECT_EQ(h.check(hs, args), "");
  // A value absent or null expects no header, and refuses one.
  header_map none;
  EXPECT_EQ(none.check(hs, json::object{}), "");
  EXPECT_EQ(none.check(hs, json::parse(R"({"region":null,"o":{"id":null}})").as_object()), "");
  EXPECT_EQ(h.check(hs, json::parse(R"({"o":{"id":5}})").as_object()),
            "Header mismatch: Mcp-Param-Region header is present ('us-west1') but "
            "arguments.region has no value");
  // Bad Base64 and characters no field value may hold.
  h.set("Region", "=?base64?dXMtd2VzdDE?=");
  EXPECT_NE(h.check(hs, args).find("Mcp-Param-Region header value '=?base64?dXMtd2VzdDE?=' is "
                                   "not valid Base64"),
            std::string::npos);
  h.set("Region", "us-west1\xc3\xa9");
  EXPECT_EQ(h.check(hs, args),
            "Header mismatch: Mcp-Param-Region header value contains invalid characters");
  h.set("Region", "us-west1\r\n");
  EXPECT_NE(h.check(hs, args), "");
  // A tab inside is a legal field value, though a client would have sent Base64.
  h.set("Region", "us\twest1");
  EXPECT_EQ(h.check(hs, json::parse(R"({"region":"us\twest1","o":{"id":5}})").as_object()), "");
  // An object or array where a primitive belongs has no header form: none is expected.
  EXPECT_EQ(none.check(hs, json::parse(R"({"region":["a"],"o":{"id":{"x":1}}})").as_object()), "");
}

TEST(param_headers, mismatch_messages_stay_short_and_valid_utf8) {
  const auto hs = valid(R"({"properties":{"s":{"type":"string","x-mcp-header":"S"}}})");
  header_map h;
  h.set("S", "=?base64?" + std::string(400, 'A') + "?=");
  const auto msg = h.check(hs, json::parse(R"({"s":"x"})").as_object());
  EXPECT_LT(msg.size(), 250u);
  EXPECT_NO_THROW(json::parse(json::serialize(json::value(msg))));
  h.set("S", "=?base64?/w==?=");  // decodes to the byte 0xff
  const auto bad = h.check(hs, json::parse(R"({"s":"x"})").as_object());
  EXPECT_NE(bad, "");
  EXPECT_EQ(bad.find('\xff'), std::string::npos);
}

}  // namespace
}  // namespace mcpmux
