// Big results paged: the cut (UTF-8 and line boundaries, the note), the result's text read back
// page by page exactly, the store's expiry, eviction and ownership (core/result_pages).
#include "core/result_pages.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <chrono>
#include <regex>

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

const std::string owner = "session 1";

json::object text_result(std::string text) {
  return json::object{
      {"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}

std::string text_of(const json::object& result, std::size_t item = 0) {
  return std::string(result.at("content").as_array().at(item).at("text").as_string());
}

// A page's own text and its note's handle and next offset (none: the last page).
struct split_page {
  std::string text;
  std::string handle;
  std::optional<std::size_t> next;
};
split_page split(const std::string& page) {
  const auto at = page.rfind(note_start);
  if (at == std::string::npos) return {page, {}, std::nullopt};
  std::smatch m;
  const std::string note = page.substr(at);
  static const std::regex re(R"re("handle": "([^"]+)", "offset": (\d+)\}\]$)re");
  EXPECT_TRUE(std::regex_search(note, m, re)) << note;
  return {page.substr(0, at), m[1], std::stoul(m[2])};
}

// Reads a handle to its end through the tool's answers; the pages joined.
std::string read_all(result_store& store, const std::string& handle, std::size_t offset,
                     steady_clock::time_point now, int* pages = nullptr) {
  std::string whole;
  for (int guard = 0; guard < 1000; ++guard) {
    const auto answer = read_result_answer(json::object{{"handle", handle}, {"offset", offset}},
                                           "mcpmux__read_result", store, owner, now);
    EXPECT_FALSE(answer.contains("isError")) << json::serialize(answer);
    const auto p = split(text_of(answer));
    whole += p.text;
    if (pages) ++*pages;
    if (!p.next) return whole;
    EXPECT_EQ(p.handle, handle);
    offset = *p.next;
  }
  ADD_FAILURE() << "no end";
  return whole;
}

page_rules rules(std::size_t cap) {
  return {.cap = cap, .read_tool = "mcpmux__read_result", .what = "tool \"big__dump\""};
}

TEST(PageEnd, WholeWhenItFitsElseACharacterBoundaryPreferringALineEnd) {
  EXPECT_EQ(page_end("hello", 0, 5), 5u);
  EXPECT_EQ(page_end("hello", 2, 3), 5u);
  // "é" is two bytes at 3..4: a cap of 4 ends before it, never inside.
  EXPECT_EQ(page_end("abc\xC3\xA9xyz", 0, 4), 3u);
  // A newline in the last tenth is preferred (cap 100: bytes 90..99)...
  std::string text(200, 'x');
  text[95] = '\n';
  EXPECT_EQ(page_end(text, 0, 100), 96u);
  // ...one earlier is not: the page stays full.
  text[95] = 'x';
  text[50] = '\n';
  EXPECT_EQ(page_end(text, 0, 100), 100u);
  // From an offset, the same rules apply to the page.
  text[150] = '\n';
  EXPECT_EQ(page_end(text, 60, 100), 151u);
}

TEST(CutResult, ShortResultsAreLeftAlone) {
  result_store store;
  auto r = text_result("small");
  auto out = cut_result(r, rules(100), store, owner, steady_clock::now());
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, cut_outcome::unchanged);
  EXPECT_EQ(text_of(r), "small");
  EXPECT_FALSE(store.has_cut(owner));
}

TEST(CutResult, TheRestReadsBackPageByPageToTheOriginalExactly) {
  // 300 KB of lines with two- and four-byte characters, cut at 100 000 bytes.
  std::string original;
  for (int i = 0; original.size() < 300000; ++i)
    original += "line " + std::to_string(i) + " caf\xC3\xA9 \xF0\x9F\x98\x80 " +
                std::string(static_cast<std::size_t>(i % 97), 'z') + "\n";
  result_store store;
  const auto now = steady_clock::now();
  auto r = text_result(original);
  auto out = cut_result(r, rules(100000), store, owner, now);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, cut_outcome::cut);
  EXPECT_TRUE(store.has_cut(owner));
  const auto first = split(text_of(r));
  ASSERT_TRUE(first.next);
  EXPECT_LE(first.text.size(), 100000u);
  EXPECT_GE(first.text.size(), 90000u);
  EXPECT_EQ(first.text.back(), '\n');  // a line's end, in the last tenth
  EXPECT_EQ(*first.next, first.text.size());
  EXPECT_THAT(text_of(r), HasSubstr(std::to_string(original.size() - first.text.size()) +
                                    " more bytes of this result; read them with "
                                    "mcpmux__read_result {\"handle\": \""));
  int pages = 0;
  const auto rest = read_all(store, first.handle, *first.next, now, &pages);
  EXPECT_EQ(first.text + rest, original);
  EXPECT_EQ(pages, 3);  // ~100 KB each
}

TEST(CutResult, LaterItemsJoinTheRestAndAnEmbeddedResourceGetsItsNoteApart) {
  result_store store;
  const auto now = steady_clock::now();
  json::object r{
      {"content",
       json::array{json::object{{"type", "text"}, {"text", std::string(60, 'a')}},
                   json::object{{"type", "resource"},
                                {"resource", json::object{{"uri", "file:///x"},
                                                          {"text", std::string(80, 'b')}}}},
                   json::object{{"type", "image"}, {"data", "AAAA"}, {"mimeType", "image/png"}},
                   json::object{{"type", "text"}, {"text", std::string(30, 'c')}}}}};
  auto out = cut_result(r, rules(100), store, owner, now);
  ASSERT_TRUE(out);
  ASSERT_EQ(*out, cut_outcome::cut);
  const auto& items = r.at("content").as_array();
  ASSERT_EQ(items.size(), 4u);  // text, resource (cut), its note, the image; the last text gone
  EXPECT_EQ(text_of(r, 0), std::string(60, 'a'));
  EXPECT_EQ(items[1].at("resource").at("text").as_string(), std::string(40, 'b'));
  EXPECT_EQ(items[1].at("resource").at("uri").as_string(), "file:///x");
  const auto note = split("\n\n" + text_of(r, 2));
  ASSERT_TRUE(note.next);
  EXPECT_EQ(*note.next, 40u);
  EXPECT_EQ(items[3].at("type").as_string(), "image");
  EXPECT_EQ(read_all(store, note.handle, 40, now),
            std::string(40, 'b') + "\n\n" + std::string(30, 'c'));
}

TEST(CutResult, StructuredContentIsNeverCut) {
  result_store store;
  const auto now = steady_clock::now();
  json::object big{{"rows", std::string(500, 'r')}};
  auto with_schema = text_result("short");
  with_schema["structuredContent"] = big;
  auto r = rules(100);
  r.output_schema = true;
  auto out = cut_result(with_schema, r, store, owner, now);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, cut_outcome::refused);
  EXPECT_TRUE(with_schema.at("isError").as_bool());
  EXPECT_FALSE(with_schema.contains("structuredContent"));
  EXPECT_THAT(text_of(with_schema), HasSubstr("max_result_bytes (100)"));
  EXPECT_THAT(text_of(with_schema), HasSubstr("tool \"big__dump\""));

  // Below the cap it stays whole while the text beside it is cut.
  auto small = text_result(std::string(300, 't'));
  small["structuredContent"] = json::object{{"n", 1}};
  out = cut_result(small, r, store, owner, now);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, cut_outcome::cut);
  EXPECT_EQ(small.at("structuredContent"), (json::object{{"n", 1}}));

  // Without a schema it is dropped: its copy in the text is what is paged.
  auto no_schema = text_result(std::string(300, 't'));
  no_schema["structuredContent"] = big;
  out = cut_result(no_schema, rules(100), store, owner, now);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, cut_outcome::cut);
  EXPECT_FALSE(no_schema.contains("structuredContent"));
}

