// Integration tests of how clients find the daemon whatever environment an agent passes (one
// gateway per user), and of what a socket's directory and its listener must be before anything
// is sent to it or created in it (another local user must not receive an agent's stdio).
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "tests/integration/child_process.hpp"
#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

constexpr uid_t nobody = 65534;

std::string environ_of(pid_t pid) {
  return read_file("/proc/" + std::to_string(pid) + "/environ");
}

bool has_variable(const std::string& environ, const std::string& assignment) {
  const std::string needle = assignment + '\0';
  return environ.starts_with(needle) || environ.find('\0' + needle) != std::string::npos;
}

/// Live mcpmuxd processes started with HOME=home: the daemons of one test's user.
std::vector<pid_t> daemons_of(const std::string& home) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    const std::string proc = "/proc/" + std::string(e->d_name);
    if (read_file(proc + "/comm") != "mcpmuxd\n") continue;
    if (process_state(static_cast<pid_t>(pid)) == 'Z') continue;
    if (has_variable(environ_of(static_cast<pid_t>(pid)), "HOME=" + home))
      out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(d);
  return out;
}

/// `argv` under `env -i` with only the six variables the TypeScript SDK's stdio transport passes
/// by default (HOME pointing at `home`), plus `extra` assignments.
std::vector<std::string> bare(const std::string& home, const std::vector<std::string>& argv,
                              const std::vector<std::string>& extra = {}) {
  const char* path = std::getenv("PATH");
  std::vector<std::string> out{
      "/usr/bin/env",  "-i",
      "HOME=" + home,  std::string("PATH=") + (path ? path : "/usr/bin:/bin"),
      "USER=tester",   "LOGNAME=tester",
      "SHELL=/bin/sh", "TERM=dumb"};
  out.insert(out.end(), extra.begin(), extra.end());
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

bool accepts(const std::string& socket) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

class one_gateway : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(home_.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir(run_.c_str(), 0700), 0);
    dir_.write("home/.config/mcpmux/config.toml", fake_server_table("alpha", {}));
  }
  void TearDown() override {
    for (pid_t pid : daemons_of(home_)) ::kill(pid, SIGTERM);
    EXPECT_TRUE(wait_until([&] { return daemons_of(home_).empty(); }, 5s));
  }

  std::string daemon_log() const { return read_file(home_ + "/.local/state/mcpmux/mcpmuxd.log"); }

  temp_dir dir_;
  const std::string home_ = dir_.file("home");
  const std::string run_ = dir_.file("run");  // the login's $XDG_RUNTIME_DIR
  const std::string socket_ = run_ + "/mcpmux/mcpmux.sock";
  const std::string record_ = home_ + "/.local/state/mcpmux/daemon-socket";
};

