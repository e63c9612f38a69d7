// Integration tests of `mcpmux doctor`: each problem it looks for is made here, in a home, XDG
// directories and a systemd unit path of the test's own, and doctor must name it with its fix
// and exit 1; a setup without problems exits 0.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

/// One entry of `mcpmux doctor --json`.
struct finding {
  std::string check, status, detail, fix;
};

std::string parent_of(const std::string& path) {
  return path.substr(0, path.rfind('/'));
}

/// A listener in a thread that accepts connections and hands each to `serve` until destroyed.
class listener {
 public:
  listener(int fd, std::function<void(int)> serve) : fd_(fd), serve_(std::move(serve)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) continue;
        const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (conn < 0) continue;
        serve_(conn);
        ::close(conn);
      }
    });
  }
  ~listener() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }

 private:
  int fd_;
  std::function<void(int)> serve_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// Reads what the peer sends up to the first "\n" (a JSON-RPC line) or "\r\n\r\n" (HTTP head).
std::string read_until(int fd, std::string_view end) {
  std::string got;
  char buf[4096];
  while (!contains(got, end)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) break;
    const auto n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

class doctor : public daemon_test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(home_.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir(units_.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir((units_ + "/sockets.target.wants").c_str(), 0700), 0);
  }

  /// The units as `meson install` and `systemctl --user enable` leave them, running `program`.
  void install_units(const std::string& program, bool enabled = true) {
    dir_.write("units/mcpmuxd.service", "[Service]\nType=notify\nExecStartPre=" + program +
                                            " --check-config\nExecStart=" + program + "\n");
    dir_.write("units/mcpmuxd.socket", "[Socket]\nListenStream=%t/mcpmux/mcpmux.sock\n");
    if (enabled) {
      ASSERT_EQ(::symlink((units_ + "/mcpmuxd.socket").c_str(),
                          (units_ + "/sockets.target.wants/mcpmuxd.socket").c_str()),
                0);
    }
  }

  /// The environment of the test's user: its home, XDG directories, config and unit path; no
  /// session bus.
  std::map<std::string, std::optional<std::string>> user_env() const {
    return {{"HOME", home_},
            {"XDG_CONFIG_HOME", dir_.file("xdg/config")},
            {"XDG_CACHE_HOME", dir_.file("xdg/cache")},
            {"XDG_STATE_HOME", dir_.file("xdg/state")},
            {"XDG_DATA_HOME", dir_.file("xdg/data")},
            {"XDG_RUNTIME_DIR", dir_.file("xdg/run")},
            {"MCPMUX_CONFIG", dir_.file("config.toml")},
            {"SYSTEMD_UNIT_PATH", units_},
            {"DBUS_SESSION_BUS_ADDRESS", std::nullopt},
            {"MCPMUX_SECRETS_FILE", std::nullopt}};
  }

  /// A daemon of this user on `config_text` (socket: the temp dir's mcpmux.sock).
  daemon& start_daemon(std::string_view config_text, bool wait_ready = true) {
    daemon_options opt;
    for (const auto& [k, v] : user_env())
      if (v) opt.env[k] = *v;
    return start(config_text, opt, wait_ready);
  }

  /// A daemon of this user on `config_text` whose server `name` comes to the state `pred` wants.
  ::testing::AssertionResult start_until(std::string_view config_text, std::string_view name,
                                         const std::function<bool(const server_view&)>& pred) {
    start_daemon(config_text, false);
    client ctl = connect();
    bool ok = false;
    auto v = wait_server(ctl, name, pred, 10s, &ok, 20ms);
    if (!ok) return ::testing::AssertionFailure() << v.raw;
    return ::testing::AssertionSuccess();
  }

  /// `mcpmux --socket SOCKET doctor --json`: its findings, with the run for failure messages.
  std::vector<finding> run_doctor(const std::string& socket) {
    last_ =
        run_process({mcpmux_path(), "--socket", socket, "doctor", "--json"}, {}, 20s, user_env());
    std::vector<finding> out;
    const json::value parsed = parse_or_null(last_.out);
    if (!parsed.is_array()) {
      ADD_FAILURE() << "doctor --json printed no array\n" << describe(last_);
      return out;
    }
    for (const auto& f : parsed.as_array()) {
      const auto& o = f.as_object();
      out.push_back({std::string(o.at("check").as_string()),
                     std::string(o.at("status").as_string()),
                     std::string(o.at("detail").as_string()),
                     o.at("fix").is_string() ? std::string(o.at("fix").as_string()) : ""});
    }
    return out;
  }
  std::vector<finding> run_doctor() { return run_doctor(dir_.file("mcpmux.sock")); }

  /// True when a finding of `check` has `status` and its detail and fix hold the texts given.
  static bool has(const std::vector<finding>& all, std::string_view check, std::string_view status,
                  std::string_view detail, std::string_view fix = {}) {
    return std::any_of(all.begin(), all.end(), [&](const finding& f) {
      return f.check == check && f.status == status && contains(f.detail, detail) &&
             contains(f.fix, fix);
    });
  }
  /// A problem was found: exit status 1.
  void expect_problem(const std::vector<finding>& all, std::string_view check,
                      std::string_view detail, std::string_view fix) {
    EXPECT_TRUE(has(all, check, "problem", detail, fix)) << describe(last_);
    EXPECT_EQ(last_.exit_code, 1) << describe(last_);
  }

  /// The mcpmuxd the units must run: the one next to mcpmux.
  const std::string ours_ = parent_of(mcpmux_path()) + "/mcpmuxd";
  const std::string home_ = dir_.file("home");
  const std::string units_ = dir_.file("units");
  run_result last_;
};

