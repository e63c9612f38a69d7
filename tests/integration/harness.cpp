// Integration test harness: temp dirs, a real mcpmuxd, socket clients and the mcpmux CLI.
#include "tests/integration/harness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "config/import.hpp"

extern char** environ;

namespace mcpmux::test {
namespace {

// A child that exits before reading its stdin (mcpmux connect with no daemon) must make write()
// fail with EPIPE, not kill the test runner; children get SIGPIPE back before exec.
[[maybe_unused]] const bool sigpipe_ignored = [] {
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}();

using steady = std::chrono::steady_clock;

std::string required_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    std::fprintf(stderr, "integration_tests: $%s must name the binary under test\n", name);
    std::abort();
  }
  return v;
}

// Milliseconds left until `deadline`, for poll(); never negative.
int remaining_ms(steady::time_point deadline) {
  auto left = std::chrono::duration_cast<ms>(deadline - steady::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// The process environment with `changes` applied, as "K=V" strings.
std::vector<std::string> make_env(
    const std::map<std::string, std::optional<std::string>>& changes) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos && changes.count(std::string(kv.substr(0, eq)))) continue;
    out.emplace_back(kv);
  }
  for (const auto& [k, v] : changes)
    if (v) out.push_back(k + "=" + *v);
  return out;
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Environment variables of the daemon and CLI that a developer's shell must not leak into tests.
const std::map<std::string, std::optional<std::string>>& clean_env() {
  static const std::map<std::string, std::optional<std::string>> env{
      {"MCPMUX_TIMEOUT_MS", std::nullopt},
      {"MCPMUX_SOCKET", std::nullopt},
      {"MCPMUX_CONFIG", std::nullopt},
      {"JOURNAL_STREAM", std::nullopt},
      {"LISTEN_FDS", std::nullopt},
      {"LISTEN_PID", std::nullopt},
      {"NOTIFY_SOCKET", std::nullopt},
      // The fake server writes its logs and markers into the test's /tmp directory, which a
      // sandbox hides: these tests run servers unsandboxed unless a config names a sandbox
      // (tests/sandbox/ proves the sandbox; the compatibility sweep runs under it).
      {"MCPMUX_SANDBOX", "off"},
  };
  return env;
}

// Forks and execs `argv` with stdio on the given fds (-1 = /dev/null).
pid_t spawn(const std::vector<std::string>& argv, std::vector<std::string> env, int in, int out,
            int err) {
  std::vector<std::string> args = argv;
  auto cargs = c_strings(args);
  auto cenv = c_strings(env);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Child: never outlive a crashed test runner.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  int null = ::open("/dev/null", O_RDWR);
  ::dup2(in >= 0 ? in : null, 0);
  ::dup2(out >= 0 ? out : null, 1);
  ::dup2(err >= 0 ? err : null, 2);
  ::signal(SIGPIPE, SIG_DFL);
  ::execve(cargs[0], cargs.data(), cenv.data());
  std::fprintf(stderr, "exec %s: %s\n", cargs[0], std::strerror(errno));
  ::_exit(127);
}

int decode_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

const std::string& mcpmuxd_path() {
  static const std::string p = required_env("MCPMUXD");
  return p;
}
const std::string& mcpmux_path() {
  static const std::string p = required_env("MCPMUX");
  return p;
}
const std::string& fake_server_path() {
  static const std::string p = required_env("FAKE_MCP_SERVER");
  return p;
}

bool wait_until(const std::function<bool()>& pred, ms timeout, ms step) {
  const auto deadline = steady::now() + timeout;
  while (true) {
    if (pred()) return true;
    if (steady::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
}

std::int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<ms>(steady::now() - t).count();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The importer's quoting: control characters are escaped too (a test's argv may carry ESC).
std::string toml_quote(std::string_view s) {
  return mcpmux::toml_quote(s);
}

std::string fake_server_table(std::string_view name, const std::vector<std::string>& args,
                              std::string_view extra) {
  std::string out = "[servers." + std::string(name) + "]\n";
  out += "command = " + toml_quote(fake_server_path()) + "\n";
  out += "args = [";
  for (std::size_t i = 0; i < args.size(); ++i) out += (i ? ", " : "") + toml_quote(args[i]);
  out += "]\n";
  if (!extra.empty()) out += std::string(extra) + "\n";
  return out + "\n";
}

// ---------------------------------------------------------------------------------------------
// temp_dir

temp_dir::temp_dir() {
  std::string tmpl = "/tmp/mcpmux-it-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "mkdtemp: %s\n", std::strerror(errno));
    std::abort();
  }
  path_ = tmpl;
}

