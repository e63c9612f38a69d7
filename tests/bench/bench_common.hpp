// Shared pieces of the mcpmux benchmarks (processes, NDJSON peers, timed call loops, daemon start).
// Everything is in an anonymous namespace: include from exactly one translation unit per program.
#pragma once
#include <fmt/core.h>
#include <boost/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

namespace json = boost::json;
namespace fs = std::filesystem;
using clk = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what);
}
[[noreturn]] void fail_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// ---------------------------------------------------------------------------------------------
// Processes

// The children alive, for a bench stopped by a signal (Ctrl-C, `timeout`'s SIGTERM): they run in
// process groups of their own, which the terminal's signal does not reach, and destructors do not
// run. Each slot holds a pid (0: free); the handler reads them, so they are lock-free atomics.
std::atomic<pid_t> live_children[64];
static_assert(std::atomic<pid_t>::is_always_lock_free);

extern "C" void stop_children_then_die(int sig) {
  for (auto& slot : live_children)
    if (const pid_t pid = slot.load(); pid > 0) ::kill(pid, SIGTERM);  // a daemon stops its own
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void track_child(pid_t pid) {
  static const bool handlers = [] {
    struct sigaction sa {};
    sa.sa_handler = stop_children_then_die;
    ::sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    return true;
  }();
  (void)handlers;
  for (auto& slot : live_children) {
    pid_t free = 0;
    if (slot.compare_exchange_strong(free, pid)) return;
  }
}

void untrack_child(pid_t pid) {
  for (auto& slot : live_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

// A child process; the destructor stops it (stdin close, SIGTERM, SIGKILL, each bounded) and reaps
// it. A signal that stops the bench sends it SIGTERM.
class child {
 public:
  child() = default;
  child(const child&) = delete;
  child& operator=(const child&) = delete;
  ~child() { stop(); }

  // Spawns `argv` in its own process group. With `pipes`, stdin/stdout are pipes to us;
  // otherwise stdin is /dev/null and stdout goes to `out_file`. stderr always goes to `err_file`.
  // posix_spawn (a vfork), as systemd and `mcpmux connect --spawn` launch the daemon: a fork of
  // this process would copy its page tables, a cost of the bench's own counted in start times.
  void spawn(const std::vector<std::string>& argv, bool pipes, const std::string& out_file,
             const std::string& err_file) {
    int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
    if (pipes && (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0))
      fail_errno("pipe");
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    ::posix_spawn_file_actions_init(&fa);
    ::posix_spawnattr_init(&attr);
    ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    ::posix_spawnattr_setpgroup(&attr, 0);
    if (pipes) {
      ::posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
      ::posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    } else {
      ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
      ::posix_spawn_file_actions_addopen(&fa, 1, out_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                         0600);
    }
    ::posix_spawn_file_actions_addopen(&fa, 2, err_file.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                       0600);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, args[0], &fa, &attr, args.data(), environ);
    ::posix_spawn_file_actions_destroy(&fa);
    ::posix_spawnattr_destroy(&attr);
    if (rc != 0) {
      errno = rc;
      fail_errno("posix_spawn");
    }
    pid_ = pid;
    track_child(pid);
    if (pipes) {
      ::close(in_pipe[0]);
      ::close(out_pipe[1]);
      to_child_ = in_pipe[1];
      from_child_ = out_pipe[0];
    }
  }

  pid_t pid() const { return pid_; }
  int to_child() const { return to_child_; }
  int from_child() const { return from_child_; }

  // True while the process has not exited (reaps it if it has).
  bool alive() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      untrack_child(pid_);
      pid_ = -1;
      return false;
    }
    return true;
  }

  void stop() {
    close_fd(to_child_);
    if (pid_ > 0) {
      // A pipe child exits on stdin EOF; a daemon needs SIGTERM.
      if (!wait_for(std::chrono::milliseconds(from_child_ >= 0 ? 1000 : 0))) {
        ::kill(pid_, SIGTERM);
        if (!wait_for(std::chrono::seconds(5))) {
          ::kill(-pid_, SIGKILL);
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, nullptr, 0);
          untrack_child(pid_);
          pid_ = -1;
        }
      }
    }
    close_fd(from_child_);
  }

 private:
  static void close_fd(int& fd) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  bool wait_for(clk::duration d) {
    const auto until = clk::now() + d;
    for (;;) {
      if (!alive()) return true;
      if (clk::now() >= until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
};

// Reads `--flag value` pairs: `set(flag, value)` says whether it knew the flag. --help and -h
// call usage(0); an unknown flag or a missing value, usage(2).
template <class Set>
void read_flags(int argc, char** argv, void (*usage)(int), Set set) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") usage(0);
    if (i + 1 >= argc || !set(a, std::string(argv[++i]))) usage(2);
  }
}

