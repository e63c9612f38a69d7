// The sandbox proved by a hostile server (tests/fixtures/hostile_server.mjs) run by the real
// daemon: every attempt on the user's files, mcpmux's own, the daemon, the network and the
// machine's resources fails or is stopped, the other servers keep serving, and status says
// what happened. Skipped where bubblewrap cannot run (the daemon then starts servers
// unsandboxed, which tests below check is said in status).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <filesystem>

#include "../integration/harness.hpp"
#include "sandbox/host.hpp"
#include "transports/stdio_transport.hpp"

namespace mcpmux::test {
namespace {

const std::string& hostile_server() {
  static const std::string path = [] {
    const char* p = std::getenv("HOSTILE_SERVER");
    return std::string(p ? p : "");
  }();
  return path;
}

class sandbox_test : public daemon_test {
 protected:
  void SetUp() override {
    stdio_options bwrap;
    bwrap.command = "bwrap";
    const auto host = probe_sandbox_host(program_path(bwrap));
    if (!host.usable()) GTEST_SKIP() << host.problem;
    ASSERT_FALSE(hostile_server().empty()) << "HOSTILE_SERVER is not set";
    home_ = dir_.file("home");
    std::filesystem::create_directories(home_ + "/.ssh");
    std::filesystem::create_directories(home_ + "/.config/mcpmux");
    std::filesystem::create_directories(home_ + "/.local/state/mcpmux/oauth");
    dir_.write("home/.ssh/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n");
    dir_.write("home/.config/mcpmux/secrets.json", R"({"token": "s3cret"})");
    dir_.write("home/.local/state/mcpmux/oauth/remote.json", R"({"access_token": "t0ken"})");
    std::filesystem::create_directories(dir_.file("work"));
  }

  // Starts the daemon with the user's files in a home of the test's own, the way a user has
  // them: config, secrets, state and OAuth logins under the home directory.
  void start_with(const std::string& servers, bool wait_ready = true) {
    daemon_options opt;
    opt.config = home_ + "/.config/mcpmux/config.toml";
    opt.env = {{"HOME", home_},
               {"XDG_CONFIG_HOME", home_ + "/.config"},
               {"XDG_STATE_HOME", home_ + "/.local/state"},
               {"XDG_CACHE_HOME", home_ + "/.cache"},
               {"MCPMUX_SANDBOX", "default"}};
    std::filesystem::create_directories(home_ + "/.config/mcpmux");
    dir_.write("home/.config/mcpmux/config.toml", servers);
    // daemon_test::start writes config.toml in the temp dir; the daemon reads opt.config.
    start(servers, opt, wait_ready);
  }

  std::string hostile_table(const std::string& name, const std::string& extra) const {
    return "[servers." + name + "]\ncommand = \"node\"\nargs = [" + toml_quote(hostile_server()) +
           "]\ncwd = " + toml_quote(dir_.file("work")) + "\n" + extra + "\n";
  }

  // Runs one attack; the parsed {what, ok, detail}.
  json::object attack(client& c, const std::string& server, json::object args, ms timeout = 20s) {
    auto r = c.call(server + "__attack", std::move(args), timeout);
    EXPECT_TRUE(r.has_value());
    if (!r) return {};
    auto parsed = parse_or_null(first_text(*r));
    EXPECT_TRUE(parsed.is_object()) << json::serialize(*r);
    return parsed.is_object() ? parsed.as_object() : json::object{};
  }

  void expect_fails(client& c, const std::string& server, json::object args) {
    const auto what = json::serialize(args);
    auto got = attack(c, server, std::move(args));
    EXPECT_EQ(got["ok"], json::value(false))
        << server << " " << what << ": " << json::serialize(got);
  }

