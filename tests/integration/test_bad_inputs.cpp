// Bad inputs, counted: every malformed or hostile thing a client (or a config file) can send,
// walked one by one on a real daemon. For each: what mcpmux answers (code, id, message), and that
// nothing else is disturbed — a well-behaved client keeps getting correct answers throughout, the
// upstream keeps its process, the daemon stays up and no descriptor leaks.
// The table in tests/integration/BAD_INPUTS.md is the README version of these cases.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <regex>
#include <thread>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

using namespace std::string_literals;

class bad_inputs : public daemon_test {};

constexpr std::int64_t kNoAnswer = 1;  // the line is dropped silently (logged at debug level)
constexpr std::int64_t kResult = 0;    // a normal result

constexpr std::size_t kMaxMessage = 2 * 1024 * 1024;  // max_message_bytes of these tests
constexpr std::size_t kMaxQueue = 2 * 1024 * 1024;    // max_client_queue_bytes

std::string bad_config() {
  return "[daemon]\nmax_message_bytes = " + std::to_string(kMaxMessage) +
         "\nmax_client_queue_bytes = " + std::to_string(kMaxQueue) + "\ntimeout_ms = 10000\n" +
         // Results whole: the limits of the wire are tested here, not max_result_bytes' paging.
         "max_result_bytes = 0\n\n" + fake_server_table("a", {});
}

std::string dump(const std::optional<json::value>& v, std::size_t max = 300) {
  if (!v) return "<no message>";
  auto s = json::serialize(*v);
  return s.size() > max ? s.substr(0, max) + "…(" + std::to_string(s.size()) + " bytes)" : s;
}