temp_dir::~temp_dir() {
  if (std::getenv("MCPMUX_TEST_KEEP") != nullptr) {
    std::fprintf(stderr, "kept %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string temp_dir::file(std::string_view name) const {
  return path_ + "/" + std::string(name);
}

std::string temp_dir::write(std::string_view name, std::string_view text) const {
  auto p = file(name);
  std::filesystem::create_directories(std::filesystem::path(p).parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return p;
}

// ---------------------------------------------------------------------------------------------
// processes

std::string describe(const run_result& r) {
  return "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") +
         "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

std::string initialize_line(int id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
         R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
         "\n";
}

run_result run_process(const std::vector<std::string>& argv, std::string_view stdin_text,
                       ms timeout, const std::map<std::string, std::optional<std::string>>& env) {
  run_result r;
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    ADD_FAILURE() << "pipe2: " << std::strerror(errno);
    return r;
  }
  auto changes = clean_env();
  for (const auto& [k, v] : env) changes[k] = v;
  pid_t pid = spawn(argv, make_env(changes), in[0], out[1], err[1]);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  int in_w = in[1];
  ::fcntl(in_w, F_SETFL, O_NONBLOCK);
  std::size_t written = 0;
  if (stdin_text.empty()) {
    ::close(in_w);
    in_w = -1;
  }
  const auto deadline = steady::now() + timeout;
  int fds[2] = {out[0], err[0]};
  std::string* sinks[2] = {&r.out, &r.err};
  while (fds[0] >= 0 || fds[1] >= 0) {
    pollfd p[3];
    int n = 0;
    int idx[3];
    for (int i = 0; i < 2; ++i)
      if (fds[i] >= 0) {
        p[n] = {fds[i], POLLIN, 0};
        idx[n++] = i;
      }
    if (in_w >= 0) {
      p[n] = {in_w, POLLOUT, 0};
      idx[n++] = 2;
    }
    const int left = remaining_ms(deadline);
    if (left == 0 || ::poll(p, static_cast<nfds_t>(n), left) == 0) {
      r.timed_out = true;
      break;
    }
    for (int k = 0; k < n; ++k) {
      if (p[k].revents == 0) continue;
      if (idx[k] == 2) {
        ssize_t w = ::write(in_w, stdin_text.data() + written, stdin_text.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 && errno != EAGAIN) written = stdin_text.size();
        if (written == stdin_text.size()) {
          ::close(in_w);
          in_w = -1;
        }
        continue;
      }
      char buf[65536];
      ssize_t got = ::read(fds[idx[k]], buf, sizeof buf);
      if (got > 0) {
        sinks[idx[k]]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[idx[k]]);
        fds[idx[k]] = -1;
      }
    }
  }
  if (in_w >= 0) ::close(in_w);
  for (int fd : fds)
    if (fd >= 0) ::close(fd);
  int status = 0;
  if (r.timed_out) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    r.exit_code = -1;
    return r;
  }
  // Output closed: the process is exiting (or closed its stdio and lingers; bounded anyway).
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (remaining_ms(deadline) == 0) {
      r.timed_out = true;
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return r;
    }
    std::this_thread::sleep_for(5ms);
  }
  r.exit_code = decode_status(status);
  return r;
}

run_result run_cli(const std::string& socket, const std::vector<std::string>& args,
                   std::string_view stdin_text, ms timeout) {
  std::vector<std::string> argv{mcpmux_path(), "--socket", socket};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, stdin_text, timeout);
}

std::vector<pid_t> child_pids(pid_t parent) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0') continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/status");
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("PPid:", 0) == 0) {
        if (std::atol(line.c_str() + 5) == parent) out.push_back(static_cast<pid_t>(pid));
        break;
      }
    }
  }
  ::closedir(d);
  return out;
}

char process_state(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  // "pid (comm) S ...": comm may hold spaces and parentheses; the state follows the last ')'.
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return 0;
  return stat[close + 2];
}

