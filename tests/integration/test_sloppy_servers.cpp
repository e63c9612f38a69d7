// Integration tests of servers that are sloppy about the protocol's optional parts: lists that
// fail or hang, a refused logging/setLevel, no completions, tools without the capability, and
// servers that die over and over. Only the handshake and tools/list may fail a start.
#include <thread>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

using steady = std::chrono::steady_clock;

class sloppy_servers : public daemon_test {};

bool has_note(const server_view& v, std::string_view text) {
  return std::any_of(v.notes.begin(), v.notes.end(),
                     [&](const std::string& n) { return contains(n, text); });
}

std::size_t list_size(client& c, std::string_view method, std::string_view key) {
  auto r = c.request(method, json::object{});
  const auto* res = member(r, "result");
  if (res == nullptr || !res->is_object()) return 0;
  const auto* items = res->as_object().if_contains(key);
  return items && items->is_array() ? items->as_array().size() : 0;
}

// The kubernetes / puppeteer case: resources declared, resources/templates/list answered with
// -32601. The server is ready, its tools and resources are served, the templates are not, and
// the failure is a note (no restart, no last error). The list is asked again at list_changed.
TEST_F(sloppy_servers, a_refused_optional_list_is_a_note_not_a_crash_loop) {
  start(fake_server_table(
      "k8s", {"--resources", "2", "--prompts", "1", "--fault", "resources/templates/list=error"}));
  client c = connect_initialized();
  client ctl = connect();
  EXPECT_EQ(list_size(c, "resources/list", "resources"), 3u);  // r0, r1, shared://common
  EXPECT_EQ(list_size(c, "resources/templates/list", "resourceTemplates"), 0u);
  EXPECT_EQ(list_size(c, "prompts/list", "prompts"), 2u);
  EXPECT_EQ(first_text(*c.call("k8s__echo", {{"text", "hi"}})), "hi");

  // Stays ready: no restart in 1.5 s (a crash loop restarts within 0.5 s).
  std::this_thread::sleep_for(1500ms);
  const auto v = status_of(ctl, "k8s");
  EXPECT_EQ(v.state, "ready") << v.raw;
  EXPECT_EQ(v.restarts, 0) << v.raw;
  EXPECT_EQ(v.last_error, "") << v.raw;
  EXPECT_GT(v.tools, 0) << v.raw;
  ASSERT_EQ(v.notes.size(), 1u) << v.raw;
  EXPECT_TRUE(contains(v.notes[0], "resources/templates/list failed")) << v.raw;
  EXPECT_TRUE(contains(v.notes[0], "-32601")) << v.raw;
  EXPECT_TRUE(daemon_->wait_for_log("resources/templates/list failed")) << daemon_->log();

  // The CLI shows it as a note.
  auto cli = run_cli(daemon_->socket(), {"status"});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  // (The column is cut to the output's width, which the other columns' figures vary.)
  EXPECT_TRUE(contains(cli.out, "note: resources/templates/")) << cli.out;

  // A list_changed asks again (and fails again: the note stays, the server stays ready).
  auto before = server_log(ctl, "k8s");
  EXPECT_TRUE(contains(first_text(*c.call("k8s__change_lists")), "added"));
  EXPECT_TRUE(wait_until([&] { return list_size(c, "resources/list", "resources") == 4; }, 5s));
  const auto after = status_of(ctl, "k8s");
  EXPECT_EQ(after.state, "ready") << after.raw;
  EXPECT_TRUE(has_note(after, "resources/templates/list failed")) << after.raw;
}

// A malformed answer and no answer at all are tolerated the same way; the silent list costs at
// most the timeout, not a failed start.
TEST_F(sloppy_servers, malformed_and_unanswered_optional_lists_leave_those_lists_empty) {
  const auto t0 = steady::now();
  start(fake_server_table("odd",
                          {"--resources", "1", "--prompts", "2", "--fault",
                           "prompts/list=malformed", "--fault", "resources/list=silent"},
                          "timeout_ms = 1500"),
        {}, false);
  client ctl = connect();
  bool ok = false;
  auto v = wait_server(
      ctl, "odd", [](const auto& s) { return s.state == "ready"; }, 8s, &ok);
  ASSERT_TRUE(ok) << v.raw;
  EXPECT_LT(ms_since(t0), 6000) << "the silent list held the start back too long";
  EXPECT_TRUE(has_note(v, "prompts/list result has no prompts array")) << v.raw;
  EXPECT_TRUE(has_note(v, "resources/list: no answer in time")) << v.raw;
  EXPECT_EQ(v.restarts, 0) << v.raw;
  client c = connect_initialized();
  EXPECT_EQ(list_size(c, "prompts/list", "prompts"), 0u);
  EXPECT_EQ(list_size(c, "resources/list", "resources"), 0u);
  EXPECT_EQ(first_text(*c.call("odd__echo", {{"text", "still here"}})), "still here");
  std::this_thread::sleep_for(1000ms);
  v = status_of(ctl, "odd");
  EXPECT_EQ(v.state, "ready") << v.raw;
  EXPECT_EQ(v.restarts, 0) << v.raw;
}