// The setup a user should have: a valid config, the daemon answering in a private directory,
// its servers ready, the units installed, enabled and running this build. Nothing to fix.
TEST_F(doctor, ACleanSetupExits0) {
  install_units(ours_);
  start_daemon(fake_server_table("alpha", {}));
  const auto all = run_doctor();
  EXPECT_EQ(last_.exit_code, 0) << describe(last_);
  for (const auto& f : all) EXPECT_NE(f.status, "problem") << f.check << ": " << f.detail;
  EXPECT_TRUE(has(all, "daemon", "ok", "answers on " + daemon_->socket())) << describe(last_);
  EXPECT_TRUE(has(all, "version", "ok", "")) << describe(last_);
  EXPECT_TRUE(has(all, "one daemon", "ok", std::to_string(daemon_->pid()))) << describe(last_);
  EXPECT_TRUE(has(all, "server alpha", "ok", fake_server_path())) << describe(last_);
  EXPECT_TRUE(has(all, "servers", "ok", "1 of 1")) << describe(last_);
  EXPECT_TRUE(has(all, "systemd units", "ok", "enabled")) << describe(last_);

  // The text form says the same, one line per check, problems with their fix.
  auto text =
      run_process({mcpmux_path(), "--socket", daemon_->socket(), "doctor"}, {}, 20s, user_env());
  EXPECT_EQ(text.exit_code, 0) << describe(text);
  EXPECT_TRUE(contains(text.out, "ok       server alpha: command ")) << describe(text);
  EXPECT_TRUE(contains(text.out, "0 problems")) << describe(text);
}

TEST_F(doctor, FindsAnInvalidConfig) {
  dir_.write("config.toml", "[daemon]\nno_such_key = 1\n");
  expect_problem(run_doctor(), "config", "no_such_key", "mcpmuxd --check-config");
}

TEST_F(doctor, FindsASocketDirectoryOthersMayEnter) {
  const std::string dir = dir_.file("open dir");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0755), 0);  // whatever the umask
  // The fix is one shell command, the path quoted.
  expect_problem(run_doctor(dir + "/mcpmux.sock"), "socket directory", "mode 0755",
                 "chmod 700 '" + dir + "'");
}