bool process_exists(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

long vm_rss_kib(pid_t pid) {
  for (const auto& line : read_lines("/proc/" + std::to_string(pid) + "/status"))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}

// ---------------------------------------------------------------------------------------------
// daemon

daemon::daemon(const temp_dir& dir, daemon_options opt) : opt_(std::move(opt)) {
  if (opt_.socket.empty()) opt_.socket = dir.file("mcpmux.sock");
  if (opt_.config.empty()) opt_.config = dir.file("config.toml");
  log_path_ = dir.file("daemon.log");
  int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (log_fd < 0) {
    ADD_FAILURE() << "cannot open " << log_path_ << ": " << std::strerror(errno);
    return;
  }
  std::vector<std::string> argv{mcpmuxd_path(), "--config",    opt_.config, "--socket",
                                opt_.socket,    "--log-level", "debug"};
  argv.insert(argv.end(), opt_.extra_args.begin(), opt_.extra_args.end());
  auto changes = clean_env();
  // Caches and defaults private to the test: no tool cache leaks from one test (or user) to
  // another.
  changes["XDG_CACHE_HOME"] = dir.file("xdg/cache");
  changes["XDG_STATE_HOME"] = dir.file("xdg/state");
  changes["XDG_CONFIG_HOME"] = dir.file("xdg/config");
  changes["XDG_RUNTIME_DIR"] = dir.file("xdg/run");
  for (const auto& [k, v] : opt_.env) changes[k] = v;
  pid_ = spawn(argv, make_env(changes), -1, log_fd, log_fd);
  ::close(log_fd);
  if (pid_ < 0) {
    ADD_FAILURE() << "fork: " << std::strerror(errno);
    return;
  }
  // Started = the socket accepts a connection.
  const bool up = wait_until(
      [&] {
        if (!running()) return true;
        int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, opt_.socket.c_str(), sizeof(addr.sun_path) - 1);
        bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        ::close(fd);
        return ok;
      },
      opt_.start_timeout);
  if (!running()) {
    ADD_FAILURE() << "mcpmuxd exited during start-up with status " << decode_status(status_)
                  << "; its log:\n"
                  << log();
    return;
  }
  if (!up) {
    ADD_FAILURE() << "mcpmuxd did not accept connections on " << opt_.socket << " within "
                  << opt_.start_timeout.count() << " ms; its log:\n"
                  << log();
    kill_hard();
    return;
  }
  started_ = true;
}

daemon::~daemon() {
  if (pid_ > 0 && !reaped_) stop();
}

std::string daemon::log() const {
  return read_file(log_path_);
}

bool daemon::wait_for_log(std::string_view text, ms timeout) const {
  return wait_until([&] { return log().find(text) != std::string::npos; }, timeout, 20ms);
}

std::vector<pid_t> daemon::children() const {
  return child_pids(pid_);
}

int daemon::open_fds() const {
  int n = 0;
  DIR* d = ::opendir(("/proc/" + std::to_string(pid_) + "/fd").c_str());
  if (d == nullptr) return -1;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

int daemon::settled_fds(ms timeout) const {
  int last = open_fds();
  wait_until(
      [&] {
        std::this_thread::sleep_for(100ms);
        const int now = open_fds();
        return std::exchange(last, now) == now;
      },
      timeout, 0ms);
  return last;
}

std::string daemon::describe_fds() const {
  std::string out;
  const std::string dir = "/proc/" + std::to_string(pid_) + "/fd";
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::error_code rec;
    auto target = std::filesystem::read_symlink(e.path(), rec);
    out += e.path().filename().string() + " -> " + target.string() + "\n";
  }
  return out;
}

bool daemon::running() {
  if (pid_ <= 0 || reaped_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    reaped_ = true;
    status_ = status;
    return false;
  }
  return true;
}

std::optional<int> daemon::wait_exit(ms timeout) {
  if (!wait_until([&] { return !running(); }, timeout, 5ms)) return std::nullopt;
  return decode_status(status_);
}

int daemon::stop(ms timeout) {
  if (pid_ <= 0) return -1;
  if (reaped_) return decode_status(status_);
  ::kill(pid_, SIGTERM);
  auto code = wait_exit(timeout);
  if (!code) {
    ADD_FAILURE() << "mcpmuxd did not exit within " << timeout.count()
                  << " ms of SIGTERM; killed. Its log:\n"
                  << log();
    kill_hard();
    return -1;
  }
  EXPECT_EQ(*code, 0) << "mcpmuxd exit status after SIGTERM; wait status " << status_
                      << ". Its log:\n"
                      << log();
  return *code;
}

void daemon::kill_hard() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status_, 0);
  reaped_ = true;
}

