// Integration test harness: temp dirs, a real mcpmuxd, socket clients and the mcpmux CLI.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mcpmux::test {

namespace json = boost::json;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

/// Absolute paths of the binaries under test, from $MCPMUXD, $MCPMUX and $FAKE_MCP_SERVER.
const std::string& mcpmuxd_path();
const std::string& mcpmux_path();
const std::string& fake_server_path();

/// Polls `pred` every few milliseconds until it holds or `timeout` passes.
bool wait_until(const std::function<bool()>& pred, ms timeout, ms step = 10ms);

/// Milliseconds elapsed since `t`.
std::int64_t ms_since(std::chrono::steady_clock::time_point t);

/// Reads a whole file; "" when it cannot be read.
std::string read_file(const std::string& path);

/// Lines of a file, without their newlines.
std::vector<std::string> read_lines(const std::string& path);

/// Member `key` of a message, or null.
const json::value* member(const std::optional<json::value>& v, std::string_view key);
/// `error.code` of a response (0 when it is not an error response).
std::int64_t error_code(const std::optional<json::value>& v);
/// `error.message` of a response ("" when none).
std::string error_message(const std::optional<json::value>& v);
/// `text` parsed, or null when it is not JSON.
json::value parse_or_null(std::string_view text);

/// A TOML basic string literal for `s` (quoted and escaped).
std::string toml_quote(std::string_view s);

/// A `[servers.NAME]` table running the fake server with `args`; `extra` lines are appended.
std::string fake_server_table(std::string_view name, const std::vector<std::string>& args,
                              std::string_view extra = {});

/// A private temporary directory, removed with everything in it on destruction (kept, and its
/// path printed, when $MCPMUX_TEST_KEEP is set).
class temp_dir {
 public:
  temp_dir();
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  /// `path()/name`.
  std::string file(std::string_view name) const;
  /// Writes `text` to `path()/name` and returns the full path.
  std::string write(std::string_view name, std::string_view text) const;

 private:
  std::string path_;
};

/// Outcome of a finished (or killed) child process.
struct run_result {
  int exit_code = -1;  ///< exit status; -1 when killed by a signal or timed out
  bool timed_out = false;
  std::string out;
  std::string err;
};

/// Runs `argv` with `stdin_text` on its stdin (then EOF), capturing stdout and stderr; killed
/// after `timeout`. `env` entries are set (or, when the value is nullopt, removed).
run_result run_process(const std::vector<std::string>& argv, std::string_view stdin_text = {},
                       ms timeout = 10s,
                       const std::map<std::string, std::optional<std::string>>& env = {});

/// A run's exit, stdout and stderr, for a failure message.
std::string describe(const run_result& r);

/// An initialize request with `id` as one NDJSON line (what an agent writes first).
std::string initialize_line(int id);

/// Runs `$MCPMUX --socket SOCKET args...`.
run_result run_cli(const std::string& socket, const std::vector<std::string>& args,
                   std::string_view stdin_text = {}, ms timeout = 10s);

/// /proc facts about any process.
std::vector<pid_t> child_pids(pid_t parent);
/// The state letter of /proc/PID/stat ('R', 'S', 'Z', …); 0 when the process is gone.
char process_state(pid_t pid);
/// True while kill(pid, 0) succeeds.
bool process_exists(pid_t pid);
/// VmRSS of a process in KiB; -1 when unreadable.
long vm_rss_kib(pid_t pid);

/// How to start a daemon.
struct daemon_options {
  std::string socket;                      ///< default: <dir>/mcpmux.sock
  std::string config;                      ///< default: <dir>/config.toml
  std::map<std::string, std::string> env;  ///< extra environment for the daemon
  std::vector<std::string> extra_args;
  ms start_timeout = 10s;
};

/// A real mcpmuxd: started in the constructor, stopped with SIGTERM (exit status 0 expected).
class daemon {
 public:
  /// Starts `$MCPMUXD --config … --socket … --log-level debug`, output to `dir/daemon.log`, with
  /// XDG_CACHE_HOME, XDG_CONFIG_HOME and XDG_RUNTIME_DIR inside `dir` (no shared tool cache).
  /// Check started() afterwards (a failure to start is already reported to gtest).
  daemon(const temp_dir& dir, daemon_options opt = {});
  ~daemon();
  daemon(const daemon&) = delete;
  daemon& operator=(const daemon&) = delete;

  bool started() const { return started_; }
  pid_t pid() const { return pid_; }
  const std::string& socket() const { return opt_.socket; }
  const std::string& log_path() const { return log_path_; }
  /// The daemon's stdout+stderr so far.
  std::string log() const;
  /// Waits until the log contains `text`.
  bool wait_for_log(std::string_view text, ms timeout = 5s) const;
  /// Pids whose parent is the daemon.
  std::vector<pid_t> children() const;
  /// Number of entries in /proc/PID/fd.
  int open_fds() const;
  /// open_fds() once it has stayed the same for 100 ms (closing connections settle first).
  int settled_fds(ms timeout = 3s) const;
  /// What each descriptor points at ("3 -> socket:[123]"), one per line, for failure messages.
  std::string describe_fds() const;
  /// True while the daemon process has not exited.
  bool running();

  /// SIGTERM, then waits up to `timeout` for the exit; records a failure unless it exits 0.
  /// Returns the exit status (-1 when it had to be killed). Idempotent.
  int stop(ms timeout = 5s);
  /// SIGKILL and reap (simulates a crash).
  void kill_hard();
  /// Waits for the process to exit on its own; the exit status, or nullopt on timeout.
  std::optional<int> wait_exit(ms timeout);

