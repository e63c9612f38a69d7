// Big results paged through the real daemon (max_result_bytes): a 300 KB answer cut and read
// back page by page with mcpmux__read_result in both eras on the socket, handles kept to their
// owners, structured content never cut. The cut itself and the store's expiry and eviction are
// unit-tested (tests/unit/test_result_pages.cpp).
#include <optional>
#include <regex>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

class result_pages : public daemon_test {};

const std::string read_tool = "mcpmux__read_result";

std::string dump(const std::optional<json::value>& v) {
  return v ? json::serialize(*v) : std::string("<no message>");
}

// The default cap (100 000 bytes) for "big"; 1000 for "small".
std::string config() {
  return fake_server_table("big", {}) + fake_server_table("small", {}, "max_result_bytes = 1000");
}

json::value with_meta(json::object p) {
  p["_meta"] = json::object{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                            {"io.modelcontextprotocol/clientCapabilities", json::object{}},
                            {"io.modelcontextprotocol/clientInfo",
                             json::object{{"name", "modern-test"}, {"version", "1"}}}};
  return p;
}

// A page's own text and what its note says (no note: the last page).
struct page {
  std::string text;
  std::string handle;
  std::optional<std::size_t> next;
};
page split(const std::string& text) {
  const auto at = text.rfind("\n\n[mcpmux: ");
  if (at == std::string::npos) return {text, {}, std::nullopt};
  static const std::regex note(R"re("handle": "([^"]+)", "offset": (\d+)\}\]$)re");
  std::smatch m;
  const std::string tail = text.substr(at);
  if (!std::regex_search(tail, m, note)) {
    ADD_FAILURE() << "no handle in the note: " << tail;
    return {text, {}, std::nullopt};
  }
  return {text.substr(0, at), m[1], std::stoul(m[2])};
}

bool lists(const std::optional<json::value>& tools_list, const std::string& name) {
  if (!tools_list) return false;
  const auto names = tool_names(*tools_list);
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool is_error(const std::optional<json::value>& r) {
  const auto* res = member(r, "result");
  const auto* e = res && res->is_object() ? res->as_object().if_contains("isError") : nullptr;
  return e && e->is_bool() && e->get_bool();
}

TEST_F(result_pages, a_long_result_is_cut_and_read_back_page_by_page) {
  start(config());
  client c = connect_initialized();
  EXPECT_FALSE(lists(c.request("tools/list"), read_tool));  // offered only after a cut

  auto r = c.call("big__huge_answer", json::object{{"bytes", 300000}});
  ASSERT_FALSE(is_error(r)) << dump(r).substr(0, 300);
  const auto first = split(first_text(*r));
  ASSERT_TRUE(first.next);
  EXPECT_EQ(first.text.size(), 100000u);  // no newline to prefer: the cap exactly
  EXPECT_NE(first_text(*r).find("200000 more bytes of this result"), std::string::npos);
  EXPECT_TRUE(c.wait_notification("notifications/tools/list_changed"));
  EXPECT_TRUE(lists(c.request("tools/list"), read_tool));

  std::string whole = first.text;
  std::optional<std::size_t> next = first.next;
  int pages = 1;
  while (next && pages < 10) {
    auto p = c.call(read_tool, json::object{{"handle", first.handle}, {"offset", *next}});
    ASSERT_FALSE(is_error(p)) << dump(p);
    const auto got = split(first_text(*p));
    whole += got.text;
    next = got.next;
    ++pages;
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(whole, std::string(300000, 'x'));

  // Another session is neither offered the tool nor given the text.
  client other = connect_initialized();
  EXPECT_FALSE(lists(other.request("tools/list"), read_tool));
  auto theirs = other.call(read_tool, json::object{{"handle", first.handle}, {"offset", 0}});
  EXPECT_TRUE(is_error(theirs)) << dump(theirs);
  EXPECT_NE(first_text(*theirs).find("belongs to another session"), std::string::npos);
  EXPECT_EQ(first_text(*theirs).find("xxxx"), std::string::npos);
  auto made_up = other.call(read_tool, json::object{{"handle", "r-00ff"}, {"offset", 0}});
  EXPECT_NE(first_text(*made_up).find("Unknown handle"), std::string::npos) << dump(made_up);
}

TEST_F(result_pages, a_modern_clients_handle_reads_on_its_next_connection) {
  start(config());
  std::string handle;
  std::size_t next = 0;
  {
    client a = connect();
    auto r = a.request("tools/call", with_meta({{"name", "big__huge_answer"},
                                                {"arguments", json::object{{"bytes", 150000}}}}));
    ASSERT_TRUE(member(r, "result")) << dump(r).substr(0, 300);
    EXPECT_EQ(member(r, "result")->at("resultType"), "complete");
    const auto first = split(first_text(*r));
    ASSERT_TRUE(first.next);
    handle = first.handle;
    next = *first.next;
  }
  // Stateless: the next request may come on another connection of the same user and profile.
  client b = connect();
  EXPECT_TRUE(lists(b.request("tools/list", with_meta({})), read_tool));
  auto p = b.request(
      "tools/call", with_meta({{"name", read_tool},
                               {"arguments", json::object{{"handle", handle}, {"offset", next}}}}));
  ASSERT_FALSE(is_error(p)) << dump(p);
  EXPECT_EQ(member(p, "result")->at("resultType"), "complete");
  EXPECT_EQ(first_text(*p), std::string(150000 - next, 'x'));  // the last page: no note

  // A legacy session is another owner.
  client legacy = connect_initialized();
  auto theirs = legacy.call(read_tool, json::object{{"handle", handle}, {"offset", 0}});
  EXPECT_TRUE(is_error(theirs)) << dump(theirs);
}

TEST_F(result_pages, structured_content_is_never_cut) {
  start(config());
  client c = connect_initialized();
  // Above the cap as received (parsed), within it as text: unchanged.
  auto fits = c.call("small__echo", json::object{{"text", std::string(450, 'e')}});
  ASSERT_FALSE(is_error(fits)) << dump(fits);
  EXPECT_EQ(member(fits, "result")->at("structuredContent").at("echo").as_string(),
            std::string(450, 'e'));
  // echo declares an outputSchema: its structured content above the cap fails the call.
  auto over = c.call("small__echo", json::object{{"text", std::string(2000, 'e')}});
  EXPECT_TRUE(is_error(over)) << dump(over).substr(0, 300);
  EXPECT_NE(first_text(*over).find("max_result_bytes (1000)"), std::string::npos) << dump(over);
  EXPECT_NE(first_text(*over).find("small__echo"), std::string::npos);
}

}  // namespace
}  // namespace mcpmux::test