  std::string home_;
};

// Files: the user's keys and mcpmux's own config, secrets, state and logins are out of reach;
// so is the daemon's environment; writes into the home directory do not land.
TEST_F(sandbox_test, files_of_the_user_and_of_mcpmux_are_out_of_reach) {
  start_with(hostile_table("hostile", "") + hostile_table("strict", "sandbox = \"strict\"") +
             hostile_table("listed", "network = [\"registry.npmjs.org\"]") +
             fake_server_table("other", {}));
  auto c = connect_initialized();
  const std::string state = home_ + "/.local/state/mcpmux";
  for (const std::string server : {"hostile", "strict", "listed"}) {
    for (const std::string& path :
         {home_ + "/.ssh/id_rsa", home_ + "/.config/mcpmux/secrets.json",
          home_ + "/.config/mcpmux/config.toml", state + "/state.db", state + "/oauth/remote.json",
          "/proc/" + std::to_string(daemon_->pid()) + "/environ"})
      expect_fails(c, server, {{"what", "read_file"}, {"path", path}});
    // The home directory a server sees is an empty one of its own, gone when it stops: a
    // write there never reaches the user's.
    attack(c, server, {{"what", "write_file"}, {"path", home_ + "/pwned-" + server}});
    EXPECT_FALSE(std::filesystem::exists(home_ + "/pwned-" + server));
    expect_fails(c, server, {{"what", "write_file"}, {"path", "/usr/pwned-" + server}});
    // The daemon's socket: no way to list or call another server's tools.
    expect_fails(
        c, server,
        {{"what", "call_through_socket"}, {"path", daemon_->socket()}, {"tool", "other__echo"}});
  }
  // What it is given it may use: its cwd (read-write under default, read-only under strict).
  auto wrote = attack(c, "hostile", {{"what", "write_file"}, {"path", dir_.file("work/ok")}});
  EXPECT_EQ(wrote["ok"], json::value(true)) << json::serialize(wrote);
  expect_fails(c, "strict", {{"what", "write_file"}, {"path", dir_.file("work/strict")}});
  // The other server never noticed.
  auto echo = c.call("other__echo", {{"text", "still here"}});
  ASSERT_TRUE(echo);
  EXPECT_TRUE(contains(first_text(*echo), "still here")) << json::serialize(*echo);
  // Status shows each sandbox and counts what the servers reported denied.
  auto st = daemon_->status();
  for (const auto& s : st.at("servers").as_array()) {
    const auto& o = s.as_object();
    if (o.at("name") == "other") continue;
    ASSERT_TRUE(o.contains("sandbox")) << json::serialize(o);
    EXPECT_EQ(o.at("sandbox").at("sandboxed"), json::value(true)) << json::serialize(o);
    EXPECT_GT(o.at("sandbox").at("denied").as_int64(), 0) << json::serialize(o);
    EXPECT_TRUE(o.at("sandbox").as_object().contains("last_denied")) << json::serialize(o);
  }
}

// Network: `strict` reaches nothing, not even loopback; a list reaches its hosts through the
// daemon's proxy and nothing else.
TEST_F(sandbox_test, network_none_and_a_list_hold) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  start_with(hostile_table("strict", "sandbox = \"strict\"") +
             hostile_table("listed", "network = [\"registry.npmjs.org\"]") +
             hostile_table("open", ""));
  auto c = connect_initialized();
  expect_fails(c, "strict", {{"what", "connect_tcp"}, {"host", "127.0.0.1"}, {"port", port}});
  expect_fails(c, "listed", {{"what", "connect_tcp"}, {"host", "127.0.0.1"}, {"port", port}});
  // Under `default` the host's network is the server's, loopback included (as documented).
  auto open = attack(c, "open", {{"what", "connect_tcp"}, {"host", "127.0.0.1"}, {"port", port}});
  EXPECT_EQ(open["ok"], json::value(true)) << json::serialize(open);
  // Off the list: refused by the proxy before any connection.
  expect_fails(c, "listed", {{"what", "proxy_connect"}, {"host", "deb.debian.org"}});
  auto st = view_of(daemon_->status(), "listed");
  EXPECT_TRUE(contains(st.raw, "deb.debian.org")) << st.raw;
  // On the list: through (where this machine reaches the registry at all).
  auto listed = attack(c, "listed", {{"what", "proxy_connect"}, {"host", "registry.npmjs.org"}});
  if (listed["ok"] != json::value(true))
    std::printf("note: registry.npmjs.org not reached through the proxy: %s\n",
                json::serialize(listed).c_str());
  else
    SUCCEED();
  ::close(listener);
}

// Resources: a fork bomb, a descriptor leak and an 8 GiB allocation are stopped; the server
// killed by its memory limit is reported as such and comes back; the others keep serving.
TEST_F(sandbox_test, limits_stop_runaways_and_status_says_so) {
  start_with(hostile_table("hostile", "memory_max = \"256M\"\ntasks_max = 64") +
             fake_server_table("other", {}));
  auto c = connect_initialized();
  expect_fails(c, "hostile", {{"what", "fork"}, {"count", 10000}});
  expect_fails(c, "hostile", {{"what", "open_files"}, {"count", 100000}});
  auto r = c.call("hostile__attack", {{"what", "alloc"}, {"mib", 8192}}, 60s);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->as_object().contains("error") || r->at("result").as_object().contains("isError"))
      << json::serialize(*r);
  auto ctl = connect();
  bool ok = false;
  auto v = wait_server(
      ctl, "hostile",
      [](const server_view& s) { return contains(s.last_error, "killed: memory limit 256 MiB"); },
      30s, &ok);
  EXPECT_TRUE(ok) << v.raw;
  v = wait_server(
      ctl, "hostile", [](const server_view& s) { return s.state == "ready"; }, 30s, &ok);
  EXPECT_TRUE(ok) << "the server came back after its kill: " << v.raw;
  auto echo = c.call("other__echo", {{"text", "alive"}});
  ASSERT_TRUE(echo);
  EXPECT_TRUE(contains(first_text(*echo), "alive"));
}