// A private temporary directory, removed with its contents on destruction.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "mcpmux-bench-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) fail_errno("mkdtemp");
    path_ = tmpl;
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// user+system CPU time of `pid` in seconds, from /proc/PID/stat.
[[maybe_unused]] double cpu_seconds(pid_t pid) {
  std::ifstream f(fmt::format("/proc/{}/stat", pid));
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto rp = s.rfind(')');
  if (rp == std::string::npos) fail(fmt::format("cannot read /proc/{}/stat", pid));
  std::istringstream in(s.substr(rp + 2));
  std::vector<std::string> fields;
  for (std::string t; in >> t;) fields.push_back(t);
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  if (fields.size() < 13) fail(fmt::format("short /proc/{}/stat", pid));
  const double ticks = std::stod(fields[11]) + std::stod(fields[12]);
  return ticks / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// CPU time of every thread of `pid` in seconds, from /proc/PID/task/*/schedstat (nanoseconds:
// fine enough for a few thousand calls, where the 100 Hz ticks of /proc/PID/stat are not).
[[maybe_unused]] double cpu_seconds_fine(pid_t pid) {
  std::uint64_t ns = 0;
  std::error_code ec;
  for (const auto& t : fs::directory_iterator(fmt::format("/proc/{}/task", pid), ec)) {
    std::ifstream f(t.path() / "schedstat");
    std::uint64_t run = 0;
    if (f >> run) ns += run;
  }
  return static_cast<double>(ns) * 1e-9;
}

// user+system CPU time of this process in seconds.
double self_cpu_seconds() {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

// A "VmXXX:" line of /proc/PID/status in KiB.
[[maybe_unused]] long status_kib(pid_t pid, std::string_view key) {
  std::ifstream f(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + key.size(), nullptr, 10);
  fail(fmt::format("no {} in /proc/{}/status", key, pid));
}

// ---------------------------------------------------------------------------------------------
// Line I/O

// One NDJSON peer over a pair of fds (the same fd for a socket), with one reusable read buffer.
class line_conn {
 public:
  line_conn(int rfd, int wfd, bool owns) : rfd_(rfd), wfd_(wfd), owns_(owns), buf_(1 << 20) {}
  line_conn(const line_conn&) = delete;
  line_conn& operator=(const line_conn&) = delete;
  ~line_conn() {
    if (owns_) ::close(rfd_);
  }

  static line_conn connect_unix(const std::string& path) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail_errno("socket");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) fail("socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      fail_errno("connect " + path);
    }
    return line_conn(fd, fd, true);
  }
  line_conn(line_conn&& o) noexcept
      : rfd_(o.rfd_),
        wfd_(o.wfd_),
        owns_(o.owns_),
        buf_(std::move(o.buf_)),
        begin_(o.begin_),
        end_(o.end_) {
    o.owns_ = false;
  }

  int fd() const { return rfd_; }

  void write_all(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::write(wfd_, data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        fail_errno("write");
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // A complete line already buffered, without reading.
  std::optional<std::string_view> next_buffered() {
    char* b = buf_.data() + begin_;
    char* nl = static_cast<char*>(std::memchr(b, '\n', end_ - begin_));
    if (!nl) return std::nullopt;
    const std::string_view line(b, static_cast<std::size_t>(nl - b));
    begin_ += line.size() + 1;
    return line;
  }

  // One read() into the buffer; throws on EOF or error.
  void fill() {
    if (begin_ == end_) {
      begin_ = end_ = 0;
    } else if (end_ == buf_.size()) {
      if (begin_ == 0) {
        if (buf_.size() >= max_line_) fail("reply line longer than the read buffer");
        buf_.resize(std::min(max_line_, buf_.size() * 2));  // a long line: grow, bounded
        return fill();
      }
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    for (;;) {
      const ssize_t n = ::read(rfd_, buf_.data() + end_, buf_.size() - end_);
      if (n > 0) {
        end_ += static_cast<std::size_t>(n);
        return;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n == 0) fail("peer closed the connection");
      fail_errno("read");
    }
  }

  // Blocks until a whole line is available.
  std::string_view read_line() {
    for (;;) {
      if (auto l = next_buffered()) return *l;
      fill();
    }
  }

  // Sends a request and waits for the reply with that id (other lines are skipped).
  json::value call(std::int64_t id, std::string_view method, json::object params) {
    json::object req{
        {"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
    write_all(json::serialize(req) + "\n");
    for (;;) {
      json::value v = json::parse(read_line());
      const auto* o = v.if_object();
      if (!o || o->contains("method")) continue;
      const auto* rid = o->if_contains("id");
      if (!rid || !rid->is_int64() || rid->as_int64() != id) continue;
      if (const auto* e = o->if_contains("error"))
        fail(fmt::format("{} failed: {}", method, json::serialize(*e)));
      return o->at("result");
    }
  }

  void notify(std::string_view method) {
    write_all(json::serialize(json::object{{"jsonrpc", "2.0"}, {"method", method}}) + "\n");
  }

  void mcp_handshake() {
    call(0, "initialize",
         json::object{{"protocolVersion", "2025-06-18"},
                      {"capabilities", json::object{}},
                      {"clientInfo", json::object{{"name", "bench_calls"}, {"version", "1"}}}});
    notify("notifications/initialized");
  }

 private:
  int rfd_;
  int wfd_;
  bool owns_;
  std::vector<char> buf_;
  std::size_t max_line_ = std::size_t{256} << 20;
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
};

// The integer id of a reply, by a cheap scan (no JSON parse); nullopt for notifications and
// for non-integer ids.
std::optional<std::int64_t> scan_id(std::string_view line) {
  const auto p = line.find("\"id\"");
  if (p == std::string_view::npos) return std::nullopt;
  std::size_t i = p + 4;
  while (i < line.size() && (line[i] == ' ' || line[i] == ':')) ++i;
  if (i >= line.size() || line[i] < '0' || line[i] > '9') return std::nullopt;
  std::int64_t v = 0;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') v = v * 10 + (line[i++] - '0');
  return v;
}

// ---------------------------------------------------------------------------------------------
// Measurement

struct figures {
  std::string name;
  std::size_t calls = 0;
  double p50_us = 0, p99_us = 0, mean_us = 0, calls_per_s = 0;
  double client_cpu_us = 0;               ///< this program's CPU per call
  std::optional<double> daemon_cpu_us;    ///< daemon CPU per call (mux rows only)
  std::optional<double> upstream_cpu_us;  ///< the fake upstream's CPU per call
};

// Request lines for ids [first, first + n), serialized before timing starts.
struct request_lines {
  std::string text;
  std::vector<std::size_t> offsets;  ///< n + 1 offsets into text
  std::int64_t first = 0;

  request_lines(std::string_view tool, std::int64_t first_id, std::size_t n,
                std::string_view args = R"({"text":"x"})")
      : first(first_id) {
    offsets.reserve(n + 1);
    text.reserve(n * 110);
    for (std::size_t i = 0; i < n; ++i) {
      offsets.push_back(text.size());
      text += fmt::format(
          R"({{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{}","arguments":{}}}}})"
          "\n",
          first_id + static_cast<std::int64_t>(i), tool, args);
    }
    offsets.push_back(text.size());
  }
  std::string_view line(std::size_t i) const {
    return std::string_view(text).substr(offsets[i], offsets[i + 1] - offsets[i]);
  }
};

