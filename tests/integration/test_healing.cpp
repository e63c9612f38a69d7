// Integration tests of self-healing: crash, retry, backoff, hang, tool cache, gate, restart.
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

#include "core/state_store.hpp"
#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

using steady = std::chrono::steady_clock;

struct killed_call {
  std::optional<json::value> reply;
  long long answered_after_kill_ms = 0;
  std::size_t times_sent = 0;  ///< how often the server saw the call (killed one and successor)
};

class healing : public daemon_test {
 protected:
  killed_call kill_during_call(std::vector<std::string> fake_args, std::string extra);
};

std::string dump(const std::optional<json::value>& v) {
  return v ? json::serialize(*v) : std::string("<no message>");
}

// Every line the fake server logged with --log, parsed.
std::vector<json::value> logged(const std::string& path) {
  std::vector<json::value> out;
  for (const auto& line : read_lines(path)) out.push_back(parse_or_null(line));
  return out;
}

// The wire ids of every tools/call for `tool` the fake server(s) logging to `path` received.
std::vector<json::value> wire_ids_of_calls(const std::string& path, std::string_view tool) {
  std::vector<json::value> out;
  for (const auto& m : logged(path)) {
    if (!m.is_object() || m.as_object().if_contains("method") == nullptr) continue;
    if (m.at("method") != "tools/call") continue;
    const auto* p = m.as_object().if_contains("params");
    if (p && p->is_object() && p->as_object().if_contains("name") &&
        p->at("name") == json::value(tool))
      out.push_back(m.at("id"));
  }
  return out;
}

bool logged_cancel_for(const std::string& path, const json::value& id) {
  for (const auto& m : logged(path)) {
    if (!m.is_object() || m.as_object().if_contains("method") == nullptr) continue;
    if (m.at("method") != "notifications/cancelled") continue;
    const auto* p = m.as_object().if_contains("params");
    if (p && p->is_object() && p->as_object().if_contains("requestId") && p->at("requestId") == id)
      return true;
  }
  return false;
}

json::value tools_call(std::int64_t id, std::string_view tool, json::value args) {
  return json::object{{"jsonrpc", "2.0"},
                      {"id", id},
                      {"method", "tools/call"},
                      {"params", {{"name", tool}, {"arguments", std::move(args)}}}};
}

int count_prefixed(const std::vector<std::string>& lines, std::string_view prefix) {
  int n = 0;
  for (const auto& l : lines) n += l.rfind(prefix, 0) == 0;
  return n;
}

bool is_subset(const std::vector<std::string>& small, const std::vector<std::string>& big) {
  std::set<std::string> b(big.begin(), big.end());
  for (const auto& s : small)
    if (!b.count(s)) return false;
  return true;
}

int count_notifications(client& c, std::string_view method) {
  int n = 0;
  for (const auto& m : c.notifications())
    if (m.is_object() && m.as_object().if_contains("method") &&
        m.at("method") == json::value(method) && !m.as_object().contains("id"))
      ++n;
  return n;
}

bool is_fake_server(pid_t pid) {
  return contains(read_file("/proc/" + std::to_string(pid) + "/cmdline"), "fake_mcp_server");
}