TEST_F(doctor, FindsNoDaemon) {
  install_units(ours_);
  expect_problem(run_doctor(), "daemon", "no daemon at " + dir_.file("mcpmux.sock"),
                 "systemctl --user enable --now mcpmuxd.socket");
}

// Two daemons of one user: agents that reach different ones run every server twice. The one
// that does not answer on the socket is the one to stop.
TEST_F(doctor, FindsTwoDaemonsOfOneUser) {
  install_units(ours_);
  start_daemon(fake_server_table("alpha", {}));
  temp_dir other_dir;
  other_dir.write("config.toml", fake_server_table("alpha", {}));
  daemon_options opt;
  opt.env["HOME"] = home_;
  daemon other(other_dir, opt);
  // Answering status: its loop runs (a SIGTERM before that would find no handler yet).
  ASSERT_TRUE(other.started() && other.wait_ready());
  expect_problem(run_doctor(), "one daemon", std::to_string(other.pid()) + " on " + other.socket(),
                 "kill " + std::to_string(other.pid()));
  other.stop();
}

// A command that is nowhere is to be installed; one that is here but not on the PATH the server
// runs with is to be named by its full path.
TEST_F(doctor, FindsACommandNotOnItsPath) {
  dir_.write("config.toml",
             "[servers.ghost]\ncommand = \"mcpmux-test-no-such-program\"\n\n"
             "[servers.pathless]\ncommand = \"sh\"\nenv = { PATH = \"" +
                 dir_.file("empty") + "\" }\n");
  const auto all = run_doctor();
  expect_problem(all, "server ghost", "mcpmux-test-no-such-program is not found",
                 "install mcpmux-test-no-such-program");
  expect_problem(all, "server pathless", "not found on its env.PATH",
                 "set servers.pathless.command = \"/");
}

// npx servers need Node.js 18 or later: a node too old, and an npx without node, on the PATH
// each server runs with.
TEST_F(doctor, FindsANodeTooOldForAnNpxServer) {
  const std::string old_bin = dir_.file("old-node"), no_node = dir_.file("no-node");
  for (const auto& bin : {old_bin, no_node}) {
    const std::string npx = dir_.write(bin.substr(dir_.path().size() + 1) + "/npx", "#!/bin/sh\n");
    ASSERT_EQ(::chmod(npx.c_str(), 0755), 0);
  }
  const std::string node = dir_.write("old-node/node", "#!/bin/sh\necho v16.20.2\n");
  ASSERT_EQ(::chmod(node.c_str(), 0755), 0);
  dir_.write("config.toml", "[servers.old]\ncommand = \"npx\"\nenv = { PATH = \"" + old_bin +
                                "\" }\n\n[servers.nodeless]\ncommand = \"npx\"\nenv = { PATH = \"" +
                                no_node + "\" }\n");
  const auto all = run_doctor();
  expect_problem(all, "server old", "is node v16.20.2; MCP servers need 18 or later",
                 "install Node.js 18 or later");
  expect_problem(all, "server nodeless", "node is not on its PATH", "apt install nodejs");
}

TEST_F(doctor, FindsACrashLoopingServer) {
  install_units(ours_);
  ASSERT_TRUE(start_until(
      "[daemon]\nreconnect_max_ms = 500\n\n" + fake_server_table("loop", {"--exit-after-init"}),
      "loop", [](const server_view& s) { return s.crash_looping; }));
  expect_problem(run_doctor(), "server loop", "crash-looping", "mcpmux logs loop");
}

TEST_F(doctor, FindsAServerHeldBackByTrust) {
  install_units(ours_);
  ASSERT_TRUE(start_until(fake_server_table("wary", {}, "trust = \"ask\""), "wary",
                          [](const server_view& s) { return s.state == "ready"; }));
  expect_problem(run_doctor(), "server wary", "held back by trust", "mcpmux trust wary");
}