// Runs `n` calls keeping `depth` requests outstanding on each connection, `conns.size() * depth`
// in total, from one thread. Returns latencies (ns) and the wall time.
figures run_calls(const std::string& name, std::vector<line_conn*> conns, std::size_t depth,
                  std::string_view tool, std::int64_t& next_id, std::size_t n,
                  std::string_view args = R"({"text":"x"})") {
  const request_lines reqs(tool, next_id, n, args);
  const std::int64_t first = next_id;
  next_id += static_cast<std::int64_t>(n);
  std::vector<clk::time_point> sent(n);
  std::vector<std::int64_t> lat_ns(n, -1);
  std::size_t issued = 0, done = 0, errors = 0;
  std::string out;  // requests gathered for one write per connection

  auto issue = [&](line_conn& c, std::size_t count) {
    out.clear();
    const std::size_t from = issued;
    for (; count > 0 && issued < n; --count, ++issued) out += reqs.line(issued);
    if (out.empty()) return;
    const auto now = clk::now();
    for (std::size_t i = from; i < issued; ++i) sent[i] = now;
    c.write_all(out);
  };
  // Consumes every buffered reply of `c`, then tops it up with as many new requests.
  auto drain = [&](line_conn& c) {
    std::size_t answered = 0;
    while (auto line = c.next_buffered()) {
      const auto id = scan_id(*line);
      if (!id || *id < first || *id >= first + static_cast<std::int64_t>(n)) continue;
      const auto i = static_cast<std::size_t>(*id - first);
      if (lat_ns[i] >= 0) continue;
      lat_ns[i] =
          std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now() - sent[i]).count();
      if (line->find("\"error\"") != std::string_view::npos) ++errors;
      ++answered;
    }
    done += answered;
    issue(c, answered);
  };

  const double cpu_before = self_cpu_seconds();
  const auto start = clk::now();
  for (auto* c : conns) issue(*c, depth);
  std::vector<pollfd> pfds;
  for (auto* c : conns) pfds.push_back({c->fd(), POLLIN, 0});
  while (done < n) {
    if (conns.size() == 1) {
      conns[0]->fill();
      drain(*conns[0]);
      continue;
    }
    if (::poll(pfds.data(), pfds.size(), 30000) <= 0) fail("poll: no reply within 30 s");
    for (std::size_t k = 0; k < pfds.size(); ++k) {
      if (pfds[k].revents == 0) continue;
      conns[k]->fill();
      drain(*conns[k]);
    }
  }
  const double wall_s = std::chrono::duration<double>(clk::now() - start).count();
  const double client_cpu_s = self_cpu_seconds() - cpu_before;
  if (errors) fail(fmt::format("{}: {} of {} calls answered with an error", name, errors, n));

  std::sort(lat_ns.begin(), lat_ns.end());
  auto pct = [&](double q) {
    const auto idx = static_cast<std::size_t>(q * static_cast<double>(n - 1) + 0.5);
    return static_cast<double>(lat_ns[idx]) / 1000.0;
  };
  figures f;
  f.name = name;
  f.calls = n;
  f.p50_us = pct(0.50);
  f.p99_us = pct(0.99);
  f.mean_us = std::accumulate(lat_ns.begin(), lat_ns.end(), 0.0) / static_cast<double>(n) / 1000.0;
  f.calls_per_s = static_cast<double>(n) / wall_s;
  f.client_cpu_us = client_cpu_s * 1e6 / static_cast<double>(n);
  return f;
}

