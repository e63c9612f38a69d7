// The quick scan of a message's JSON (protocol/json_scan): what it records, what it leaves to
// the full parser, and that it never vouches for a text Boost.JSON's parser refuses.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <random>
#include <string>

#include "protocol/json_scan.hpp"

namespace mcpmux {
namespace {

namespace json = boost::json;

// The (first) recorded member `key` of the message (parent -1) or of member `parent`'s object.
const json_scan::member* find(const json_scan& s, std::string_view key, int parent = -1) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i].parent == parent && s[i].key == key) return &s[i];
  return nullptr;
}
// The index of a recorded member (a parent for find).
int index_of(const json_scan& s, const json_scan::member* m) {
  return static_cast<int>(m - &s[0]);
}

TEST(JsonScan, RecordsTheMessagesMembersAndThoseOfTheNestedOne) {
  json_scan s;
  const std::string text =
      R"( {"jsonrpc":"2.0", "id" : 7,"params":{"name":"a__x","arguments":{"q":[1,{"deep":true}]}},)"
      R"("result":{"not":"recorded"}} )";
  ASSERT_TRUE(s.scan(text, "params"));
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(find(s, "jsonrpc")->value, R"("2.0")");
  EXPECT_EQ(find(s, "id")->value, "7");
  const auto* params = find(s, "params");
  ASSERT_NE(params, nullptr);
  const int p = index_of(s, params);
  EXPECT_EQ(find(s, "name", p)->value, R"("a__x")");
  EXPECT_EQ(find(s, "arguments", p)->value, R"({"q":[1,{"deep":true}]})");
  EXPECT_EQ(find(s, "result")->value, R"({"not":"recorded"})");
  EXPECT_EQ(find(s, "not", index_of(s, find(s, "result"))), nullptr);
  EXPECT_EQ(find(s, "name"), nullptr);  // not a member of the message
  // The spans are the text's own bytes.
  EXPECT_EQ(find(s, "id")->value.data(), text.data() + text.find('7'));
}

TEST(JsonScan, VouchesForWhatItCanCheckQuickly) {
  json_scan s;
  for (const std::string text : {
           R"({})", R"({"a":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00"})",
           "{\"a\":\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f\"}",
           R"({"a":[-0, 0.5, -12.25, 123456789012345678, true, false, null, [], {}, ""]})",
           R"({"a":{"\u0061":1}})",  // an escaped key where none is recorded is fine
       }) {
    EXPECT_TRUE(s.scan(text, "")) << text;
    EXPECT_TRUE(!json::parse(text).is_null()) << text;
  }
  std::string deep = R"({"a":)";
  for (int i = 0; i < 63; ++i) deep += "[";
  for (int i = 0; i < 63; ++i) deep += "]";
  deep += "}";
  EXPECT_TRUE(s.scan(deep, ""));  // 64 deep
}

TEST(JsonScan, LeavesTheRestToTheFullParser) {
  json_scan s;
  for (const std::string text : {
           // not JSON
           "",
           " ",
           "{",
           R"({"a":1,})",
           R"({"a":01})",
           R"({"a":1.})",
           R"({"a":-})",
           R"({"a" 1})",
           R"({"a":1} x)",
           R"({"a":tru})",
           R"({"a":"x)",
           "{\"a\":\"\x01\"}",
           R"({"a":"\x"})",
           R"({"a":"\u12G4"})",
           R"({'a':1})",
           R"({"a":[1 2]})",
           "{\"a\":\"\xc0\x80\"}",          // overlong
           "{\"a\":\"\xed\xa0\x80\"}",      // a surrogate
           "{\"a\":\"\xf4\x90\x80\x80\"}",  // past U+10FFFF
           "{\"a\":\"\xe2\x82\"}",          // cut short
           "{\"a\":\"\xff\"}",
           // JSON the scan does not vouch for
           R"([{"a":1}])",
           R"("a")",
           R"({"a":1e5})",
           R"({"a":1234567890123456789})",
           R"({"a":"\uD83D"})",
           R"({"a":"\uDE00\uD83D"})",
           R"({"\u0061":1})",
       }) {
    EXPECT_FALSE(s.scan(text, "")) << text;
  }
  // A key twice is recorded twice, for the reader to judge.
  ASSERT_TRUE(s.scan(R"({"p":{"a":1,"a":2}})", "p"));
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(find(s, "a", 0)->value, "1");
  EXPECT_EQ(s[2].value, "2");
  std::string deep = R"({"a":)";
  for (int i = 0; i < 64; ++i) deep += "[";
  for (int i = 0; i < 64; ++i) deep += "]";
  deep += "}";
  EXPECT_FALSE(s.scan(deep, ""));  // 65 deep
  std::string wide = "{";
  for (std::size_t i = 0; i <= json_scan::capacity; ++i)
    wide += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  wide += "}";
  EXPECT_FALSE(s.scan(wide, ""));  // more members than it keeps
}