// tools/list failing after a good handshake: ready with no tools and a clear last error, not a
// restart loop. Without the tools capability the same refusal is quiet.
TEST_F(sloppy_servers, a_failed_tool_list_is_ready_with_no_tools_and_a_last_error) {
  start(fake_server_table("broken", {"--fault", "tools/list=error"}) +
        fake_server_table("quiet", {"--no-tools-capability", "--fault", "tools/list=error"}) +
        fake_server_table("fine", {}));
  client ctl = connect();
  std::this_thread::sleep_for(1500ms);
  const auto b = status_of(ctl, "broken");
  EXPECT_EQ(b.state, "ready") << b.raw;
  EXPECT_EQ(b.tools, 0) << b.raw;
  EXPECT_EQ(b.restarts, 0) << b.raw;
  EXPECT_TRUE(contains(b.last_error, "tools/list failed")) << b.raw;
  EXPECT_TRUE(has_note(b, "tools/list failed")) << b.raw;

  const auto q = status_of(ctl, "quiet");
  EXPECT_EQ(q.state, "ready") << q.raw;
  EXPECT_EQ(q.tools, 0) << q.raw;
  EXPECT_EQ(q.last_error, "") << q.raw;
  EXPECT_TRUE(q.notes.empty()) << q.raw;

  client c = connect_initialized();
  auto list = c.request("tools/list");
  ASSERT_TRUE(list);
  for (const auto& name : tool_names(*list)) EXPECT_EQ(name.rfind("fine__", 0), 0u) << name;
  EXPECT_EQ(error_code(c.call("broken__echo", {{"text", "x"}})), -32602);
}

// A server that lists tools without declaring the capability still has them served.
TEST_F(sloppy_servers, tools_of_a_server_that_declares_no_capabilities_are_served) {
  start(fake_server_table("bare", {"--no-tools-capability"}));
  client c = connect_initialized();
  auto list = c.request("tools/list");
  ASSERT_TRUE(list);
  const auto names = tool_names(*list);
  EXPECT_NE(std::find(names.begin(), names.end(), "bare__echo"), names.end()) << joined(names);
  EXPECT_EQ(first_text(*c.call("bare__echo", {{"text", "ok"}})), "ok");
}

// A refused logging/setLevel is optional: the client's own setLevel succeeds, the server keeps
// working, status carries a note.
TEST_F(sloppy_servers, a_refused_log_level_is_a_note) {
  start(fake_server_table("nolog", {"--logging", "--fault", "logging/setLevel=error"}));
  client c = connect_initialized();
  client ctl = connect();
  auto r = c.request("logging/setLevel", json::object{{"level", "warning"}});
  EXPECT_EQ(error_code(r), 0) << json::serialize(*r);
  bool ok = false;
  auto v = wait_server(
      ctl, "nolog", [](const auto& s) { return has_note(s, "logging/setLevel failed"); }, 5s, &ok);
  EXPECT_TRUE(ok) << v.raw;
  EXPECT_EQ(v.state, "ready") << v.raw;
  EXPECT_EQ(first_text(*c.call("nolog__echo", {{"text", "a"}})), "a");
}

// completion/complete for a prompt of a server without completions: an empty answer, not an
// error (the gateway offers completions because another server does).
TEST_F(sloppy_servers, completion_on_a_server_without_completions_is_empty) {
  start(fake_server_table("plain", {"--prompts", "1"}) +
        fake_server_table("smart", {"--prompts", "1", "--completions"}));
  client c = connect_initialized();
  auto complete = [&](std::string_view prompt) {
    return c.request("completion/complete",
                     json::object{{"ref", {{"type", "ref/prompt"}, {"name", prompt}}},
                                  {"argument", {{"name", "topic"}, {"value", "x"}}}});
  };
  auto empty = complete("plain__prompt_0");
  ASSERT_TRUE(empty);
  EXPECT_EQ(error_code(empty), 0) << json::serialize(*empty);
  const auto* values = member(empty, "result");
  ASSERT_TRUE(values) << json::serialize(*empty);
  EXPECT_TRUE(values->at("completion").at("values").as_array().empty()) << json::serialize(*empty);
  auto real = complete("smart__prompt_0");
  ASSERT_TRUE(real);
  EXPECT_EQ(member(real, "result")->at("completion").at("values").as_array().size(), 3u)
      << json::serialize(*real);
}

// A server that keeps dying: backoff as before, and status names it crash-looping with the exit
// status and its last stderr lines; the daemon log says so once.
TEST_F(sloppy_servers, a_server_that_keeps_exiting_is_reported_as_crash_looping) {
  start(fake_server_table("loop", {"--exit-after-init", "--stderr-lines", "3"}) +
            fake_server_table("fine", {}),
        {}, false);
  client ctl = connect();
  bool ok = false;
  auto v = wait_server(
      ctl, "loop", [](const auto& s) { return s.crash_looping; }, 12s, &ok, 50ms);
  ASSERT_TRUE(ok) << v.raw;
  EXPECT_EQ(v.state, "backoff") << v.raw;
  EXPECT_GE(v.attempt, 3) << v.raw;
  EXPECT_TRUE(contains(v.last_error, "exited with code 0")) << v.raw;
  ASSERT_EQ(v.stderr_tail.size(), 3u) << v.raw;
  EXPECT_EQ(v.stderr_tail.back(), "boot line 2") << v.raw;
  EXPECT_TRUE(daemon_->wait_for_log("crash-looping: 3 failed attempts in a row")) << daemon_->log();
  auto cli = run_cli(daemon_->socket(), {"status"});
  EXPECT_TRUE(contains(cli.out, "crash-looping: ")) << cli.out;
  EXPECT_FALSE(status_of(ctl, "fine").crash_looping);
}

}  // namespace
}  // namespace mcpmux::test
