// The code-mode runner (sandbox/runner/runner.mjs) started the way the daemon will start it
// (sandbox/runner_command.hpp: bubblewrap, the runner's seccomp profile, exec locked) with this
// test as the daemon: it answers the program's tool calls and reads its end. Skipped where
// bubblewrap cannot run.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>

#include "sandbox/host.hpp"
#include "sandbox/runner_command.hpp"
#include "transports/stdio_transport.hpp"

namespace json = boost::json;
using namespace std::chrono_literals;
using ms = std::chrono::milliseconds;

extern char** environ;

namespace mcpmux::test {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A command's absolute path, found the way the daemon finds a server's.
std::string in_path(const char* command) {
  stdio_options o;
  o.command = command;
  return program_path(o);
}

// One runner process: its stdin and stdout as NDJSON, killed and reaped at the end.
class runner_process {
 public:
  explicit runner_process(const std::vector<std::string>& argv) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t fa;
    ::posix_spawn_file_actions_init(&fa);
    ::posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    ::posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (::posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
    ::posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~runner_process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(to_);
    ::close(from_);
  }

  void send(const json::value& v) {
    const auto line = json::serialize(v) + "\n";
    ASSERT_EQ(::write(to_, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  }

  // The next line as an object, or nothing when the runner ends or `timeout` passes.
  std::optional<json::object> next(ms timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (auto nl = buffer_.find('\n'); nl != std::string::npos) {
        auto line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        auto v = json::parse(line);
        return v.is_object() ? std::optional(v.as_object()) : std::nullopt;
      }
      const auto left = std::chrono::duration_cast<ms>(deadline - std::chrono::steady_clock::now());
      pollfd p{from_, POLLIN, 0};
      if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return {};
      char chunk[65536];
      const auto n = ::read(from_, chunk, sizeof chunk);
      if (n <= 0) return {};
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string buffer_;
};

// A tool's answer, by name and arguments: the fake servers behind the runner.
using responder = std::function<json::object(const std::string&, const json::object&)>;

json::object text_result(const std::string& text) {
  return {{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}};
}

class runner_test : public ::testing::Test {
 protected:
  void SetUp() override {
    // The helper is instrumented in a sanitizer build, and ASan's shadow memory (terabytes of
    // address space) cannot start under the runner's RLIMIT_AS.
    if (std::getenv("MCPMUX_SANITIZED"))
      GTEST_SKIP() << "the runner's address-space limit cannot hold a sanitizer's shadow memory";
    const auto host = probe_sandbox_host(in_path("bwrap"));
    if (!host.usable()) GTEST_SKIP() << host.problem;
    launch_.bwrap = host.bwrap;
    launch_.node = in_path("node");
    launch_.helper = env("MCPMUX_SANDBOX_HELPER");
    launch_.script = env("MCPMUX_RUNNER");
    ASSERT_FALSE(launch_.helper.empty() || launch_.script.empty())
        << "MCPMUX_SANDBOX_HELPER and MCPMUX_RUNNER name the helper and runner.mjs";
    launch_.heap_mb = 32;
  }

  // Starts a runner, waits until it is ready, runs `program` answering its calls; the last
  // message ({"done"} or {"error"}).
  json::object run(const std::string& program, json::object limits = {}, responder answer = {},
                   ms timeout = 10s) {
    const auto started = std::chrono::steady_clock::now();
    runner_process r(runner_command(launch_));
    auto ready = r.next(timeout);
    EXPECT_TRUE(ready && ready->contains("ready")) << "the runner did not start";
    if (!ready) return {};
    const auto t0 = std::chrono::steady_clock::now();
    ready_ms_ = std::chrono::duration<double, std::milli>(t0 - started).count();
    r.send(json::object{
        {"program", program},
        {"tools", json::array{"github__search_issues", "github__get_issue", "memory__read_graph"}},
        {"limits", limits}});
    for (;;) {
      auto m = r.next(timeout);
      if (!m) return {};
      if (first_ms_ < 0)
        first_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count();
      if (auto* id = m->if_contains("call")) {
        calls_.push_back(*m);
        auto reply = answer ? answer(json::value_to<std::string>(m->at("tool")),
                                     m->at("arguments").as_object())
                            : text_result("ok");
        reply["result"] = *id;
        r.send(reply);
        continue;
      }
      return *m;
    }
  }

  static std::string kind(const json::object& end) {
    const auto* e = end.if_contains("error");
    return e ? json::value_to<std::string>(e->at("kind")) : "";
  }

  runner_launch launch_;
  std::vector<json::object> calls_;
  double ready_ms_ = -1;  // spawned to ready: what pre-starting hides
  double first_ms_ = -1;  // the program sent, to the runner's first line
};

TEST_F(runner_test, two_tools_called_together_answer_as_object_and_text) {
  const auto end =
      run(R"(
    const [found, graph] = await Promise.all([
      tools.github.search_issues({ q: "crash" }),
      tools["memory__read_graph"]({}),
    ]);
    console.log("found", found.total);
    return { first: found.items[0], graph };)",
          {}, [](const std::string& tool, const json::object& args) {
            if (tool == "github__search_issues") {
              EXPECT_EQ(args.at("q"), "crash");
              return json::object{{"structuredContent", {{"total", 2}, {"items", {7, 9}}}}};
            }
            return text_result("graph: empty");
          });
  ASSERT_TRUE(end.contains("done")) << json::serialize(end);
  EXPECT_EQ(end.at("done").at("value"), json::parse(R"({"first": 7, "graph": "graph: empty"})"));
  EXPECT_EQ(end.at("done").at("logs"), "found 2\n");
  ASSERT_EQ(calls_.size(), 2u);  // both sent before either was answered
  std::printf("runner spawned to ready: %.1f ms; program sent to its first call: %.1f ms\n",
              ready_ms_, first_ms_);
}

TEST_F(runner_test, a_tool_error_throws_with_the_server_message) {
  const auto end = run(R"(
    try { await tools.github.get_issue({ n: 1 }); } catch (e) { return e.message; })",
                       {}, [](const std::string&, const json::object&) {
                         auto r = text_result("issue 1 is private");
                         r["isError"] = true;
                         return r;
                       });
  ASSERT_TRUE(end.contains("done")) << json::serialize(end);
  EXPECT_EQ(end.at("done").at("value"), "github__get_issue: issue 1 is private");
}

TEST_F(runner_test, a_syntax_error_names_line_and_column) {
  const auto end = run("const a = 1;\nconst b = = 2;");
  ASSERT_EQ(kind(end), "syntax") << json::serialize(end);
  EXPECT_EQ(end.at("error").at("line"), 2);
  EXPECT_EQ(end.at("error").at("column"), 11);
}

TEST_F(runner_test, an_uncaught_exception_comes_with_its_stack) {
  const auto end = run("function deep() { throw new RangeError('too far'); }\n\ndeep();");
  ASSERT_EQ(kind(end), "exception") << json::serialize(end);
  const auto& e = end.at("error").as_object();
  EXPECT_EQ(e.at("message"), "RangeError: too far");
  EXPECT_EQ(e.at("line"), 1);
  const auto stack = json::value_to<std::string>(e.at("stack"));
  EXPECT_NE(stack.find("at deep (program.js:1:"), std::string::npos) << stack;
  EXPECT_NE(stack.find("program.js:3:1"), std::string::npos) << stack;
  EXPECT_EQ(stack.find("runner.mjs"), std::string::npos) << "the runner's frames are its own";
}

// The message names the limit that stopped it: CPU time for a loop (long before the wall limit,
// however loaded the machine), wall time for a program that waits forever.
TEST_F(runner_test, an_infinite_loop_is_stopped_by_the_cpu_limit) {
  const auto end = run("for (;;) {}", {{"wall_ms", 10000}, {"cpu_ms", 300}}, {}, 15s);
  ASSERT_EQ(kind(end), "timeout") << json::serialize(end);
  EXPECT_EQ(end.at("error").at("message"), "the program used more than 300 ms of CPU time");
}

TEST_F(runner_test, a_program_that_waits_forever_is_stopped_by_the_wall_limit) {
  const auto end = run("await new Promise(() => {});", {{"wall_ms", 300}});
  ASSERT_EQ(kind(end), "timeout") << json::serialize(end);
  EXPECT_EQ(end.at("error").at("message"), "the program ran longer than 300 ms");
}

TEST_F(runner_test, a_memory_bomb_is_stopped_by_the_heap_limit) {
  const auto end = run("const a = []; for (;;) a.push(new Array(1e5).fill(1.5));");
  ASSERT_EQ(kind(end), "memory") << json::serialize(end);
}

TEST_F(runner_test, array_buffers_are_stopped_by_the_address_space_limit) {
  launch_.address_space_mb = 1800;
  const auto end = run("const a = []; for (;;) a.push(new Uint8Array(1e8));");
  ASSERT_EQ(kind(end), "memory") << json::serialize(end);
}

TEST_F(runner_test, huge_output_is_stopped_by_the_output_limit) {
  const auto end = run("for (;;) console.log('x'.repeat(1000));", {{"output_bytes", 10000}});
  ASSERT_EQ(kind(end), "output") << json::serialize(end);
  EXPECT_LE(end.at("error").at("logs").as_string().size(), 10000u);
}

TEST_F(runner_test, too_many_calls_end_the_program) {
  const auto end =
      run("for (let i = 0; i < 10; i++) await tools.github.get_issue({ n: i });", {{"calls", 3}});
  ASSERT_EQ(kind(end), "calls") << json::serialize(end);
  EXPECT_EQ(calls_.size(), 3u);
}

TEST_F(runner_test, run_code_and_unknown_tools_are_refused_inside) {
  const auto end = run(R"(
    const out = [];
    for (const f of [() => tools.mcpmux.run_code({ code: "1" }),
                     () => tools["mcpmux__run_code"]({}), () => tools.github.delete_repo({})])
      try { await f(); } catch (e) { out.push(e.message); }
    return out;)");
  ASSERT_TRUE(end.contains("done")) << json::serialize(end);
  const auto& out = end.at("done").at("value").as_array();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], "mcpmux__run_code cannot be called from inside a program");
  EXPECT_EQ(out[1], out[0]);
  EXPECT_EQ(out[2], "unknown tool github__delete_repo: not one this program may call");
  EXPECT_TRUE(calls_.empty());
}