json::value request(const json::value& id, std::string_view method,
                    json::value params = json::object{}) {
  return json::object{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
}

json::value echo_call(const json::value& id, std::string_view text) {
  return request(id, "tools/call", {{"name", "a__echo"}, {"arguments", {{"text", text}}}});
}

/// One bad input and what mcpmux must answer.
struct bad_case {
  std::string name;
  std::string line;       ///< sent followed by "\n"
  bool initialize_first;  ///< on an initialized session, or a fresh one
  std::int64_t code;      ///< expected error code; kResult or kNoAnswer
  json::value id;         ///< expected id of the answer (when there is one)
  std::string message;    ///< a substring of error.message ("" = not checked)
};

std::vector<bad_case> protocol_cases() {
  const json::value null_id = nullptr;
  std::vector<bad_case> v = {
      // Malformed JSON and valid JSON that is not JSON-RPC.
      {"malformed JSON", "{this is not json", false, -32700, null_id, "Parse error"},
      {"truncated object", R"({"jsonrpc":"2.0","id":1,"method":"ping")", false, -32700, null_id,
       "Parse error"},
      {"JSON number", "42", false, -32600, null_id, "must be an object"},
      {"JSON string", R"("hello")", false, -32600, null_id, "must be an object"},
      {"JSON null", "null", false, -32600, null_id, "must be an object"},
      {"object without jsonrpc", R"({"hello":1})", false, -32600, null_id, "jsonrpc"},
      {"jsonrpc 1.0", R"({"jsonrpc":"1.0","id":1,"method":"ping"})", false, -32600, 1, "jsonrpc"},
      {"method not a string", R"({"jsonrpc":"2.0","id":3,"method":5})", false, -32600, 3, "method"},
      {"params not an object", R"({"jsonrpc":"2.0","id":3,"method":"ping","params":"x"})", false,
       -32600, 3, "params"},
      {"batch of two",
       R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}])",
       false, -32600, null_id, "batch"},
      {"empty batch", "[]", false, -32600, null_id, "batch"},
      {"empty line", "", false, kNoAnswer, null_id, ""},
      {"blank line", "   \t ", false, kNoAnswer, null_id, ""},
      {"CRLF line end", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\r", false, kResult, 3,
       ""},
      // Ids of every JSON type.
      {"id string", R"({"jsonrpc":"2.0","id":"abc","method":"ping"})", false, kResult, "abc", ""},
      {"id empty string", R"({"jsonrpc":"2.0","id":"","method":"ping"})", false, kResult, "", ""},
      {"id integer", R"({"jsonrpc":"2.0","id":7,"method":"ping"})", false, kResult, 7, ""},
      {"id negative", R"({"jsonrpc":"2.0","id":-7,"method":"ping"})", false, kResult, -7, ""},
      {"id 2^64-1", R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"})", false,
       kResult, json::value(std::uint64_t{18446744073709551615ull}), ""},
      {"id null", R"({"jsonrpc":"2.0","id":null,"method":"ping"})", false, -32600, null_id,
       "\"id\" must be a string or an integer"},
      {"id object", R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", false, -32600, null_id,
       "\"id\" must be a string or an integer"},
      {"id array", R"({"jsonrpc":"2.0","id":[1],"method":"ping"})", false, -32600, null_id,
       "\"id\" must be a string or an integer"},
      {"id bool", R"({"jsonrpc":"2.0","id":true,"method":"ping"})", false, -32600, null_id,
       "\"id\" must be a string or an integer"},
      {"id float", R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", false, -32600, null_id,
       "\"id\" must be a string or an integer"},
      {"id 1.0", R"({"jsonrpc":"2.0","id":1.0,"method":"ping"})", false, -32600, null_id,
       "\"id\" must be a string or an integer"},
      // Deep nesting: refused by the parser's depth limit, never a stack overflow.
      {"100k levels of [", std::string(100000, '['), false, -32700, null_id, "too deep"},
      {"100k levels of [ ]", std::string(100000, '[') + std::string(100000, ']'), false, -32700,
       null_id, "too deep"},
      {"100k nested objects",
       [] {
         std::string s;
         for (int i = 0; i < 100000; ++i) s += R"({"a":)";
         s += "1";
         return s + std::string(100000, '}');
       }(),
       false, -32700, null_id, "too deep"},
      {"arguments nested 100 deep",
       R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"deep","x":)" +
           std::string(100, '[') + std::string(100, ']') + "}}}",
       true, kResult, 4, ""},
      // Invalid UTF-8 and NUL bytes.
      {"invalid UTF-8 in a string",
       "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"x\":\"\xff\xfe\"}}", false,
       -32700, null_id, "Parse error"},
      {"invalid UTF-8 in the method", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"pi\xc3(ng\"}",
       false, -32700, null_id, "Parse error"},
      {"overlong UTF-8 encoding",
       "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"x\":\"\xc0\xaf\"}}", false,
       -32700, null_id, "Parse error"},
      {"lone surrogate escape",
       R"({"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"\ud800"}})", false, -32700,
       null_id, "Parse error"},
      {"NUL byte between tokens", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"\0}"s, false,
       -32700, null_id, "Parse error"},
      {"NUL byte inside a string",
       "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\",\"params\":{\"x\":\"a\0b\"}}"s, false,
       -32700, null_id, "Parse error"},
      {"escaped \\u0000 (valid JSON)",
       R"({"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"a\u0000b"}})", false, kResult, 3,
       ""},
      // Order and methods.
      {"tools/list before initialize", R"({"jsonrpc":"2.0","id":3,"method":"tools/list"})", false,
       -32600, 3, "initialize"},
      {"tools/call before initialize",
       R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__echo","arguments":{"text":"x"}}})",
       false, -32600, 3, "initialize"},
      {"unknown method before initialize", R"({"jsonrpc":"2.0","id":3,"method":"no/such"})", false,
       -32600, 3, "initialize"},
      {"notification before initialize",
       R"({"jsonrpc":"2.0","method":"notifications/initialized"})", false, kNoAnswer, null_id, ""},
      {"unknown method", R"({"jsonrpc":"2.0","id":3,"method":"no/such"})", true, -32601, 3,
       "no/such"},
      {"unknown notification", R"({"jsonrpc":"2.0","method":"no/such"})", true, kNoAnswer, null_id,
       ""},
      {"unknown tool",
       R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"zz","arguments":{}}})",
       true, -32602, 3, "zz"},
      {"tools/call without name", R"({"jsonrpc":"2.0","id":3,"method":"tools/call"})", true, -32602,
       3, "name"},
      {"tools/call arguments not an object",
       R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a__echo","arguments":"x"}})",
       true, -32602, 3, "arguments"},
      // Responses from the client to requests nobody sent.
      {"response to nothing", R"({"jsonrpc":"2.0","id":5,"result":{}})", true, kNoAnswer, null_id,
       ""},
      {"error response to nothing", R"({"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"x"}})",
       true, kNoAnswer, null_id, ""},
      {"response to nothing before initialize", R"({"jsonrpc":"2.0","id":"s1","result":{}})", false,
       kNoAnswer, null_id, ""},
  };
  return v;
}