// An HTTP server whose every answer is 401 and a config that says it uses OAuth: the daemon
// waits for a login.
TEST_F(doctor, FindsAServerWaitingForALogin) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  listener unauthorized(fd, [](int conn) {
    read_until(conn, "\r\n\r\n");
    constexpr std::string_view answer =
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\n"
        "Connection: close\r\n\r\n";
    (void)!::write(conn, answer.data(), answer.size());
  });
  install_units(ours_);
  ASSERT_TRUE(start_until("[servers.web]\ntype = \"http\"\nurl = \"http://127.0.0.1:" +
                              std::to_string(ntohs(addr.sin_port)) +
                              "/mcp\"\nera = \"legacy\"\noauth = true\n",
                          "web", [](const server_view& s) { return s.state == "needs_login"; }));
  expect_problem(run_doctor(), "server web", "waiting for an OAuth login", "mcpmux auth login web");
}

// A secret the config uses, no session bus, and no secrets file holding it: the daemon could not
// load the config.
TEST_F(doctor, FindsSecretsWithoutTheSecretService) {
  dir_.write("config.toml", fake_server_table("alpha", {}, "env = { TOKEN = \"${secret:tok}\" }"));
  auto all = run_doctor();
  expect_problem(all, "secrets", "no session bus", "mcpmux secret set tok");
  EXPECT_TRUE(has(all, "config", "problem", "no secret named \"tok\"")) << describe(last_);

  // Held by the secrets file, the config loads: only a warning for the secrets.
  const std::string file = dir_.write("xdg/config/mcpmux/secrets.json", R"({"tok":"value"})");
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  all = run_doctor();
  EXPECT_TRUE(has(all, "secrets", "warn", "every secret is in " + file)) << describe(last_);
  EXPECT_TRUE(has(all, "config", "ok", "1 server")) << describe(last_);
}

TEST_F(doctor, FindsATokenFileOthersMayRead) {
  const std::string token = dir_.write("http-token", std::string(64, 'a'));
  ASSERT_EQ(::chmod(token.c_str(), 0644), 0);
  dir_.write("config.toml",
             "[daemon]\nhttp = \"127.0.0.1:9\"\nhttp_token_file = \"" + token + "\"\n");
  expect_problem(run_doctor(), "http token", "mode 0644", "chmod 600 " + token);
}

TEST_F(doctor, FindsUnitsNotInstalled) {
  expect_problem(run_doctor(), "systemd units", "not installed", "meson install");
}

TEST_F(doctor, FindsUnitsNotEnabled) {
  install_units(ours_, false);
  expect_problem(run_doctor(), "systemd units", "not enabled",
                 "systemctl --user enable --now mcpmuxd.socket");
}

TEST_F(doctor, FindsUnitsRunningAnotherBinary) {
  install_units("/opt/elsewhere/bin/mcpmuxd");
  expect_problem(run_doctor(), "systemd units", "runs /opt/elsewhere/bin/mcpmuxd",
                 "ExecStart=" + ours_);
}

// A daemon of another version answers (here a stand-in that answers mcpmux/status only): the
// CLI and the daemon disagree on the protocol's details, and the daemon is to be restarted.
TEST_F(doctor, FindsADaemonOfAnotherVersion) {
  const std::string socket = dir_.file("mcpmux.sock");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 16), 0);
  listener old_daemon(fd, [](int conn) {
    const json::value request = parse_or_null(read_until(conn, "\n"));
    if (!request.is_object()) return;
    const json::value answer{{"jsonrpc", "2.0"},
                             {"id", request.as_object().at("id")},
                             {"result", {{"version", "0.0.1"}, {"pid", ::getpid()}}}};
    const std::string line = json::serialize(answer) + "\n";
    (void)!::write(conn, line.data(), line.size());
  });
  install_units(ours_);
  expect_problem(run_doctor(socket), "version", "mcpmuxd is 0.0.1", "kill ");
}

}  // namespace
}  // namespace mcpmux::test
