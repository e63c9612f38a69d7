// Integration tests of `isolation = "per-client"`: a private upstream per client session.
#include <algorithm>
#include <thread>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

class isolation : public daemon_test {};

std::string text_of(const std::optional<json::value>& r) {
  if (!r || !r->is_object()) return {};
  const auto* res = r->as_object().if_contains("result");
  if (!res || !res->is_object()) return {};
  const auto* content = res->as_object().if_contains("content");
  if (!content || !content->is_array() || content->as_array().empty()) return {};
  const auto* t = content->as_array()[0].as_object().if_contains("text");
  return t && t->is_string() ? std::string(t->as_string()) : std::string();
}

bool wait_children(daemon& d, std::size_t n, std::chrono::milliseconds timeout) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (d.children().size() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return d.children().size() == n;
}

// Each client gets its own process on first use; it goes away with the client; the shared
// instance keeps the catalogue; a crash in one client's process leaves the other's alone.
TEST_F(isolation, per_client_servers_get_one_process_per_session) {
  auto& d = start(fake_server_table("b", {"--tools", "1"}, "isolation = \"per-client\"\n"));
  ASSERT_TRUE(d.started());
  ASSERT_TRUE(wait_children(d, 1, std::chrono::seconds(5))) << "only the shared instance at first";
  const auto shared = d.children();

  auto c1 = connect_initialized();
  auto c2 = connect_initialized();
  EXPECT_EQ(text_of(c1.call("b__echo", json::object{{"text", "one"}})), "one");
  EXPECT_TRUE(wait_children(d, 2, std::chrono::seconds(5))) << "client 1 got its own process";
  EXPECT_EQ(text_of(c2.call("b__echo", json::object{{"text", "two"}})), "two");
  EXPECT_TRUE(wait_children(d, 3, std::chrono::seconds(5))) << "client 2 got its own process";
  auto all = d.children();
  EXPECT_NE(std::find(all.begin(), all.end(), shared[0]), all.end()) << "the shared instance stays";

  // Client 1's process crashes: client 2's call goes on in its own process, unaffected.
  auto crashed = c1.call("b__crash", json::object{{"code", 5}});
  EXPECT_TRUE(crashed && crashed->as_object().contains("error"))
      << (crashed ? json::serialize(*crashed) : "");
  EXPECT_EQ(text_of(c2.call("b__echo", json::object{{"text", "still"}})), "still");

  // Client 1 leaves: its process goes away; client 2's stays.
  c1.close();
  EXPECT_TRUE(wait_children(d, 2, std::chrono::seconds(8))) << d.log();
  EXPECT_EQ(text_of(c2.call("b__echo", json::object{{"text", "after"}})), "after");
  EXPECT_TRUE(d.wait_for_log("starting a private b for session"));
}

}  // namespace
}  // namespace mcpmux::test