void warm_up(std::vector<line_conn*> conns, std::string_view tool, std::int64_t& next_id,
             std::size_t n) {
  run_calls("warm-up", std::move(conns), 4, tool, next_id, n);
}

// ---------------------------------------------------------------------------------------------
// Daemon

struct daemon_handle {
  child proc;
  std::string socket;
};

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Writes a config with `names` servers running the fake and starts mcpmuxd on `dir`/`stem`.sock.
[[maybe_unused]] void start_daemon(daemon_handle& d, const std::string& mcpmuxd,
                                   const std::string& fake, const fs::path& dir,
                                   const std::string& stem, const std::vector<std::string>& names) {
  const auto cfg = dir / (stem + ".toml");
  {
    std::ofstream f(cfg);
    f << "[daemon]\nlog_level = \"warn\"\ntimeout_ms = 60000\n";
    for (const auto& n : names)
      f << "\n[servers." << n << "]\ncommand = " << toml_string(fake) << "\n";
    if (!f) fail("cannot write " + cfg.string());
  }
  d.socket = (dir / (stem + ".sock")).string();
  const auto log = (dir / (stem + ".log")).string();
  d.proc.spawn({mcpmuxd, "--config", cfg.string(), "--socket", d.socket}, false, log, log);
}

// The last `max` bytes of a file (the daemon's log is gone once the temp dir is removed).
std::string file_tail(const fs::path& p, std::size_t max = 2000) {
  std::ifstream f(p);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s.size() > max ? s.substr(s.size() - max) : s;
}

// Polls mcpmux/status on `socket` until every one of `servers` servers is "ready"; `alive` says
// whether the daemon still runs (a daemon we did not start: always true).
void wait_ready(const std::string& socket, const std::function<bool()>& alive, std::size_t servers,
                const fs::path& log, int seconds = 30) {
  const auto until = clk::now() + std::chrono::seconds(seconds);
  std::string last;
  while (clk::now() < until) {
    if (!alive()) fail("mcpmuxd exited during start-up; its log:\n" + file_tail(log));
    try {
      auto c = line_conn::connect_unix(socket);
      for (std::int64_t id = 1; clk::now() < until; ++id) {
        const auto st = c.call(id, "mcpmux/status", json::object{});
        const auto& arr = st.at("servers").as_array();
        std::size_t ready = 0;
        for (const auto& s : arr)
          if (s.at("state").as_string() == "ready") ++ready;
        if (arr.size() == servers && ready == servers) return;
        last = json::serialize(st);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } catch (const std::exception& e) {
      last = e.what();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  fail(fmt::format("servers not ready within {} s; last status: ", seconds) + last +
       "\nmcpmuxd log:\n" + file_tail(log));
}

// Waits until no process runs `exe` (at most `timeout`).
inline void wait_gone(const fs::path& exe, std::chrono::milliseconds timeout) {
  const auto target = fs::weakly_canonical(exe);
  const auto until = clk::now() + timeout;
  for (;;) {
    std::error_code ec;
    const bool running =
        std::any_of(fs::directory_iterator("/proc", ec), fs::directory_iterator(), [&](auto& p) {
          std::error_code link_ec;
          return fs::read_symlink(p.path() / "exe", link_ec) == target;
        });
    if (!running || clk::now() > until) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void wait_ready(daemon_handle& d, std::size_t servers, const fs::path& log, int seconds = 30) {
  wait_ready(
      d.socket, [&d] { return d.proc.alive(); }, servers, log, seconds);
}

}  // namespace