TEST(CutResult, ResourceContentsTextIsCutAndABlobAboveTheCapFails) {
  result_store store;
  const auto now = steady_clock::now();
  json::object read{{"contents", json::array{json::object{{"uri", "file:///log"},
                                                          {"text", std::string(250, 'l')}}}}};
  auto out = cut_result(read, rules(100), store, owner, now);
  ASSERT_TRUE(out);
  EXPECT_EQ(*out, cut_outcome::cut);
  const auto first = split(std::string(read.at("contents").as_array()[0].at("text").as_string()));
  ASSERT_TRUE(first.next);
  EXPECT_EQ(first.text + read_all(store, first.handle, *first.next, now), std::string(250, 'l'));

  json::object blob{{"contents", json::array{json::object{{"uri", "file:///img"},
                                                          {"blob", std::string(400, 'A')}}}}};
  auto refused = cut_result(blob, rules(100), store, owner, now);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("max_result_bytes (100)"));
  EXPECT_THAT(refused.error().message, HasSubstr("tool \"big__dump\""));
}

TEST(ResultStore, AHandleIsItsOwnersOnly) {
  result_store store;
  const auto now = steady_clock::now();
  auto h = store.keep(owner, "secret text of session 1", 100, now);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->size(), 34u);  // "r-" and 128 random bits in hex
  auto mine = store.read(*h, owner, 0, now);
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->text, "secret text of session 1");
  auto theirs = store.read(*h, "session 2", 0, now);
  ASSERT_FALSE(theirs);
  EXPECT_THAT(theirs.error().message, HasSubstr("belongs to another session"));
  EXPECT_THAT(theirs.error().message, ::testing::Not(HasSubstr("secret")));
  auto unknown = store.read("r-0123", owner, 0, now);
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error().message, HasSubstr("Unknown handle \"r-0123\""));
  auto past = store.read(*h, owner, 99, now);
  ASSERT_FALSE(past);
  EXPECT_THAT(past.error().message, HasSubstr("past the end of the result (24 bytes)"));
  store.forget(owner);
  EXPECT_FALSE(store.has_cut(owner));
  EXPECT_EQ(store.bytes(), 0u);
  EXPECT_FALSE(store.read(*h, owner, 0, now));
}