json::value daemon::status() {
  client c(opt_.socket, 2s);
  if (!c.connected()) return nullptr;
  auto r = c.request("mcpmux/status", json::object{}, 5s);
  if (!r || !r->is_object() || !r->as_object().contains("result")) return nullptr;
  return r->as_object().at("result");
}

bool daemon::wait_ready(const std::vector<std::string>& servers, ms timeout) {
  json::value last;
  bool ok = wait_until(
      [&] {
        last = status();
        const auto* s = last.is_object() ? last.as_object().if_contains("servers") : nullptr;
        if (s == nullptr || !s->is_array()) return false;
        for (const auto& srv : s->as_array()) {
          const auto& o = srv.as_object();
          std::string name(o.at("name").as_string());
          if (!servers.empty() && std::find(servers.begin(), servers.end(), name) == servers.end())
            continue;
          if (o.at("state") != "ready") return false;
        }
        return true;
      },
      timeout, 25ms);
  if (!ok)
    ADD_FAILURE() << "servers not ready within " << timeout.count()
                  << " ms; last status: " << json::serialize(last) << "\ndaemon log:\n"
                  << log();
  return ok;
}

// ---------------------------------------------------------------------------------------------
// client

client::client(const std::string& socket, ms timeout) {
  const auto deadline = steady::now() + timeout;
  while (true) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      fd_ = fd;
      return;
    }
    ::close(fd);
    if (steady::now() >= deadline) return;
    std::this_thread::sleep_for(20ms);
  }
}

client::~client() {
  close();
}

client::client(client&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      eof_(other.eof_),
      buf_(std::move(other.buf_)),
      next_id_(other.next_id_),
      seen_(std::move(other.seen_)) {}

void client::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool client::send_raw(std::string_view bytes, ms timeout) {
  if (fd_ < 0) return false;
  const auto deadline = steady::now() + timeout;
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd_, POLLOUT, 0};
      const int left = remaining_ms(deadline);
      if (left == 0 || ::poll(&p, 1, left) <= 0) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool client::send_line(std::string_view text, ms timeout) {
  std::string line(text);
  line += '\n';
  return send_raw(line, timeout);
}

bool client::send(const json::value& msg, ms timeout) {
  return send_line(json::serialize(msg), timeout);
}

std::optional<std::string> client::read_line(ms timeout) {
  const auto deadline = steady::now() + timeout;
  while (true) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    if (fd_ < 0 || eof_) return std::nullopt;
    pollfd p{fd_, POLLIN, 0};
    const int left = remaining_ms(deadline);
    if (left == 0) return std::nullopt;
    int r = ::poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return std::nullopt;
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      buf_.append(chunk, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
      eof_ = true;
    }
  }
}

std::optional<json::value> client::read_message(ms timeout) {
  auto line = read_line(timeout);
  if (!line) return std::nullopt;
  boost::system::error_code ec;
  auto v = json::parse(*line, ec);
  if (ec) {
    ADD_FAILURE() << "the daemon sent a line that is not JSON (" << ec.message()
                  << "): " << line->substr(0, 300);
    return std::nullopt;
  }
  return v;
}

bool client::wait_eof(ms timeout) {
  const auto deadline = steady::now() + timeout;
  while (!eof_) {
    buf_.clear();
    if (fd_ < 0) return true;
    pollfd p{fd_, POLLIN, 0};
    const int left = remaining_ms(deadline);
    if (left == 0) return false;
    int r = ::poll(&p, 1, left);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) eof_ = true;
  }
  return true;
}

std::optional<json::value> client::wait_response(const json::value& id, ms timeout) {
  const auto deadline = steady::now() + timeout;
  while (true) {
    const int left = remaining_ms(deadline);
    if (left == 0) return std::nullopt;
    auto m = read_message(ms(left));
    if (!m) return std::nullopt;
    if (m->is_object()) {
      const auto& o = m->as_object();
      const auto* mid = o.if_contains("id");
      if (mid != nullptr && *mid == id && !o.contains("method") &&
          (o.contains("result") || o.contains("error")))
        return m;
    }
    seen_.push_back(std::move(*m));
  }
}

std::optional<json::value> client::request(std::string_view method, json::value params,
                                           ms timeout) {
  const auto id = next_id();
  json::object req{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) req["params"] = std::move(params);
  if (!send(req)) return std::nullopt;
  return wait_response(json::value(id), timeout);
}