// One markdown row for the report printed by the test.
void print_row(const bad_case& c, const std::optional<json::value>& got, bool open) {
  std::string answer = !got ? "no answer" : error_code(got) ? "" : "result";
  if (got && error_code(got))
    answer = std::to_string(error_code(got)) + " `" + error_message(got) + "`, id " +
             json::serialize(got->at("id"));
  std::printf("| %s | %s | %s |\n", c.name.c_str(), answer.c_str(), open ? "stays open" : "closed");
}

/// A well-behaved client calling a__echo in a loop on its own thread; every answer is checked.
class steady_client {
 public:
  explicit steady_client(client c) : c_(std::move(c)), thread_([this] { run(); }) {}
  ~steady_client() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int ok() const { return ok_; }
  std::vector<std::string> failures() {
    std::lock_guard lock(mu_);
    return failures_;
  }

 private:
  void run() {
    for (int n = 0; !stop_; ++n) {
      const std::string text = "steady-" + std::to_string(n);
      auto r = c_.call("a__echo", {{"text", text}}, 5s);
      if (r && first_text(*r) == text) {
        ++ok_;
      } else {
        std::lock_guard lock(mu_);
        failures_.push_back(text + " -> " + dump(r));
        if (!r && c_.eof()) return;
      }
      std::this_thread::sleep_for(2ms);
    }
  }

  client c_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::mutex mu_;
  std::vector<std::string> failures_;
  std::thread thread_;
};

// Upstream pid and restart count: the bad inputs must not reach or disturb the server.
std::pair<json::value, json::value> upstream_identity(daemon& d) {
  auto st = d.status();
  if (!st.is_object()) return {nullptr, nullptr};
  const auto& s = st.at("servers").as_array().at(0);
  return {s.at("pid"), s.at("restarts")};
}

// ---------------------------------------------------------------------------------------------

TEST_F(bad_inputs, every_bad_message_gets_its_answer_and_disturbs_nothing) {
  start(bad_config());
  ASSERT_TRUE(daemon_->started());
  const auto identity = upstream_identity(*daemon_);
  steady_client good(connect_initialized());
  const int baseline_fds = daemon_->settled_fds();

  std::printf("| input | mcpmux answers | connection |\n|---|---|---|\n");
  int checked = 0;
  for (const auto& c : protocol_cases()) {
    SCOPED_TRACE(c.name);
    client s = connect();
    if (c.initialize_first) {
      ASSERT_TRUE(s.initialize().has_value());
    }
    ASSERT_TRUE(s.send_line(c.line));
    std::optional<json::value> got;
    if (c.code == kNoAnswer) {
      auto line = s.read_line(300ms);
      EXPECT_FALSE(line.has_value()) << "expected no answer, got " << line->substr(0, 300);
    } else {
      got = s.read_message(5s);
      ASSERT_TRUE(got.has_value()) << "no answer";
      EXPECT_EQ(error_code(got), c.code) << dump(got);
      ASSERT_TRUE(got->is_object() && got->as_object().contains("id")) << dump(got);
      EXPECT_EQ(got->at("id"), c.id) << dump(got);
      if (c.code == kResult) {
        EXPECT_TRUE(got->as_object().contains("result")) << dump(got);
      }
      if (!c.message.empty()) {
        EXPECT_NE(error_message(got).find(c.message), std::string::npos) << dump(got);
      }
    }
    // The session survives every one of these: a ping still gets its answer.
    auto ping = s.request("ping", json::object{}, 5s);
    const bool open = ping && ping->as_object().contains("result");
    EXPECT_TRUE(open) << "the session did not survive: " << dump(ping);
    print_row(c, got, open);
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(protocol_cases().size()));

  // Nothing else was disturbed.
  good.stop();
  EXPECT_TRUE(good.failures().empty())
      << good.failures().size() << " bad answers, first: " << good.failures().front();
  EXPECT_GT(good.ok(), 20) << "the well-behaved client made too little progress";
  EXPECT_TRUE(daemon_->running());
  EXPECT_EQ(upstream_identity(*daemon_), identity) << "the upstream was restarted";
  EXPECT_TRUE(wait_until([&] { return daemon_->open_fds() <= baseline_fds; }, 5s))
      << daemon_->open_fds() << " open descriptors, " << baseline_fds << " before:\n"
      << daemon_->describe_fds();
}