// Leaves no SIGSTOPped fake server behind when a test fails half-way.
struct stopped_guard {
  pid_t pid;
  ~stopped_guard() {
    if (pid > 0 && process_exists(pid) && is_fake_server(pid)) {
      ::kill(pid, SIGCONT);
      ::kill(pid, SIGKILL);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// 1. An idle server killed with SIGKILL comes back within the first backoff step; its tools stay.

TEST_F(healing, killed_idle_server_is_back_after_first_backoff_and_tools_never_leave) {
  start(fake_server_table("idle", {"--tools", "3"}) + fake_server_table("other", {}));
  client c = connect_initialized();
  client ctl = connect();
  auto before = c.request("tools/list");
  ASSERT_TRUE(member(before, "result")) << dump(before);
  const auto names0 = tool_names(*before);
  ASSERT_GE(names0.size(), 4u) << dump(before);
  const auto s0 = status_of(ctl, "idle");
  ASSERT_EQ(s0.state, "ready") << s0.raw;
  ASSERT_GT(s0.pid, 0) << s0.raw;
  EXPECT_EQ(s0.last_error_at_ms, -1) << "no error yet: " << s0.raw;
  c.notifications().clear();

  const auto killed_at = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  ASSERT_EQ(::kill(s0.pid, SIGKILL), 0);
  const auto t0 = steady::now();
  int polls = 0;
  std::int64_t back_after = -1;
  server_view s;
  std::set<std::string> states_seen;
  while (ms_since(t0) < 3000) {
    auto r = c.request("tools/list", json::object{}, 2s);
    ASSERT_TRUE(member(r, "result")) << "tools/list during the outage: " << dump(r);
    const auto names = tool_names(*r);
    ++polls;
    ASSERT_TRUE(is_subset(names0, names))
        << "the tool list shrank " << ms_since(t0) << " ms after the kill: " << dump(r);
    s = status_of(ctl, "idle");
    states_seen.insert(s.state);
    if (s.state == "ready" && s.pid > 0 && s.pid != s0.pid) {
      back_after = ms_since(t0);
      break;
    }
    std::this_thread::sleep_for(20ms);
  }
  std::printf("[ healing  ] idle server back after %lld ms (%d tools/list polls)\n",
              static_cast<long long>(back_after), polls);
  ASSERT_GE(back_after, 0) << "not ready again within 3 s; last status " << s.raw;
  EXPECT_TRUE(states_seen.count("backoff")) << "the outage was not visible as backoff";
  // Backoff 500 ms ± 20 %, plus the start of the fake server.
  EXPECT_GE(back_after, 400) << "reconnected before the first backoff step";
  EXPECT_LE(back_after, 1500);
  EXPECT_EQ(s.attempt, 1) << s.raw;
  EXPECT_TRUE(contains(s.last_error, "signal 9") || contains(s.last_error, "Killed")) << s.raw;
  // When it happened, kept after the recovery like the error itself.
  EXPECT_GE(s.last_error_at_ms, killed_at) << s.raw;
  EXPECT_LE(s.last_error_at_ms, killed_at + 3000) << s.raw;

  // The backoff the daemon chose is within 500 ms ± 20 %.
  bool delay_ok = false;
  for (const auto& l : server_log(ctl, "idle")) {
    int d = 0;
    if (std::sscanf(l.c_str(), "reconnecting in %dms", &d) == 1) {
      EXPECT_GE(d, 400) << l;
      EXPECT_LE(d, 600) << l;
      delay_ok = true;
    }
  }
  EXPECT_TRUE(delay_ok) << joined(server_log(ctl, "idle"));

  // Same tools, same list, and no list_changed churn for a server that came back unchanged.
  auto after = c.request("tools/list");
  EXPECT_EQ(tool_names(*after), names0);
  EXPECT_FALSE(c.wait_notification("notifications/tools/list_changed", 400ms).has_value())
      << "clients were told the tool list changed although it did not";
  auto echo = c.call("idle__echo", {{"text", "back"}});
  EXPECT_EQ(first_text(*echo), "back") << dump(echo);
}

// ---------------------------------------------------------------------------------------------
// 2. A call in flight when its server dies: sent again once when the retry policy allows it
// (retry = "safe" by default: only read-only or idempotent tools), else a clear error.

// Starts server "w" (fake, `fake_args`, `extra` config lines), sends w__slow 800 ms, SIGKILLs
// the server 200 ms into the call and waits for the answer and for the successor to be ready.
killed_call healing::kill_during_call(std::vector<std::string> fake_args, std::string extra) {
  const auto log = dir_.file("w.log");
  fake_args.insert(fake_args.end(), {"--log", log});
  start(fake_server_table("w", fake_args, extra));
  client c = connect_initialized();
  client ctl = connect();
  const auto s0 = status_of(ctl, "w");
  EXPECT_GT(s0.pid, 0) << s0.raw;
  killed_call out;
  if (s0.pid <= 0) return out;
  const auto id = c.next_id();
  const auto t0 = steady::now();
  EXPECT_TRUE(c.send(tools_call(id, "w__slow", {{"ms", 800}})));
  EXPECT_TRUE(wait_until([&] { return wire_ids_of_calls(log, "slow").size() == 1; }, 2s))
      << read_file(log);
  if (ms_since(t0) < 200) std::this_thread::sleep_for(ms(200 - ms_since(t0)));
  EXPECT_EQ(::kill(s0.pid, SIGKILL), 0);
  const auto tk = steady::now();
  out.reply = c.wait_response(json::value(id), 6s);
  out.answered_after_kill_ms = ms_since(tk);
  // The successor comes up; a call not repeated must stay unrepeated after it is ready.
  bool ok = false;
  auto s1 = wait_server(
      ctl, "w", [&](const server_view& v) { return v.state == "ready" && v.pid != s0.pid; }, 3s,
      &ok);
  EXPECT_TRUE(ok) << s1.raw;
  std::this_thread::sleep_for(200ms);
  out.times_sent = wire_ids_of_calls(log, "slow").size();
  return out;
}

TEST_F(healing, call_in_flight_to_an_unannotated_tool_is_not_repeated_by_default) {
  const auto r = kill_during_call({}, "");
  ASSERT_TRUE(r.reply.has_value()) << "no answer within 6 s for a call whose server died";
  ASSERT_TRUE(member(r.reply, "error")) << "expected an error, got " << dump(r.reply);
  EXPECT_EQ(error_code(r.reply), -32000) << dump(r.reply);
  const auto msg = error_message(r.reply);
  EXPECT_TRUE(contains(msg, "\"w\"")) << msg;
  EXPECT_TRUE(contains(msg, "during tools/call \"slow\"")) << msg;
  EXPECT_TRUE(contains(msg, "not repeated")) << msg;
  EXPECT_TRUE(contains(msg, "may already have run")) << msg;
  EXPECT_LT(r.answered_after_kill_ms, 1500) << "the error came late";
  EXPECT_EQ(r.times_sent, 1u) << "the tool ran twice";
  std::printf("[ healing  ] retry=safe, unannotated tool: error %lld ms after the kill: %s\n",
              r.answered_after_kill_ms, msg.c_str());
}

TEST_F(healing, call_in_flight_to_a_read_only_tool_is_sent_again_once_by_default) {
  const auto r = kill_during_call({"--annotate", "slow=readOnlyHint"}, "");
  ASSERT_TRUE(r.reply.has_value());
  EXPECT_EQ(first_text(*r.reply), "slept 800") << dump(r.reply);
  EXPECT_EQ(r.times_sent, 2u) << "once to the killed process, once to its successor";
  EXPECT_TRUE(daemon_->wait_for_log("resending once", 1s)) << daemon_->log();
}

TEST_F(healing, call_in_flight_to_an_idempotent_tool_is_sent_again_once_by_default) {
  const auto r = kill_during_call({"--annotate", "slow=idempotentHint"}, "");
  ASSERT_TRUE(r.reply.has_value());
  EXPECT_EQ(first_text(*r.reply), "slept 800") << dump(r.reply);
  EXPECT_EQ(r.times_sent, 2u);
}

TEST_F(healing, call_in_flight_with_retry_always_is_sent_again_once) {
  const auto r = kill_during_call({}, "retry = \"always\"");
  ASSERT_TRUE(r.reply.has_value());
  EXPECT_EQ(first_text(*r.reply), "slept 800") << dump(r.reply);
  EXPECT_EQ(r.times_sent, 2u);
  std::printf("[ healing  ] retry=always: answered %lld ms after the kill\n",
              r.answered_after_kill_ms);
}

TEST_F(healing, call_in_flight_with_retry_never_fails_even_for_a_read_only_tool) {
  const auto r = kill_during_call({"--annotate", "slow=readOnlyHint"}, "retry = \"never\"");
  ASSERT_TRUE(r.reply.has_value());
  ASSERT_TRUE(member(r.reply, "error")) << dump(r.reply);
  EXPECT_TRUE(contains(error_message(r.reply), "retry = \"never\"")) << dump(r.reply);
  EXPECT_EQ(r.times_sent, 1u);
}

TEST_F(healing, retry_calls_false_still_means_never) {
  const auto r = kill_during_call({"--annotate", "slow=readOnlyHint"}, "retry_calls = false");
  ASSERT_TRUE(member(r.reply, "error")) << dump(r.reply);
  EXPECT_EQ(r.times_sent, 1u);
}

// A server's exit shows in status as soon as the daemon reaps it, even while something else
// (here a grandchild in its own session, out of reach of the process-group kill) still holds
// the server's stdout open: status must not show `ready` with a dead pid until that lets go.
TEST_F(healing, a_reaped_server_leaves_ready_at_once_even_if_its_stdout_stays_open) {
  start(
      "[servers.g]\ncommand = \"/bin/sh\"\nargs = [\"-c\", "
      "\"setsid sleep 2 </dev/null 2>/dev/null & exec \\\"$0\\\"\", " +
      toml_quote(fake_server_path()) + "]\n");
  client ctl = connect();
  const auto s0 = status_of(ctl, "g");
  ASSERT_EQ(s0.state, "ready") << s0.raw;
  ASSERT_GT(s0.pid, 0) << s0.raw;
  const auto t0 = steady::now();
  ASSERT_EQ(::kill(s0.pid, SIGKILL), 0);
  bool ok = false;
  auto s1 = wait_server(
      ctl, "g", [&](const server_view& v) { return v.state != "ready" || v.pid != s0.pid; }, 3s,
      &ok, 1ms);
  const auto gone_ms = ms_since(t0);
  std::printf("[ healing  ] dead server out of ready %lld ms after the kill (stdout still held)\n",
              static_cast<long long>(gone_ms));
  ASSERT_TRUE(ok) << s1.raw;
  // Before, the daemon waited up to 500 ms for the end of stdout.
  EXPECT_LT(gone_ms, 300) << s1.raw;
  EXPECT_TRUE(contains(s1.last_error, "signal 9") || contains(s1.last_error, "Killed")) << s1.raw;
}

// ---------------------------------------------------------------------------------------------
// 3. Servers that never come up back off on schedule; status says why.

TEST_F(healing, failing_servers_back_off_on_schedule_and_status_says_why) {
  start(fake_server_table("crashy", {"--exit-immediately", "3", "--stderr-lines", "2"}) +
            "[servers.missing]\ncommand = \"/nonexistent/x\"\n",
        {}, false);
  const auto t0 = steady::now();
  client ctl = connect();
  // Watch the states for ~10 s; a busy loop would show up as many spawns.
  std::set<std::string> states;
  while (ms_since(t0) < 10000) {
    states.insert(status_of(ctl, "crashy").state);
    std::this_thread::sleep_for(100ms);
  }
  const auto crashy_log = server_log(ctl, "crashy");
  const auto missing_log = server_log(ctl, "missing");
  const int spawns = count_prefixed(crashy_log, "started pid");
  const int crashy_failures = count_prefixed(crashy_log, "failed: ");
  const int missing_failures = count_prefixed(missing_log, "failed: ");
  std::printf("[ healing  ] in 10 s: crashy %d spawns / %d failures, missing %d failures\n", spawns,
              crashy_failures, missing_failures);
  // 0, 0.5, 1.5, 3.5, 7.5 s (± 20 % each step) → 5 attempts; 4–6 allows jitter and start time.
  EXPECT_GE(spawns, 4) << joined(crashy_log);
  EXPECT_LE(spawns, 6) << joined(crashy_log);
  EXPECT_GE(missing_failures, 4) << joined(missing_log);
  EXPECT_LE(missing_failures, 6) << joined(missing_log);

  const auto c = status_of(ctl, "crashy");
  EXPECT_TRUE(states.count("backoff")) << c.raw;
  EXPECT_TRUE(c.state == "backoff" || c.state == "connecting") << c.raw;
  EXPECT_GE(c.attempt, 3) << c.raw;
  EXPECT_TRUE(contains(c.last_error, "exited with code 3")) << c.raw;
  EXPECT_TRUE(contains(c.last_error, "boot line 1")) << c.raw;
  EXPECT_EQ(c.last_stderr, "boot line 1") << c.raw;

  const auto m = status_of(ctl, "missing");
  EXPECT_EQ(m.state, "backoff") << m.raw;
  EXPECT_GE(m.attempt, 3) << m.raw;
  EXPECT_TRUE(contains(m.last_error, "/nonexistent/x")) << m.raw;
  EXPECT_EQ(m.pid, -1) << m.raw;

  // The attempts are spaced by the schedule: gaps grow (no two attempts within 300 ms after the
  // second), read from the daemon's "reconnecting in Nms" notes.
  std::vector<int> delays;
  for (const auto& l : crashy_log) {
    int d = 0;
    if (std::sscanf(l.c_str(), "reconnecting in %dms", &d) == 1) delays.push_back(d);
  }
  ASSERT_GE(delays.size(), 3u) << joined(crashy_log);
  const int base[] = {500, 1000, 2000, 4000, 8000, 16000};
  for (std::size_t i = 0; i < delays.size() && i < 6; ++i) {
    EXPECT_GE(delays[i], base[i] * 8 / 10) << "delay " << i + 1 << "\n" << joined(crashy_log);
    EXPECT_LE(delays[i], base[i] * 12 / 10) << "delay " << i + 1 << "\n" << joined(crashy_log);
  }
}

// ---------------------------------------------------------------------------------------------
// 4. Hung servers: a call times out and is cancelled; missed pings restart the server.

TEST_F(healing, call_to_a_stopped_server_times_out_and_is_cancelled) {
  const auto log = dir_.file("hung.log");
  start(fake_server_table("hung", {"--log", log}, "timeout_ms = 500"));
  client c = connect_initialized();
  client ctl = connect();
  const auto s0 = status_of(ctl, "hung");
  ASSERT_GT(s0.pid, 0) << s0.raw;
  stopped_guard guard{s0.pid};
  ASSERT_EQ(::kill(s0.pid, SIGSTOP), 0);
  ASSERT_TRUE(wait_until([&] { return process_state(s0.pid) == 'T'; }, 1s));

  const auto t0 = steady::now();
  auto r = c.call("hung__echo", {{"text", "anyone?"}}, 3s);
  const auto elapsed = ms_since(t0);
  std::printf("[ healing  ] call to the stopped server failed after %lld ms\n",
              static_cast<long long>(elapsed));
  ASSERT_TRUE(r.has_value()) << "no answer within 3 s from a call to a stopped server";
  ASSERT_TRUE(member(r, "error")) << dump(r);
  EXPECT_EQ(error_code(r), -32001) << dump(r);
  EXPECT_TRUE(contains(error_message(r), "\"hung\"")) << dump(r);
  EXPECT_GE(elapsed, 450);
  EXPECT_LE(elapsed, 1000);

  ASSERT_EQ(::kill(s0.pid, SIGCONT), 0);
  std::optional<json::value> wire;
  EXPECT_TRUE(wait_until(
      [&] {
        auto ids = wire_ids_of_calls(log, "echo");
        if (!ids.empty()) wire = ids.front();
        return wire && logged_cancel_for(log, *wire);
      },
      3s))
      << "no notifications/cancelled for the timed-out call in\n"
      << read_file(log);
  // The server was only slow, not dead: it still answers.
  auto echo = c.call("hung__echo", {{"text", "awake"}}, 3s);
  EXPECT_EQ(first_text(*echo), "awake") << dump(echo);
}

TEST_F(healing, missed_pings_restart_a_hung_server_and_kill_the_old_one) {
  start(fake_server_table("hung", {}, "timeout_ms = 300\nping_interval_ms = 200"));
  client ctl = connect();
  const auto s0 = status_of(ctl, "hung");
  ASSERT_GT(s0.pid, 0) << s0.raw;
  stopped_guard guard{s0.pid};
  ASSERT_EQ(::kill(s0.pid, SIGSTOP), 0);
  const auto t0 = steady::now();

  bool ok = false;
  auto s1 = wait_server(
      ctl, "hung",
      [&](const server_view& v) { return v.state == "ready" && v.pid > 0 && v.pid != s0.pid; }, 4s,
      &ok);
  const auto back_after = ms_since(t0);
  ASSERT_TRUE(ok) << "a hung server was not replaced within 4 s; status " << s1.raw;
  EXPECT_LE(back_after, 2000) << "replaced only after " << back_after << " ms";
  EXPECT_TRUE(contains(s1.last_error, "ping")) << s1.raw;
  EXPECT_TRUE(daemon_->wait_for_log("missed a ping", 1s)) << daemon_->log();
  EXPECT_TRUE(daemon_->wait_for_log("no answer to 2 pings", 1s)) << daemon_->log();

  // The stopped process is killed (SIGKILL reaches a stopped process) and reaped.
  const bool gone = wait_until([&] { return !process_exists(s0.pid); }, 6s, 20ms);
  const auto gone_after = ms_since(t0);
  std::printf("[ healing  ] hung server replaced after %lld ms, old pid gone after %lld ms\n",
              static_cast<long long>(back_after), static_cast<long long>(gone_after));
  EXPECT_TRUE(gone) << "the stopped server " << s0.pid << " is still there (state "
                    << process_state(s0.pid) << ")";
  // Its successor keeps answering pings: still the same process a while later.
  std::this_thread::sleep_for(700ms);
  const auto s2 = status_of(ctl, "hung");
  EXPECT_EQ(s2.state, "ready") << s2.raw;
  EXPECT_EQ(s2.pid, s1.pid) << s2.raw;
}

TEST_F(healing, missed_pings_with_a_call_in_flight_keep_the_daemon_up_and_answer_the_call) {
  start(fake_server_table("hung", {}, "timeout_ms = 5000\nping_interval_ms = 200"));
  client c = connect_initialized();
  client ctl = connect();
  const auto s0 = status_of(ctl, "hung");
  ASSERT_GT(s0.pid, 0) << s0.raw;
  stopped_guard guard{s0.pid};
  ASSERT_EQ(::kill(s0.pid, SIGSTOP), 0);
  const auto t0 = steady::now();
  const auto id = c.next_id();
  ASSERT_TRUE(c.send(tools_call(id, "hung__echo", {{"text", "anyone?"}})));
  auto r = c.wait_response(json::value(id), 4s);
  const auto answered = ms_since(t0);
  const bool died = daemon_->wait_exit(300ms).has_value();
  ASSERT_FALSE(died) << "mcpmuxd died when missed pings restarted a server with a call in "
                        "flight; its log:\n"
                     << daemon_->log();
  ASSERT_TRUE(r.has_value()) << "no answer within 4 s to a call sent to a hung server";
  std::printf("[ healing  ] call in flight to a hung server answered after %lld ms: %s\n",
              static_cast<long long>(answered), dump(r).c_str());
  // Either resent on the new connection (the old one was dropped) or a clear error.
  if (member(r, "error"))
    EXPECT_TRUE(contains(error_message(r), "\"hung\"")) << dump(r);
  else
    EXPECT_EQ(first_text(*r), "anyone?") << dump(r);
}

// ---------------------------------------------------------------------------------------------
// 5. The tool cache: served at start while the server starts; invalidated; corrupt is ignored.

TEST_F(healing, cached_tools_are_served_at_once_and_invalidated_by_config_changes) {
  const std::vector<std::string> args{"--init-delay-ms", "2000", "--tools", "2"};
  const auto config = fake_server_table("lazy", args);
  // The daemon's state store, where the tool cache lives (read beside the daemon, as SQLite
  // allows).
  const auto store_path = dir_.file("xdg/state/mcpmux/state.db");
  auto cached_entry = [&]() -> std::string {
    auto store = state_store::open(store_path);
    if (!store) return {};
    for (auto& row : (*store)->cached_tools())
      if (row.server == "lazy") return row.doc;
    return {};
  };

  // First run: no cache yet; written once the server is ready.
  start(config, {}, false);
  ASSERT_TRUE(daemon_->wait_ready({}, 8s));
  std::vector<std::string> names0;
  {
    client c = connect_initialized();
    auto r = c.request("tools/list");
    names0 = tool_names(*r);
  }
  ASSERT_FALSE(names0.empty());
  ASSERT_TRUE(wait_until([&] { return !cached_entry().empty(); }, 2s))
      << "no cache entry in " << store_path;
  daemon_->stop();
  daemon_.reset();

  // Second run, same config: the cached tools are answered at once, from the catalogue
  // snapshot the first run kept when it stopped (core/catalogue_snapshot.hpp).
  {
    const auto log_before = read_file(dir_.file("daemon.log")).size();
    start(config, {}, false);
    const auto t0 = steady::now();
    client c = connect_initialized();
    const auto t1 = steady::now();
    auto r = c.request("tools/list", json::object{}, 3s);
    const auto list_ms = ms_since(t1);
    const auto since_accept = ms_since(t0);
    std::printf("[ healing  ] cached tools/list answered in %lld ms (%lld ms after accept)\n",
                static_cast<long long>(list_ms), static_cast<long long>(since_accept));
    ASSERT_TRUE(member(r, "result")) << dump(r);
    EXPECT_EQ(tool_names(*r), names0);
    EXPECT_LE(list_ms, 300);
    client ctl = connect();
    auto s = status_of(ctl, "lazy");
    EXPECT_EQ(s.state, "connecting") << s.raw;
    EXPECT_TRUE(s.tools_from_cache) << s.raw;
    EXPECT_TRUE(contains(read_file(dir_.file("daemon.log")).substr(log_before),
                         "from the catalogue snapshot"))
        << "the second start did not list from the snapshot";
    // A call to a cached tool waits for the server and succeeds once it is up (~2 s).
    const auto tc = steady::now();
    auto echo = c.call("lazy__echo", {{"text", "cached"}}, 5s);
    const auto call_ms = ms_since(tc);
    std::printf("[ healing  ] call to a cached tool answered after %lld ms\n",
                static_cast<long long>(call_ms));
    EXPECT_EQ(first_text(*echo), "cached") << dump(echo);
    EXPECT_LE(call_ms, 3000);
    s = status_of(ctl, "lazy");
    EXPECT_EQ(s.state, "ready") << s.raw;
    EXPECT_FALSE(s.tools_from_cache) << s.raw;
    // The live list equals the cached one: no list_changed for the switch.
    EXPECT_EQ(count_notifications(c, "notifications/tools/list_changed"), 0);
  }
  daemon_->stop();
  daemon_.reset();

  // Changed args: the entry no longer matches; tools/list waits at most startup_wait_ms.
  {
    auto changed = args;
    changed.push_back("--name");
    changed.push_back("changed");
    start(fake_server_table("lazy", changed) + "[daemon]\nstartup_wait_ms = 250\n", {}, false);
    client c = connect_initialized();
    const auto t1 = steady::now();
    auto r = c.request("tools/list", json::object{}, 3s);
    const auto list_ms = ms_since(t1);
    std::printf("[ healing  ] tools/list with a stale cache entry answered in %lld ms\n",
                static_cast<long long>(list_ms));
    ASSERT_TRUE(member(r, "result")) << dump(r);
    EXPECT_TRUE(tool_names(*r).empty()) << "stale cached tools served: " << dump(r);
    EXPECT_LE(list_ms, 450);
    client ctl = connect();
    auto s = status_of(ctl, "lazy");
    EXPECT_FALSE(s.tools_from_cache) << s.raw;
    EXPECT_EQ(s.state, "connecting") << s.raw;
  }
  daemon_->stop();
  daemon_.reset();

  // A corrupt entry is ignored with a warning.
  {
    {
      auto opened = state_store::open(store_path);
      ASSERT_TRUE(opened) << opened.error().message;
      auto& store = *opened;
      // The entry of the first run's configuration, its document torn.
      for (auto row : store->cached_tools())
        if (row.server == "lazy") {
          row.doc = "{\"format\":1,\"tools\":[garbage\x01\x02";
          ASSERT_TRUE(store->put_cached_tools(row).ok());
        }
    }
    const auto log_before = read_file(dir_.file("daemon.log")).size();
    start(config + "[daemon]\nstartup_wait_ms = 250\n", {}, false);
    client c = connect_initialized();
    auto r = c.request("tools/list", json::object{}, 3s);
    ASSERT_TRUE(member(r, "result")) << dump(r);
    EXPECT_TRUE(tool_names(*r).empty()) << "tools served from a corrupt cache: " << dump(r);
    client ctl = connect();
    auto s = status_of(ctl, "lazy");
    EXPECT_FALSE(s.tools_from_cache) << s.raw;
    EXPECT_TRUE(daemon_->running());
    const auto log = read_file(dir_.file("daemon.log")).substr(log_before);
    bool warned = false;
    std::istringstream in(log);
    for (std::string line; std::getline(in, line);)
      warned |= contains(line, "warn") && contains(line, "tool cache entry of lazy") &&
                contains(line, "corrupt");
    EXPECT_TRUE(warned) << "no warning about the corrupt cache entry in:\n" << log;
    // The server still comes up and rewrites a good entry.
    EXPECT_TRUE(daemon_->wait_ready({}, 8s));
    EXPECT_TRUE(wait_until([&] { return parse_or_null(cached_entry()).is_object(); }, 2s))
        << cached_entry();
  }
}

// ---------------------------------------------------------------------------------------------
// 6. Startup gate: an early tools/list waits at most startup_wait_ms; late tools are announced.

TEST_F(healing, startup_gate_waits_at_most_startup_wait_then_announces_late_tools) {
  start("[daemon]\nstartup_wait_ms = 250\n" +
            fake_server_table("late", {"--init-delay-ms", "1000", "--tools", "2"}),
        {}, false);
  const auto t0 = steady::now();
  client c = connect_initialized();
  const auto t1 = steady::now();
  auto r = c.request("tools/list", json::object{}, 3s);
  const auto list_ms = ms_since(t1);
  std::printf("[ healing  ] early tools/list answered in %lld ms (%lld ms after accept)\n",
              static_cast<long long>(list_ms), static_cast<long long>(ms_since(t0)));
  ASSERT_TRUE(member(r, "result")) << dump(r);
  EXPECT_TRUE(tool_names(*r).empty()) << dump(r);
  EXPECT_LE(list_ms, 500) << "the gate waited for the slow server instead of startup_wait_ms";
  EXPECT_LE(ms_since(t0), 700);

  auto note = c.wait_notification("notifications/tools/list_changed", 3s);
  const auto note_ms = ms_since(t0);
  std::printf("[ healing  ] list_changed after %lld ms\n", static_cast<long long>(note_ms));
  ASSERT_TRUE(note.has_value()) << "no notifications/tools/list_changed when the tools arrived";
  EXPECT_GE(note_ms, 700) << "list_changed before the server could have been ready";
  auto r2 = c.request("tools/list");
  const auto names = tool_names(*r2);
  EXPECT_NE(std::find(names.begin(), names.end(), "late__echo"), names.end()) << dump(r2);
}

// A one-shot agent (its requests, then the end of its input at once) still gets the answers the
// gate held back, then the end of its output.
TEST_F(healing, answers_held_by_the_startup_gate_reach_a_client_that_closed_its_input) {
  start("[daemon]\nstartup_wait_ms = 250\n" +
            fake_server_table("late", {"--init-delay-ms", "1000", "--tools", "2"}),
        {}, false);
  const std::string lines = initialize_line(1) +
                            R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
                            "\n"
                            R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})"
                            "\n";
  const auto t0 = steady::now();
  auto r = run_process({mcpmux_path(), "--socket", daemon_->socket(), "connect"}, lines, 10s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(R"("id":1,"result":{"protocolVersion")"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(R"("id":2,"result":{"tools")"), std::string::npos) << r.out;
  EXPECT_LE(ms_since(t0), 900) << "the end waited for the slow server, not the gate";
}

// ---------------------------------------------------------------------------------------------
// 7. mcpmux/restart and `mcpmux restart NAME`.

TEST_F(healing, restart_gives_a_new_pid_a_fresh_backoff_and_the_same_tools) {
  start(fake_server_table("r", {"--tools", "2"}));
  client c = connect_initialized();
  client ctl = connect();
  auto r0 = c.request("tools/list");
  const auto names0 = tool_names(*r0);
  ASSERT_FALSE(names0.empty());

  // Make the attempt counter non-zero first: one crash and recovery.
  const auto s0 = status_of(ctl, "r");
  ASSERT_EQ(::kill(s0.pid, SIGKILL), 0);
  bool ok = false;
  auto s1 = wait_server(
      ctl, "r", [&](const server_view& v) { return v.state == "ready" && v.pid != s0.pid; }, 3s,
      &ok);
  ASSERT_TRUE(ok) << s1.raw;
  ASSERT_EQ(s1.attempt, 1) << s1.raw;

  auto rr = ctl.request("mcpmux/restart", json::object{{"server", "r"}});
  ASSERT_TRUE(member(rr, "result")) << dump(rr);
  EXPECT_EQ(rr->at("result"), json::object{});
  auto s2 = wait_server(
      ctl, "r", [&](const server_view& v) { return v.state == "ready" && v.pid != s1.pid; }, 3s,
      &ok);
  ASSERT_TRUE(ok) << s2.raw;
  EXPECT_EQ(s2.attempt, 0) << s2.raw;
  EXPECT_GT(s2.restarts, s1.restarts) << s2.raw;
  EXPECT_TRUE(wait_until([&] { return !process_exists(s1.pid); }, 4s)) << "old pid " << s1.pid;
  EXPECT_EQ(tool_names(*c.request("tools/list")), names0);

  auto cli = run_cli(daemon_->socket(), {"restart", "r"});
  EXPECT_EQ(cli.exit_code, 0) << cli.out << cli.err;
  auto s3 = wait_server(
      ctl, "r", [&](const server_view& v) { return v.state == "ready" && v.pid != s2.pid; }, 3s,
      &ok);
  ASSERT_TRUE(ok) << s3.raw;
  EXPECT_EQ(s3.attempt, 0) << s3.raw;
  EXPECT_GT(s3.restarts, s2.restarts) << s3.raw;
  EXPECT_EQ(tool_names(*c.request("tools/list")), names0);
  auto echo = c.call("r__echo", {{"text", "fresh"}});
  EXPECT_EQ(first_text(*echo), "fresh") << dump(echo);
  EXPECT_FALSE(c.wait_notification("notifications/tools/list_changed", 300ms).has_value())
      << "restarts with unchanged tools caused list_changed";

  // Unknown servers: a clear error, CLI exit status 1.
  auto bad = ctl.request("mcpmux/restart", json::object{{"server", "nope"}});
  EXPECT_EQ(error_code(bad), -32602) << dump(bad);
  auto bad_cli = run_cli(daemon_->socket(), {"restart", "nope"});
  EXPECT_EQ(bad_cli.exit_code, 1) << bad_cli.out << bad_cli.err;
}

TEST_F(healing, restart_during_a_call_in_flight_keeps_the_daemon_up_and_answers_the_call) {
  start(fake_server_table("busy", {}));
  client c = connect_initialized();
  client ctl = connect();
  const auto s0 = status_of(ctl, "busy");
  const auto id = c.next_id();
  ASSERT_TRUE(c.send(tools_call(id, "busy__slow", {{"ms", 800}})));
  std::this_thread::sleep_for(200ms);
  auto rr = ctl.request("mcpmux/restart", json::object{{"server", "busy"}}, 3s);
  EXPECT_TRUE(member(rr, "result")) << dump(rr);
  auto r = c.wait_response(json::value(id), 5s);
  // A crash shows as EOF at once; give the process a moment to finish dying before looking.
  const bool died = daemon_->wait_exit(300ms).has_value();
  ASSERT_FALSE(died) << "mcpmuxd died when a server with a call in flight was restarted; its "
                        "log:\n"
                     << daemon_->log();
  ASSERT_TRUE(r.has_value()) << "no answer to the call in flight across a restart";
  // The restart killed the call mid-way: with retry = "safe" an unannotated tool is not run
  // twice, and the client is told so.
  EXPECT_TRUE(contains(error_message(r), "not repeated")) << dump(r);
  const auto s1 = status_of(ctl, "busy");
  EXPECT_EQ(s1.state, "ready") << s1.raw;
  EXPECT_NE(s1.pid, s0.pid) << s1.raw;
}

// ---------------------------------------------------------------------------------------------
// 8. 200 forced restarts: no zombies, no descriptor leak, bounded memory.

TEST_F(healing, two_hundred_restarts_leak_nothing) {
  start(fake_server_table("churn", {}));
  client ctl = connect();
  const int fds_before = daemon_->settled_fds();
  auto s = status_of(ctl, "churn");
  ASSERT_EQ(s.state, "ready") << s.raw;
  long rss50 = -1;
  const auto t0 = steady::now();
  for (int i = 1; i <= 200; ++i) {
    const pid_t old = s.pid;
    auto rr = ctl.request("mcpmux/restart", json::object{{"server", "churn"}}, 5s);
    ASSERT_TRUE(member(rr, "result")) << "restart " << i << ": " << dump(rr);
    bool ok = false;
    s = wait_server(
        ctl, "churn",
        [&](const server_view& v) { return v.state == "ready" && v.pid > 0 && v.pid != old; }, 5s,
        &ok, 2ms);
    ASSERT_TRUE(ok) << "restart " << i << " not ready within 5 s: " << s.raw;
    if (i == 50) rss50 = vm_rss_kib(daemon_->pid());
  }
  const auto loop_ms = ms_since(t0);

  auto zombies = [&] {
    int n = 0;
    for (pid_t p : daemon_->children()) n += process_state(p) == 'Z';
    return n;
  };
  // Old servers exit on stdin EOF; the daemon reaps them.
  EXPECT_TRUE(
      wait_until([&] { return daemon_->children().size() == 1 && zombies() == 0; }, 5s, 20ms))
      << daemon_->children().size() << " children, " << zombies() << " zombies";
  const int z = zombies();
  const int fds_after = daemon_->settled_fds();
  const long rss200 = vm_rss_kib(daemon_->pid());
  std::printf(
      "[ healing  ] 200 restarts in %lld ms: fds before %d after %d; VmRSS at 50 %ld KiB, at "
      "200 %ld KiB (%+ld KiB); zombies %d; children %zu\n",
      static_cast<long long>(loop_ms), fds_before, fds_after, rss50, rss200, rss200 - rss50, z,
      daemon_->children().size());
  EXPECT_EQ(z, 0);
  EXPECT_LE(std::abs(fds_after - fds_before), 2) << daemon_->describe_fds();
  // Under AddressSanitizer freed memory sits in quarantine and RSS grows by design; the
  // sanitizer build checks leaks with LeakSanitizer at exit instead.
  if (std::getenv("MCPMUX_SANITIZED") == nullptr) {
    EXPECT_LE(rss200 - rss50, 2048) << "VmRSS grew between restart 50 and 200";
  }
  EXPECT_EQ(s.attempt, 0) << s.raw;
  client c = connect_initialized();
  auto echo = c.call("churn__echo", {{"text", "still here"}});
  EXPECT_EQ(first_text(*echo), "still here") << dump(echo);
}

}  // namespace
}  // namespace mcpmux::test