// An agent on the official TypeScript SDK starts `mcpmux connect --spawn` with HOME, LOGNAME,
// PATH, SHELL, TERM and USER only: it reaches the daemon already running on $XDG_RUNTIME_DIR
// through the record, and no second daemon starts. That daemon, with no bus address of its own,
// gives its servers the user's bus in the runtime directory.
TEST_F(one_gateway, ABareEnvironmentFindsTheRunningDaemon) {
  // The user's session bus, where systemd puts it (any socket will do: nobody talks D-Bus here).
  const std::string bus = run_ + "/bus";
  const int bus_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, bus.c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(::bind(bus_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);

  child_process first(
      bare(home_, {mcpmuxd_path(), "--log-level", "debug"}, {"XDG_RUNTIME_DIR=" + run_}), {},
      dir_.file("first.err"));
  ASSERT_TRUE(wait_until([&] { return accepts(socket_); }, 10s))
      << read_file(dir_.file("first.err"));
  // The socket listens a moment before the daemon records it.
  EXPECT_TRUE(wait_until([&] { return read_file(record_) == socket_ + "\n"; }, 5s))
      << read_file(record_);
  EXPECT_EQ(mode_of(record_), 0600u);
  ASSERT_EQ(daemons_of(home_).size(), 1u);

  auto agent =
      run_process(bare(home_, {mcpmux_path(), "connect", "--spawn"}), initialize_line(1), 15s);
  EXPECT_EQ(agent.exit_code, 0) << describe(agent);
  EXPECT_NE(agent.out.find("\"protocolVersion\""), std::string::npos) << describe(agent);
  EXPECT_EQ(daemons_of(home_), std::vector<pid_t>{first.pid()}) << daemon_log();

  // Every command finds it the same way.
  auto st = run_process(bare(home_, {mcpmux_path(), "status", "--json"}), {}, 10s);
  ASSERT_EQ(st.exit_code, 0) << describe(st);
  auto status = parse_or_null(st.out);
  ASSERT_TRUE(status.is_object()) << st.out;
  EXPECT_EQ(status.at("pid"), json::value(first.pid()));
  EXPECT_EQ(status.at("socket"), json::value(socket_));

  // The bus: derived for the daemon, inherited by its server.
  json::value server_pid;
  ASSERT_TRUE(wait_until(
      [&] {
        auto again = run_process(bare(home_, {mcpmux_path(), "status", "--json"}), {}, 10s);
        auto s = parse_or_null(again.out);
        if (!s.is_object()) return false;
        for (const auto& srv : s.at("servers").as_array())
          if (srv.at("name").as_string() == "alpha" && srv.at("pid").is_int64())
            server_pid = srv.at("pid");
        return !server_pid.is_null();
      },
      10s));
  EXPECT_TRUE(has_variable(environ_of(static_cast<pid_t>(server_pid.as_int64())),
                           "DBUS_SESSION_BUS_ADDRESS=unix:path=" + bus))
      << "the server's environment lacks the derived bus address";
  ::close(bus_fd);

  // A daemon that stops takes its record with it.
  ASSERT_EQ(::kill(first.pid(), SIGTERM), 0);
  EXPECT_EQ(first.wait_exit(5s), std::optional<int>(0));
  EXPECT_FALSE(exists(record_));
}

// Two agents that start at the same moment with nothing running start one daemon between them,
// on the default socket, which it records.
TEST_F(one_gateway, TwoSpawnsAtOnceStartOneDaemon) {
  std::vector<std::unique_ptr<child_process>> agents;
  for (int i = 0; i < 2; ++i)
    agents.push_back(std::make_unique<child_process>(
        bare(home_, {mcpmux_path(), "connect", "--spawn"}, {"XDG_RUNTIME_DIR=" + run_}),
        std::map<std::string, std::string>{}, dir_.file("agent" + std::to_string(i) + ".err")));
  for (auto& a : agents) ASSERT_TRUE(a->write(initialize_line(1)));
  for (std::size_t i = 0; i < agents.size(); ++i) {
    EXPECT_TRUE(agents[i]->wait_output("\"protocolVersion\"", 15s))
        << "agent " << i << ": " << agents[i]->out()
        << read_file(dir_.file("agent" + std::to_string(i) + ".err")) << daemon_log();
  }
  EXPECT_EQ(daemons_of(home_).size(), 1u) << daemon_log();
  EXPECT_EQ(read_file(record_), socket_ + "\n");
  EXPECT_EQ(mode_of(run_ + "/mcpmux"), 0700u);
  for (auto& a : agents) {
    a->close_stdin();
    EXPECT_EQ(a->wait_exit(5s), std::optional<int>(0));
  }
}

// ---------------------------------------------------------------------------------------------
// Another local user. Tests run as root; "nobody" plays the other account.

/// A listener of another user at `socket`: it reports, per connection, the bytes and descriptors
/// it received ("BYTES FDS\n" down a pipe).
class other_users_listener {
 public:
  /// `dir` is made the other user's for the bind, then given `final_owner` (and 0700).
  other_users_listener(const std::string& socket, const std::string& dir, uid_t final_owner) {
    int ready[2];
    if (::pipe(ready) != 0 || ::pipe(report_) != 0) return;
    ::chown(dir.c_str(), nobody, nobody);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      ::close(report_[0]);
      if (::setgroups(0, nullptr) != 0 || ::setgid(nobody) != 0 || ::setuid(nobody) != 0)
        ::_exit(1);
      const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0)
        ::_exit(1);
      (void)::write(ready[1], "r", 1);
      for (;;) {
        const int c = ::accept(fd, nullptr, nullptr);
        if (c < 0) continue;
        std::size_t bytes = 0, fds = 0;
        for (;;) {
          char buf[4096];
          alignas(cmsghdr) char control[CMSG_SPACE(16 * sizeof(int))];
          iovec iov{buf, sizeof buf};
          msghdr msg{};
          msg.msg_iov = &iov;
          msg.msg_iovlen = 1;
          msg.msg_control = control;
          msg.msg_controllen = sizeof control;
          const ssize_t n = ::recvmsg(c, &msg, 0);
          if (n <= 0) break;
          bytes += static_cast<std::size_t>(n);
          for (cmsghdr* h = CMSG_FIRSTHDR(&msg); h != nullptr; h = CMSG_NXTHDR(&msg, h))
            if (h->cmsg_type == SCM_RIGHTS) fds += (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        }
        const std::string line = std::to_string(bytes) + " " + std::to_string(fds) + "\n";
        (void)::write(report_[1], line.data(), line.size());
        ::close(c);
      }
    }
    ::close(ready[1]);
    ::close(report_[1]);
    char byte = 0;
    listening_ = ::read(ready[0], &byte, 1) == 1;
    ::close(ready[0]);
    ::chown(dir.c_str(), final_owner, final_owner == 0 ? 0 : final_owner);
    ::chmod(dir.c_str(), 0700);
  }
  ~other_users_listener() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(report_[0]);
  }
  bool listening() const { return listening_; }
  /// What the listener reported within `timeout` ("" when no connection ended).
  std::string reports(ms timeout) {
    std::string out;
    pollfd p{report_[0], POLLIN, 0};
    while (::poll(&p, 1, static_cast<int>(timeout.count())) > 0) {
      char buf[256];
      const ssize_t n = ::read(report_[0], buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
      timeout = 200ms;
    }
    return out;
  }

 private:
  pid_t pid_ = -1;
  int report_[2] = {-1, -1};
  bool listening_ = false;
};