TEST(JsonScan, ReadsPlainIntegers) {
  EXPECT_EQ(json_scan::integer("42"), 42);
  EXPECT_EQ(json_scan::integer("-7"), -7);
  EXPECT_EQ(json_scan::integer("123456789012345678"), 123456789012345678);
  EXPECT_FALSE(json_scan::integer("1.5"));
  EXPECT_FALSE(json_scan::integer("\"1\""));
  EXPECT_FALSE(json_scan::integer("-"));
  EXPECT_FALSE(json_scan::integer("1234567890123456789"));
}

// Mutated messages: whatever the scan vouches for, Boost.JSON parses, to an object whose
// recorded members are the ones the scan saw.
// Strings are read sixteen bytes at a time, then eight: a byte that ends or breaks the plain run
// is found at every place in a block and across blocks, as a value and as a key.
TEST(JsonScan, FindsEveryStringByteThatMattersWhereverItIs) {
  const std::string bytes[] = {"\"",   "\\",       "\\n",      std::string(1, '\x01'),
                               "\x1f", "\x7f",     " ",        "\x80",
                               "\xff", "\xc3\xa9", "\xe2\x82", "~"};
  json_scan s;
  for (std::size_t length = 0; length <= 40; ++length)
    for (std::size_t at = 0; at <= length; ++at)
      for (const auto& b : bytes) {
        std::string str(length, 'a');
        str.insert(at, b);
        for (const bool as_key : {false, true}) {
          if (as_key && b == "\\n") continue;  // an escaped key is the full parser's
          const std::string text = as_key ? "{\"" + str + "\":1}" : "{\"k\":\"" + str + "\"}";
          boost::system::error_code ec;
          (void)json::parse(text, ec);
          // What it vouches for, Boost accepts; and these it vouches for whenever Boost does.
          ASSERT_EQ(s.scan(text, ""), !ec) << text;
          if (ec) continue;
          ASSERT_EQ(s.size(), 1u) << text;
          EXPECT_EQ(as_key ? s[0].key : s[0].value, as_key ? str : "\"" + str + "\"") << text;
        }
      }
}

TEST(JsonScan, NeverVouchesForWhatTheFullParserRefuses) {
  const std::string seeds[] = {
      R"({"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"x","n":[1,2.5,null,true]}}})",
      R"({"jsonrpc":"2.0","id":"s","result":{"content":[{"type":"text","text":"caf\u00e9 \uD83D\uDE00"}],"isError":false}})",
      "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"text\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"}"
      "}",
  };
  const std::string alphabet =
      "{}[]\":,\\ u0123456789.eE-+tfnrlsa\x7f\x80\xbf\xc3\xe2\xed\xf0\xf4\xff";
  std::mt19937 rng(44);
  json_scan s;
  int vouched = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string text = seeds[rng() % std::size(seeds)];
    for (int k = 1 + rng() % 3; k > 0; --k) {
      const std::size_t at = rng() % (text.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0:
          text.insert(at, 1, c);
          break;
        case 1:
          if (at < text.size()) text.erase(at, 1);
          break;
        default:
          if (at < text.size()) text[at] = c;
      }
    }
    if (!s.scan(text, rng() % 2 ? "params" : "result")) continue;
    ++vouched;
    boost::system::error_code ec;
    const auto v = json::parse(text, ec);
    ASSERT_FALSE(ec) << text;
    ASSERT_TRUE(v.is_object()) << text;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const auto& m = s[i];
      const auto twice = [&] {
        for (std::size_t j = 0; j < s.size(); ++j)
          if (j != i && s[j].parent == m.parent && s[j].key == m.key) return true;
        return false;
      };
      if (twice()) continue;  // a key twice: its reader's to judge
      const auto& owner =
          m.parent < 0 ? v.get_object() : v.get_object().at(s[m.parent].key).get_object();
      const auto* got = owner.if_contains(m.key);
      ASSERT_NE(got, nullptr) << text;
      EXPECT_EQ(*got, json::parse(m.value)) << text;
    }
  }
  EXPECT_GT(vouched, 1000);  // the mutations leave enough valid texts to mean something
}

}  // namespace
}  // namespace mcpmux