std::optional<json::value> client::wait_notification(std::string_view method, ms timeout) {
  auto matches = [&](const json::value& m) {
    if (!m.is_object()) return false;
    const auto* mm = m.as_object().if_contains("method");
    return mm != nullptr && mm->is_string() && mm->as_string() == method &&
           !m.as_object().contains("id");
  };
  for (auto it = seen_.begin(); it != seen_.end(); ++it)
    if (matches(*it)) {
      auto v = std::move(*it);
      seen_.erase(it);
      return v;
    }
  const auto deadline = steady::now() + timeout;
  while (true) {
    const int left = remaining_ms(deadline);
    if (left == 0) return std::nullopt;
    auto m = read_message(ms(left));
    if (!m) return std::nullopt;
    if (matches(*m)) return m;
    seen_.push_back(std::move(*m));
  }
}

std::optional<json::value> client::initialize(std::string_view version) {
  auto r = request("initialize",
                   json::object{{"protocolVersion", version},
                                {"capabilities", json::object{}},
                                {"clientInfo", {{"name", "integration-test"}, {"version", "1"}}}});
  if (!r || !r->as_object().contains("result")) return std::nullopt;
  send(json::object{{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
  return r->as_object().at("result");
}

std::optional<json::value> client::call(std::string_view tool, json::value arguments, ms timeout) {
  return request("tools/call", json::object{{"name", tool}, {"arguments", std::move(arguments)}},
                 timeout);
}

// ---------------------------------------------------------------------------------------------
// helpers over messages

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

namespace {

std::string str_or_empty(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

std::int64_t int_or(const json::object& o, std::string_view key, std::int64_t dflt) {
  const auto* v = o.if_contains(key);
  if (v && v->is_int64()) return v->as_int64();
  if (v && v->is_uint64()) return static_cast<std::int64_t>(v->as_uint64());
  return dflt;
}

std::vector<std::string> strings_of(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const auto* v = o.if_contains(key); v && v->is_array())
    for (const auto& s : v->as_array())
      if (s.is_string()) out.emplace_back(s.as_string());
  return out;
}

bool bool_of(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_bool() && v->as_bool();
}

}  // namespace

server_view view_of(const json::value& status, std::string_view name) {
  server_view out;
  const auto* s = status.is_object() ? status.as_object().if_contains("servers") : nullptr;
  if (s == nullptr || !s->is_array()) return out;
  for (const auto& srv : s->as_array()) {
    if (!srv.is_object() || srv.at("name") != json::value(name)) continue;
    const auto& o = srv.as_object();
    out.found = true;
    out.state = str_or_empty(o, "state");
    out.pid = static_cast<pid_t>(int_or(o, "pid", -1));
    out.attempt = int_or(o, "attempt", -1);
    out.restarts = int_or(o, "restarts", -1);
    out.tools = int_or(o, "tools", -1);
    out.last_error = str_or_empty(o, "last_error");
    out.last_error_at_ms = int_or(o, "last_error_at_ms", -1);
    out.last_stderr = str_or_empty(o, "last_stderr");
    out.tools_from_cache = bool_of(o, "tools_from_cache");
    out.crash_looping = bool_of(o, "crash_looping");
    out.notes = strings_of(o, "notes");
    out.stderr_tail = strings_of(o, "stderr_tail");
    out.raw = json::serialize(srv);
  }
  return out;
}

server_view status_of(client& ctl, std::string_view name) {
  auto r = ctl.request("mcpmux/status", json::object{}, 5s);
  const auto* res = member(r, "result");
  return res ? view_of(*res, name) : server_view{};
}

server_view wait_server(client& ctl, std::string_view name,
                        const std::function<bool(const server_view&)>& pred, ms timeout, bool* ok,
                        ms step) {
  server_view last;
  *ok = wait_until(
      [&] {
        last = status_of(ctl, name);
        return last.found && pred(last);
      },
      timeout, step);
  return last;
}

std::vector<std::string> server_log(client& ctl, std::string_view name) {
  std::vector<std::string> out;
  auto r = ctl.request("mcpmux/logs", json::object{{"server", name}, {"lines", 1000}}, 5s);
  const auto* res = member(r, "result");
  if (res == nullptr || !res->is_object()) return out;
  const auto* lines = res->as_object().if_contains("lines");
  if (lines == nullptr || !lines->is_array()) return out;
  for (const auto& l : lines->as_array())
    if (l.is_string()) out.emplace_back(l.as_string());
  return out;
}

std::vector<std::string> tool_names(const json::value& response) {
  std::vector<std::string> out;
  const auto* r = response.is_object() ? response.as_object().if_contains("result") : nullptr;
  const auto* tools = r && r->is_object() ? r->as_object().if_contains("tools") : nullptr;
  if (tools == nullptr || !tools->is_array()) return out;
  for (const auto& t : tools->as_array()) out.emplace_back(t.at("name").as_string());
  return out;
}

std::string first_text(const json::value& response) {
  const auto* r = response.is_object() ? response.as_object().if_contains("result") : nullptr;
  const auto* c = r && r->is_object() ? r->as_object().if_contains("content") : nullptr;
  if (c == nullptr || !c->is_array() || c->as_array().empty()) return {};
  const auto* t = c->as_array()[0].as_object().if_contains("text");
  return t && t->is_string() ? std::string(t->as_string()) : std::string();
}

std::vector<json::value> fake_exchange(const std::vector<std::string>& args,
                                       const std::vector<json::value>& requests) {
  std::vector<std::string> argv{fake_server_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string input =
      R"({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":)"
      R"("2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})"
      "\n"
      R"({"jsonrpc":"2.0","method":"notifications/initialized"})"
      "\n";
  for (const auto& r : requests) input += json::serialize(r) + "\n";
  auto r = run_process(argv, input, 5s);
  EXPECT_EQ(r.exit_code, 0) << "fake server run directly; stderr:\n" << r.err;
  std::vector<json::value> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    boost::system::error_code ec;
    auto v = json::parse(line, ec);
    if (!ec) out.push_back(std::move(v));
  }
  return out;
}