class another_user : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::getuid() != 0) GTEST_SKIP() << "needs root to play a second local user";
    // nobody must be able to reach the test's directory to bind in it.
    ASSERT_EQ(::chmod(dir_.path().c_str(), 0711), 0);
  }
  temp_dir dir_;
};

// A socket in a directory another user owns (they made /tmp/mcpmux-UID first): no command
// connects, `--spawn` starts nothing, nothing reaches the listener.
TEST_F(another_user, ASocketDirectoryOfAnotherUserIsRefused) {
  const std::string taken = dir_.file("taken");
  ASSERT_EQ(::mkdir(taken.c_str(), 0700), 0);
  const std::string socket = taken + "/mcpmux.sock";
  other_users_listener thief(socket, taken, nobody);
  ASSERT_TRUE(thief.listening());

  auto connect = run_process({mcpmux_path(), "--socket", socket, "connect", "--spawn"},
                             initialize_line(1), 10s);
  EXPECT_EQ(connect.exit_code, 3) << describe(connect);
  EXPECT_NE(connect.err.find("refusing to use the socket " + socket), std::string::npos)
      << describe(connect);
  EXPECT_NE(connect.err.find("belongs to uid 65534"), std::string::npos) << describe(connect);
  auto call = run_process({mcpmux_path(), "--socket", socket, "call", "a__b", "{}"}, {}, 10s);
  EXPECT_EQ(call.exit_code, 3) << describe(call);
  EXPECT_EQ(thief.reports(500ms), "") << "the other user's listener was connected to";
}