TEST_F(runner_test, a_call_never_awaited_is_dropped_at_the_end) {
  const auto end =
      run(R"(
    tools.github.get_issue({ n: 1 });
    tools.github.no_such_tool({});  // fails while the program waits: dropped too
    await new Promise((resolve) => setTimeout(resolve, 20));
    return "early";)",
          {}, [](const std::string&, const json::object&) { return text_result("late"); });
  ASSERT_TRUE(end.contains("done")) << json::serialize(end);
  EXPECT_EQ(end.at("done").at("value"), "early");
}

// The vm context is no boundary: a program reaches Node's process through any host function.
// What it finds there must fail for the sandbox's reasons: no file outside, no child process
// (seccomp), no network.
TEST_F(runner_test, files_processes_and_network_fail_even_outside_the_vm) {
  const auto end = run(R"(
    const p = console.log.constructor("return process")();
    const out = {};
    const r = p.binding("fs").internalModuleReadJSON("/etc/passwd");
    out.fs = r?.[0] ? "read" : "not found";
    const pipe = (r, w) => ({ type: "pipe", readable: r, writable: w });
    const s = p.binding("spawn_sync").spawn({ file: "/usr/bin/node", args: ["node", "-e", "1"],
        envPairs: [], stdio: [pipe(true, false), pipe(false, true), pipe(false, true)] });
    out.spawn = s.error ?? s.status;
    try { await console.log.constructor("return fetch")()("http://1.1.1.1/");
          out.fetch = "reached"; } catch (e) { out.fetch = e.cause?.code ?? e.message; }
    return out;)");
  ASSERT_TRUE(end.contains("done")) << json::serialize(end);
  const auto& out = end.at("done").at("value").as_object();
  EXPECT_EQ(out.at("fs"), "not found");
  EXPECT_EQ(out.at("spawn"), -1) << "EPERM from the runner's seccomp profile";
  EXPECT_EQ(out.at("fetch"), "ENETUNREACH");
}

// The helper's lock, alone: the one exec it allows is its own; the program's is refused.
TEST_F(runner_test, the_lock_refuses_every_later_exec) {
  const std::vector<std::string> argv{launch_.helper, "lock", "--",
                                      "/bin/sh",      "-c",   "exec /bin/true"};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(::posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), environ), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 126) << "sh could not exec /bin/true (EPERM)";
}

}  // namespace
}  // namespace mcpmux::test