json::value find_response(const std::vector<json::value>& messages, const json::value& id) {
  for (const auto& m : messages) {
    if (!m.is_object() || m.as_object().contains("method")) continue;
    const auto* mid = m.as_object().if_contains("id");
    if (mid != nullptr && *mid == id) return m;
  }
  return nullptr;
}

std::vector<std::string> fake_tool_names(const std::vector<std::string>& args) {
  auto out = fake_exchange(
      args, {json::object{{"jsonrpc", "2.0"}, {"id", "list"}, {"method", "tools/list"}}});
  auto names = tool_names(find_response(out, "list"));
  EXPECT_FALSE(names.empty()) << "the fake server listed no tools";
  return names;
}

// ---------------------------------------------------------------------------------------------
// fixture

daemon& daemon_test::start(std::string_view config_text, daemon_options opt, bool wait_ready) {
  dir_.write("config.toml", config_text);
  daemon_.emplace(dir_, std::move(opt));
  if (daemon_->started() && wait_ready) daemon_->wait_ready();
  return *daemon_;
}

client daemon_test::connect() {
  client c(daemon_->socket());
  EXPECT_TRUE(c.connected()) << "cannot connect to " << daemon_->socket();
  return c;
}

client daemon_test::connect_initialized() {
  client c = connect();
  EXPECT_TRUE(c.initialize().has_value()) << "initialize failed";
  return c;
}

void daemon_test::TearDown() {
  if (daemon_) daemon_->stop();
  // A failed test shows the end of the daemon's log, which usually says why.
  if (HasFailure() && daemon_) {
    auto lines = read_lines(daemon_->log_path());
    const std::size_t from = lines.size() > 60 ? lines.size() - 60 : 0;
    std::string tail;
    for (std::size_t i = from; i < lines.size(); ++i) tail += lines[i].substr(0, 400) + "\n";
    std::fprintf(stderr, "--- last lines of %s ---\n%s---\n", daemon_->log_path().c_str(),
                 tail.c_str());
  }
  daemon_.reset();
}

const json::value* member(const std::optional<json::value>& v, std::string_view key) {
  if (!v || !v->is_object()) return nullptr;
  return v->as_object().if_contains(key);
}

std::int64_t error_code(const std::optional<json::value>& v) {
  const auto* e = member(v, "error");
  if (e == nullptr || !e->is_object()) return 0;
  const auto* c = e->as_object().if_contains("code");
  return c != nullptr && c->is_int64() ? c->as_int64() : 0;
}

std::string error_message(const std::optional<json::value>& v) {
  const auto* e = member(v, "error");
  if (e == nullptr || !e->is_object()) return {};
  const auto* m = e->as_object().if_contains("message");
  return m != nullptr && m->is_string() ? std::string(m->as_string()) : std::string();
}

json::value parse_or_null(std::string_view text) {
  boost::system::error_code ec;
  auto v = json::parse(text, ec);
  return ec ? json::value(nullptr) : v;
}

}  // namespace mcpmux::test