// `mcpmux sandbox NAME` prints the effective policy; `required` refuses where it cannot sandbox.
TEST_F(sandbox_test, the_policy_is_printed) {
  start_with(hostile_table("hostile", "allow_read = [\"~/.ssh\"]\nmemory_max = \"1G\""));
  auto out = run_cli(daemon_->socket(), {"sandbox", "hostile"});
  ASSERT_EQ(out.exit_code, 0) << describe(out);
  EXPECT_TRUE(contains(out.out, "sandbox: default")) << out.out;
  EXPECT_TRUE(contains(out.out, "read-only  " + home_ + "/.ssh  (allow_read)")) << out.out;
  EXPECT_TRUE(contains(out.out, "hidden")) << out.out;
  EXPECT_TRUE(contains(out.out, "memory 1 GiB")) << out.out;
  EXPECT_TRUE(contains(out.out, "network: all")) << out.out;
  // Landlock, where the kernel has it, limits writes a second time.
  if (landlock_abi_version() > 0) {
    EXPECT_TRUE(contains(out.out, "landlock: ABI")) << out.out;
  }
  auto missing = run_cli(daemon_->socket(), {"sandbox", "nosuch"});
  EXPECT_NE(missing.exit_code, 0);
}

}  // namespace
}  // namespace mcpmux::test

namespace mcpmux::test {
namespace {

// A server started the way users start them, `npx -y PACKAGE`: npx installs it into the
// server's own cache inside the sandbox, it answers, and it comes back sandboxed after a kill
// (from its cache, leaving no process behind).
TEST_F(sandbox_test, a_server_started_with_npx_comes_up_sandboxed_and_after_a_kill) {
  const std::string table =
      "[servers.memory]\ncommand = \"npx\"\nargs = [\"-y\", "
      "\"@modelcontextprotocol/server-memory@2026.8.31\"]\ncwd = " +
      toml_quote(dir_.file("work")) +
      "\nenv = { MEMORY_FILE_PATH = " + toml_quote(dir_.file("work/memory.jsonl")) +
      " }\ntimeout_ms = 120000\n";
  start_with(table, false);
  auto ctl = connect();
  bool ok = false;
  auto v = wait_server(
      ctl, "memory", [](const server_view& s) { return s.state == "ready"; }, 180s, &ok, 100ms);
  ASSERT_TRUE(ok) << "npx did not bring the server up in its sandbox: " << v.raw;
  EXPECT_TRUE(contains(v.raw, "\"sandboxed\":true")) << v.raw;
  // It installed into its own cache, not the user's.
  EXPECT_TRUE(std::filesystem::exists(home_ + "/.cache/mcpmux/sandbox/memory/npm"));
  EXPECT_FALSE(std::filesystem::exists(home_ + "/.npm"));
  auto c = connect_initialized();
  auto graph = c.call("memory__read_graph", json::object{}, 30s);
  ASSERT_TRUE(graph);
  EXPECT_TRUE(contains(first_text(*graph), "entities")) << json::serialize(*graph);

  const pid_t first = v.pid;
  ASSERT_GT(first, 0);
  ::kill(first, SIGKILL);
  v = wait_server(
      ctl, "memory",
      [&](const server_view& s) { return s.state == "ready" && s.pid > 0 && s.pid != first; }, 120s,
      &ok, 100ms);
  ASSERT_TRUE(ok) << "not back after the kill: " << v.raw;
  auto again = c.call("memory__read_graph", json::object{}, 30s);
  ASSERT_TRUE(again);
  EXPECT_TRUE(contains(first_text(*again), "entities")) << json::serialize(*again);
  // Nothing of the first start is left: the sandbox's processes died with it.
  EXPECT_TRUE(wait_until([&] { return !process_exists(first); }, 5s));
  for (pid_t child : daemon_->children()) EXPECT_NE(child, first);
}

}  // namespace
}  // namespace mcpmux::test

namespace mcpmux::test {
namespace {

// Where bubblewrap cannot run (here: not on the daemon's PATH), `default` starts the server
// unsandboxed and status says so; `required` does not start it, and says why.
TEST_F(daemon_test, without_bubblewrap_default_warns_and_required_refuses) {
  std::filesystem::create_directories(dir_.file("nobin"));
  daemon_options opt;
  opt.env = {{"PATH", dir_.file("nobin")}, {"MCPMUX_SANDBOX", "default"}};
  start(fake_server_table("plain", {}) + fake_server_table("must", {}) + "sandbox = \"required\"\n",
        opt, false);
  auto ctl = connect();
  bool ok = false;
  auto plain = wait_server(
      ctl, "plain", [](const server_view& s) { return s.state == "ready"; }, 10s, &ok);
  ASSERT_TRUE(ok) << plain.raw;
  EXPECT_TRUE(contains(plain.raw, "not sandboxed: bubblewrap (bwrap) is not installed"))
      << plain.raw;
  auto must = wait_server(
      ctl, "must", [](const server_view& s) { return contains(s.last_error, "required"); }, 10s,
      &ok);
  EXPECT_TRUE(ok) << must.raw;
  EXPECT_NE(must.state, "ready");
  EXPECT_TRUE(contains(must.last_error, "not started: sandbox = \"required\"")) << must.raw;
  EXPECT_TRUE(daemon_->wait_for_log("servers cannot be sandboxed here"));
  auto table = run_cli(daemon_->socket(), {"status"});
  EXPECT_TRUE(contains(table.out, "none")) << table.out;
}

}  // namespace
}  // namespace mcpmux::test