// The directory is the user's own and private, but the listener in it is not theirs: the CLI
// hangs up before sending a byte or a descriptor.
TEST_F(another_user, AListenerOfAnotherUserReceivesNothing) {
  const std::string dir = dir_.file("mine");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string socket = dir + "/mcpmux.sock";
  other_users_listener thief(socket, dir, 0);
  ASSERT_TRUE(thief.listening());
  ASSERT_EQ(mode_of(dir), 0700u);

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"connect"}, {"status"}, {"call", "a__b", "{}"}, {"dashboard"}}) {
    std::vector<std::string> argv{mcpmux_path(), "--socket", socket};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = run_process(argv, initialize_line(1), 10s);
    EXPECT_EQ(r.exit_code, 3) << args.front() << ": " << describe(r);
    EXPECT_NE(r.err.find("it is served by uid 65534"), std::string::npos)
        << args.front() << ": " << describe(r);
  }
  const std::string reports = thief.reports(2s);
  EXPECT_EQ(reports, "0 0\n0 0\n0 0\n0 0\n") << "what the other user's listener received";
}

// `connect --spawn` opens its lock without following a symlink planted in its place.
TEST_F(another_user, TheSpawnLockIsNotFollowedThroughASymlink) {
  const std::string home = dir_.file("home");
  const std::string run = dir_.file("run");
  ASSERT_EQ(::mkdir(run.c_str(), 0700), 0);
  dir_.write("home/.config/mcpmux/config.toml", fake_server_table("alpha", {}));
  const std::string victim = dir_.write("victim", "keep\n");
  ASSERT_EQ(::mkdir((home + "/.local").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((home + "/.local/state").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((home + "/.local/state/mcpmux").c_str(), 0700), 0);
  ASSERT_EQ(::symlink(victim.c_str(), (home + "/.local/state/mcpmux/spawn.lock").c_str()), 0);
  auto r =
      run_process(bare(home, {mcpmux_path(), "connect", "--spawn"}, {"XDG_RUNTIME_DIR=" + run}),
                  initialize_line(1), 10s);
  EXPECT_EQ(r.exit_code, 3) << describe(r);
  EXPECT_NE(r.err.find("spawn.lock"), std::string::npos) << describe(r);
  EXPECT_EQ(read_file(victim), "keep\n");
  EXPECT_TRUE(daemons_of(home).empty());
}

// The daemon never follows a symlinked socket directory, never changes the mode of a directory it
// did not make (a shared 1777 one keeps its sticky bit), and refuses another user's; one it makes
// is 0700.
TEST_F(another_user, TheDaemonKeepsItsHandsOffDirectoriesItDidNotMake) {
  const std::string config = dir_.write("config.toml", fake_server_table("alpha", {}));
  auto refused = [&](const std::string& socket, std::string_view why) {
    auto r = run_process({mcpmuxd_path(), "--config", config, "--socket", socket}, {}, 10s);
    EXPECT_EQ(r.exit_code, 1) << describe(r);
    EXPECT_NE(r.err.find(why), std::string::npos) << describe(r);
    EXPECT_FALSE(exists(socket));
  };

  const std::string victim = dir_.file("victim-home");
  ASSERT_EQ(::mkdir(victim.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(victim.c_str(), 0755), 0);
  const std::string link = dir_.file("mcpmux-link");
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  refused(link + "/mcpmux.sock", "is a symbolic link");
  EXPECT_EQ(mode_of(victim), 0755u);
  EXPECT_FALSE(exists(victim + "/mcpmux.sock"));

  const std::string shared = dir_.file("shared");
  ASSERT_EQ(::mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  refused(shared + "/x.sock", "has mode 1777");
  EXPECT_EQ(mode_of(shared), 01777u);

  const std::string theirs = dir_.file("theirs");
  ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
  ASSERT_EQ(::chown(theirs.c_str(), nobody, nobody), 0);
  refused(theirs + "/x.sock", "belongs to uid 65534");

  daemon_options opt;
  opt.config = config;
  opt.socket = dir_.file("made/here/mcpmux.sock");
  daemon d(dir_, opt);
  ASSERT_TRUE(d.wait_ready());
  EXPECT_EQ(mode_of(dir_.file("made/here")), 0700u);
}

}  // namespace
}  // namespace mcpmux::test