  /// mcpmux/status over a fresh connection; null on failure.
  json::value status();
  /// Waits until every configured server (or the ones named) reports state "ready".
  bool wait_ready(const std::vector<std::string>& servers = {}, ms timeout = 10s);

 private:
  daemon_options opt_;
  std::string log_path_;
  pid_t pid_ = -1;
  bool started_ = false;
  bool reaped_ = false;
  int status_ = 0;
};

/// One connection to the daemon's socket: NDJSON JSON-RPC with bounded waits.
class client {
 public:
  /// Connects to `socket`, retrying until `timeout`. Check connected() afterwards.
  explicit client(const std::string& socket, ms timeout = 5s);
  ~client();
  client(client&& other) noexcept;
  client& operator=(client&&) = delete;
  client(const client&) = delete;

  bool connected() const { return fd_ >= 0; }
  /// The socket, for raw access (garbage, half-closes, …).
  int raw() const { return fd_; }

  /// Sends `text` plus a newline; false when the write fails or blocks past `timeout`.
  bool send_line(std::string_view text, ms timeout = 10s);
  bool send(const json::value& msg, ms timeout = 10s);
  /// Sends bytes as they are.
  bool send_raw(std::string_view bytes, ms timeout = 10s);

  /// The next line, or nullopt on timeout/EOF/error (see eof()).
  std::optional<std::string> read_line(ms timeout = 10s);
  /// The next message parsed as JSON (an unparsable line fails the test and returns nullopt).
  std::optional<json::value> read_message(ms timeout = 10s);
  /// True once the peer closed the connection or it failed.
  bool eof() const { return eof_; }
  /// Reads and discards until EOF or error; true when that happens within `timeout`.
  bool wait_eof(ms timeout = 10s);

  /// A fresh integer id.
  std::int64_t next_id() { return next_id_++; }
  /// Sends a request with a fresh id and reads until the answer with that id; notifications
  /// and other messages seen on the way are appended to notifications(). The whole response.
  std::optional<json::value> request(std::string_view method, json::value params = json::object{},
                                     ms timeout = 10s);
  /// Reads until the response with `id` arrives.
  std::optional<json::value> wait_response(const json::value& id, ms timeout = 10s);
  /// Waits for a notification with `method`, first among the ones already seen.
  std::optional<json::value> wait_notification(std::string_view method, ms timeout = 5s);
  /// initialize (protocol 2025-11-25 unless given) + notifications/initialized; the result.
  std::optional<json::value> initialize(std::string_view version = "2025-11-25");
  /// tools/call; the whole response.
  std::optional<json::value> call(std::string_view tool, json::value arguments = json::object{},
                                  ms timeout = 10s);

  /// Messages read while waiting for something else (notifications, other responses).
  std::vector<json::value>& notifications() { return seen_; }
  void close();

 private:
  int fd_ = -1;
  bool eof_ = false;
  std::string buf_;
  std::int64_t next_id_ = 1;
  std::vector<json::value> seen_;
};

/// The exposed names of a tools/list result.
std::vector<std::string> tool_names(const json::value& tools_list_response);

/// The text of content[0] of a tools/call response's result ("" when absent).
std::string first_text(const json::value& response);

/// Runs the fake server with `args` directly (no mcpmuxd): feeds it initialize,
/// notifications/initialized and `requests`, then EOF; returns every message it wrote.
std::vector<json::value> fake_exchange(const std::vector<std::string>& args,
                                       const std::vector<json::value>& requests);

/// The response with `id` among `messages`; null when absent.
json::value find_response(const std::vector<json::value>& messages, const json::value& id);

/// Tool names the fake server lists when run with `args` (asked directly, without mcpmuxd).
std::vector<std::string> fake_tool_names(const std::vector<std::string>& args);

/// True when `hay` contains `needle`.
inline bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}
/// The lines, each followed by a newline (for failure messages).
std::string joined(const std::vector<std::string>& lines);

/// One server's entry of mcpmux/status, flattened.
struct server_view {
  bool found = false;
  std::string state;
  pid_t pid = -1;
  std::int64_t attempt = -1;
  std::int64_t restarts = -1;
  std::int64_t tools = -1;
  std::string last_error;
  std::int64_t last_error_at_ms = -1;  ///< null: -1
  std::string last_stderr;
  bool tools_from_cache = false;
  bool crash_looping = false;
  std::vector<std::string> notes;
  std::vector<std::string> stderr_tail;
  std::string raw;  ///< the whole entry, for failure messages
};
/// The entry of server `name` in a mcpmux/status result (found = false when absent).
server_view view_of(const json::value& status, std::string_view name);
/// mcpmux/status over an existing connection (control methods need no initialize).
server_view status_of(client& ctl, std::string_view name);
/// Polls status until `pred` holds (or `timeout`); the last view seen, `*ok` whether it held.
server_view wait_server(client& ctl, std::string_view name,
                        const std::function<bool(const server_view&)>& pred, ms timeout, bool* ok,
                        ms step = 10ms);
/// The server's log ring (mcpmux/logs, up to 1000 lines).
std::vector<std::string> server_log(client& ctl, std::string_view name);

/// Base fixture: a temp dir and helpers to write a config and start a daemon.
class daemon_test : public ::testing::Test {
 protected:
  /// Writes config.toml and starts a daemon on it; waits for every server to be ready unless
  /// `wait_ready` is false.
  daemon& start(std::string_view config_text, daemon_options opt = {}, bool wait_ready = true);
  /// A client connected to the daemon (asserting the connection worked).
  client connect();
  /// A connected, initialized client.
  client connect_initialized();
  /// Stops the daemon (asserting a clean exit) before the temp dir goes.
  void TearDown() override;

  temp_dir dir_;
  std::optional<daemon> daemon_;
};

}  // namespace mcpmux::test