TEST_F(bad_inputs, a_one_mebibyte_id_is_echoed_on_every_path) {
  start(bad_config());
  ASSERT_TRUE(daemon_->started());
  steady_client good(connect_initialized());
  const json::value big_id = json::string(std::string(1024 * 1024, 'i'));
  client s = connect_initialized();

  // ping (answered by mcpmux itself), tools/call (id rewritten upstream and restored), an unknown
  // method (an error) and a cancelled call: each answer carries the whole id back.
  ASSERT_TRUE(s.send(request(big_id, "ping")));
  auto r = s.wait_response(big_id, 10s);
  ASSERT_TRUE(r.has_value()) << "no answer to ping";
  EXPECT_TRUE(r->as_object().contains("result")) << dump(r);

  ASSERT_TRUE(s.send(echo_call(big_id, "big id")));
  r = s.wait_response(big_id, 10s);
  ASSERT_TRUE(r.has_value()) << "no answer to tools/call";
  EXPECT_EQ(first_text(*r), "big id") << dump(r);

  ASSERT_TRUE(s.send(request(big_id, "no/such")));
  r = s.wait_response(big_id, 10s);
  EXPECT_EQ(error_code(r), -32601) << dump(r);

  // A string id just over max_message_bytes makes the line oversize: an error, then closed.
  client over = connect_initialized();
  ASSERT_TRUE(over.send(request(json::string(std::string(kMaxMessage + 16, 'j')), "ping"), 20s));
  r = over.read_message(10s);
  EXPECT_EQ(error_code(r), -32600) << dump(r);
  EXPECT_TRUE(over.wait_eof(10s)) << "the oversize connection stayed open";

  auto ping = s.request("ping");
  EXPECT_TRUE(ping && ping->as_object().contains("result")) << dump(ping);
  good.stop();
  EXPECT_TRUE(good.failures().empty()) << good.failures().front();
  EXPECT_TRUE(daemon_->running());
}

TEST_F(bad_inputs, oversize_lines_are_refused_and_close_only_that_connection) {
  start(bad_config());
  ASSERT_TRUE(daemon_->started());
  steady_client good(connect_initialized());
  const int baseline_fds = daemon_->settled_fds();

  struct oversize_case {
    std::string name;
    std::string bytes;
    bool newline_later;  ///< the line's end is sent only after a pause
  };
  const std::string pad(kMaxMessage + 1024, 'x');
  const std::vector<oversize_case> cases = {
      {"oversize valid request",
       R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":")" + pad + "\"}}\n", false},
      {"oversize garbage line", pad + "\n", false},
      // The bytes past the cap are discarded (memory stays bounded); the error and the close
      // come once the line ends.
      {"oversize line, newline sent 1 s later", pad, true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    client s = connect();
    ASSERT_TRUE(s.send_raw(c.bytes, 20s));
    if (c.newline_later) {
      std::this_thread::sleep_for(1s);
      ASSERT_TRUE(s.send_raw("\n"));
    }
    auto r = s.read_message(10s);
    EXPECT_EQ(error_code(r), -32600) << dump(r);
    EXPECT_NE(error_message(r).find(std::to_string(kMaxMessage)), std::string::npos) << dump(r);
    EXPECT_TRUE(s.wait_eof(10s)) << "the connection stayed open";
    std::printf("| %s | %lld `%s` | closed |\n", c.name.c_str(),
                static_cast<long long>(error_code(r)), error_message(r).c_str());
  }
  good.stop();
  EXPECT_TRUE(good.failures().empty()) << good.failures().front();
  EXPECT_TRUE(wait_until([&] { return daemon_->open_fds() <= baseline_fds; }, 5s))
      << daemon_->describe_fds();
}