TEST(ResultStore, AnOffsetInsideACharacterReadsFromItsStart) {
  result_store store;
  const auto now = steady_clock::now();
  auto h = store.keep(owner,
                      "ab\xE2\x82\xAC"
                      "cd",
                      100, now);  // "€" at 2..4
  ASSERT_TRUE(h);
  auto p = store.read(*h, owner, 3, now);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->offset, 2u);
  EXPECT_EQ(p->text,
            "\xE2\x82\xAC"
            "cd");
}

TEST(ResultStore, HandlesExpireAfterTheirLastRead) {
  result_store store({.max_bytes = 1000, .max_handles = 10, .ttl = 10min});
  const auto t0 = steady_clock::now();
  auto h = store.keep(owner, "kept", 100, t0);
  ASSERT_TRUE(h);
  EXPECT_TRUE(store.read(*h, owner, 0, t0 + 9min));  // read: ten more minutes
  EXPECT_TRUE(store.read(*h, owner, 0, t0 + 18min));
  auto late = store.read(*h, owner, 0, t0 + 29min);
  ASSERT_FALSE(late);
  EXPECT_THAT(late.error().message, HasSubstr("expired"));
  EXPECT_THAT(late.error().message, HasSubstr("10 minutes"));
  EXPECT_EQ(store.handles(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
  // Another owner is not told more than that it is not theirs.
  auto theirs = store.read(*h, "session 2", 0, t0 + 29min);
  ASSERT_FALSE(theirs);
  EXPECT_THAT(theirs.error().message, HasSubstr("another session"));
}

TEST(ResultStore, TheLeastRecentlyReadAreEvictedByBytesAndCount) {
  result_store store({.max_bytes = 250, .max_handles = 3, .ttl = 10min});
  const auto t0 = steady_clock::now();
  auto a = store.keep(owner, std::string(100, 'a'), 100, t0);
  auto b = store.keep(owner, std::string(100, 'b'), 100, t0 + 1s);
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(store.read(*a, owner, 0, t0 + 2s));  // a is now the more recent
  auto c = store.keep(owner, std::string(100, 'c'), 100, t0 + 3s);
  ASSERT_TRUE(c);
  EXPECT_EQ(store.bytes(), 200u);
  auto gone = store.read(*b, owner, 0, t0 + 4s);
  ASSERT_FALSE(gone);
  EXPECT_THAT(gone.error().message, HasSubstr("to make room"));
  EXPECT_TRUE(store.read(*a, owner, 0, t0 + 4s));
  // By count: three handles at most.
  auto d = store.keep(owner, "d", 100, t0 + 5s);
  auto e = store.keep(owner, "e", 100, t0 + 6s);
  ASSERT_TRUE(d && e);
  EXPECT_EQ(store.handles(), 3u);
  // A text bigger than the whole store is not kept.
  auto huge = store.keep(owner, std::string(300, 'h'), 100, t0 + 7s);
  ASSERT_FALSE(huge);
  EXPECT_THAT(huge.error().message, HasSubstr("more than mcpmux keeps"));
}

TEST(ReadResultAnswer, BadArgumentsAreToolErrors) {
  result_store store;
  const auto now = steady_clock::now();
  const auto no_handle =
      read_result_answer(json::object{}, "mcpmux__read_result", store, owner, now);
  EXPECT_TRUE(no_handle.at("isError").as_bool());
  EXPECT_THAT(text_of(no_handle), HasSubstr("needs the \"handle\""));
  const auto bad_offset = read_result_answer(json::object{{"handle", "r-1"}, {"offset", -5}},
                                             "mcpmux__read_result", store, owner, now);
  EXPECT_THAT(text_of(bad_offset), HasSubstr("non-negative integer"));
  const auto tool = read_result_tool("mcpmux__read_result");
  EXPECT_EQ(tool.at("name").as_string(), "mcpmux__read_result");
  EXPECT_TRUE(tool.at("annotations").at("readOnlyHint").as_bool());
}

}  // namespace
}  // namespace mcpmux