// README: "a line over max_message_bytes → -32600 and the connection is closed". A client that
// streams more than max_message_bytes without a newline is neither answered nor closed: the daemon
// discards the bytes (RSS stays flat even after 200 MiB) and answers only when a newline finally
// comes. Enable once the cap is enforced on the partial line.
TEST_F(bad_inputs, oversize_line_without_newline_is_refused_before_it_ends) {
  start(bad_config());
  ASSERT_TRUE(daemon_->started());
  client s = connect();
  ASSERT_TRUE(s.send_raw(std::string(kMaxMessage + 1024, 'x'), 20s));
  auto r = s.read_message(5s);
  EXPECT_EQ(error_code(r), -32600) << dump(r);
  EXPECT_TRUE(s.wait_eof(5s)) << "the connection stayed open";
}

TEST_F(bad_inputs, a_client_that_never_reads_is_dropped_and_one_that_leaves_mid_call_is_forgotten) {
  start(bad_config());
  ASSERT_TRUE(daemon_->started());
  const auto identity = upstream_identity(*daemon_);
  steady_client good(connect_initialized());
  const int baseline_fds = daemon_->settled_fds();

  // Never reads: answers pile up past max_client_queue_bytes → the daemon disconnects it.
  {
    client deaf = connect_initialized();
    const std::string text(256 * 1024, 'z');  // each answer carries it twice: ~512 KiB
    int sent = 0;
    for (int i = 0; i < 64; ++i, ++sent)
      if (!deaf.send(echo_call(1000 + i, text), 3s)) break;
    EXPECT_TRUE(daemon_->wait_for_log("not reading", 15s)) << "sent " << sent;
    EXPECT_TRUE(deaf.wait_eof(15s)) << "the deaf client was not disconnected";
    std::printf(
        "| client that never reads | disconnected (%d calls sent, each answer ~512 KiB; "
        "max_client_queue_bytes %zu KiB) |\n",
        sent, kMaxQueue / 1024);
  }
  // Leaves mid-call: the call is cancelled upstream; the late answer goes nowhere.
  for (int i = 0; i < 5; ++i) {
    client gone = connect_initialized();
    ASSERT_TRUE(
        gone.send(request(7, "tools/call", {{"name", "a__slow"}, {"arguments", {{"ms", 300}}}})));
    ASSERT_TRUE(gone.send(echo_call(8, "half")));
    std::this_thread::sleep_for(50ms);
    if (i % 2) ::shutdown(gone.raw(), SHUT_WR);  // half-close first, then close
    gone.close();
  }
  std::this_thread::sleep_for(600ms);  // the slow calls would have finished by now

  good.stop();
  EXPECT_TRUE(good.failures().empty())
      << good.failures().size() << " bad answers, first: " << good.failures().front();
  EXPECT_GT(good.ok(), 10);
  EXPECT_TRUE(daemon_->running());
  EXPECT_EQ(upstream_identity(*daemon_), identity) << "the upstream was restarted";
  EXPECT_TRUE(wait_until([&] { return daemon_->open_fds() <= baseline_fds; }, 5s))
      << daemon_->open_fds() << " open descriptors, " << baseline_fds << " before:\n"
      << daemon_->describe_fds();
}

// ---------------------------------------------------------------------------------------------
// Config files: `mcpmuxd --check-config` names file, line, key and the problem.

TEST_F(bad_inputs, check_config_reports_every_kind_of_error) {
  const std::string fake = toml_quote(fake_server_path());
  struct config_case {
    std::string name;
    std::string text;
    std::vector<std::string> expected;  ///< regexes, each must match one stderr line
  };
  const std::vector<config_case> cases = {
      {"syntax error", "[daemon\ntimeout_ms = 1\n", {R"(syntax\.toml:1: .*expected ']')"}},
      {"syntax error in a value", "[daemon]\ntimeout_ms = = 1\n", {R"(syntax\.toml:2: .*value)"}},
      {"unknown key",
       "[daemon]\ntimout_ms = 1\n",
       {R"(unknown key\.toml:2: daemon\.timout_ms: unknown key; did you mean "timeout_ms"\?)"}},
      {"unknown server key",
       "[servers.x]\ncommand = " + fake + "\ncomand2 = 1\n",
       {R"(:3: servers\.x\.comand2: unknown key)"}},
      {"wrong type",
       "[daemon]\ntimeout_ms = \"soon\"\n",
       {R"(:2: daemon\.timeout_ms: expected an integer, got a string)"}},
      {"wrong type (args)",
       "[servers.x]\ncommand = " + fake + "\nargs = \"--x\"\n",
       {R"(:3: servers\.x\.args: expected an array of strings, got a string)"}},
      {"bad values",
       "[daemon]\ntimeout_ms = -5\nmax_tool_name = 3\ntool_separator = \"!!\"\nlog_level = "
       "\"loud\"\n",
       {R"(:2: daemon\.timeout_ms: must be >= 0)",
        R"(:3: daemon\.max_tool_name: must be between 16 and 1024)",
        R"(:4: daemon\.tool_separator: must be 1 to 8 characters)",
        R"(:5: daemon\.log_level: must be one of)"}},
      {"missing command",
       "[servers.x]\nargs = [\"a\"]\n",
       {R"(:1: servers\.x\.command: is required for stdio servers)"}},
      {"bad server name",
       "[servers.\"bad name!\"]\ncommand = " + fake + "\n",
       {R"(:1: servers\."bad name!": server name must be 1 to 64 characters)"}},
      {"bad URL",
       "[servers.r]\ntype = \"http\"\nurl = \"not a url\"\n",
       {R"(:3: servers\.r\.url: must start with http:// or https://)"}},
      {"bad URL scheme",
       "[servers.r]\ntype = \"sse\"\nurl = \"ftp://example.com/x\"\n",
       {R"(:3: servers\.r\.url: must start with http:// or https://)"}},
      {"bad type",
       "[servers.r]\ntype = \"pigeon\"\nurl = \"http://x/\"\n",
       {R"(:2: servers\.r\.type: must be "stdio", "http" or "sse")"}},
      {"unterminated ${ in env",
       "[servers.x]\ncommand = " + fake + "\nenv = { A = \"${HOME\" }\n",
       {R"(:3: servers\.x\.env\.A: unterminated "\$\{")"}},
      {"unterminated ${ in command",
       "[servers.x]\ncommand = \"${FOO\"\n",
       {R"(:2: servers\.x\.command: unterminated "\$\{")"}},
      {"invalid UTF-8", "\xff\xfe\n", {R"(:1: .*utf-8)"}},
      {"every kind at once",
       "[daemon]\ntimout_ms = 1\nlog_level = 5\nmax_tool_name = 3\n\n[servers.\"bad name\"]\n"
       "command = \"x\"\n\n[servers.nocmd]\nargs = []\n\n[servers.r]\ntype = \"http\"\nurl = "
       "\"nope\"\n\n[servers.u]\ncommand = \"${X\"\n",
       {R"(:2: daemon\.timout_ms: unknown key)", R"(:3: daemon\.log_level: expected a string)",
        R"(:4: daemon\.max_tool_name: must be between)", R"(:6: servers\."bad name": server name)",
        R"(:9: servers\.nocmd\.command: is required)", R"(:14: servers\.r\.url: must start with)",
        R"(:17: servers\.u\.command: unterminated)"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    std::string file_name = c.name;
    if (c.name.rfind("syntax", 0) == 0) file_name = "syntax";
    const auto path = dir_.write(file_name + ".toml", c.text);
    auto r = run_process({mcpmuxd_path(), "--check-config", "--config", path});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    for (const auto& re : c.expected) {
      EXPECT_TRUE(std::regex_search(r.err, std::regex(re))) << "missing /" << re << "/ in\n"
                                                            << r.err;
    }
    // Every problem line names the file.
    std::size_t lines = 0;
    for (std::size_t p = 0; (p = r.err.find('\n', p)) != std::string::npos; ++p) ++lines;
    EXPECT_GE(lines, c.expected.size()) << r.err;
    EXPECT_NE(r.err.find(file_name + ".toml:"), std::string::npos) << r.err;
    std::printf("| config: %s | exit %d | %s |\n", c.name.c_str(), r.exit_code,
                r.err.substr(0, r.err.find('\n')).c_str());
  }
  auto r = run_process({mcpmuxd_path(), "--check-config", "--config", dir_.file("nope.toml")});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("nope.toml: cannot open"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace mcpmux::test
