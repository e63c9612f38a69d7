// The code-mode runner's command line (sandbox/runner_command): the helper's runner profile and
// limits outside, a root of nothing but the engine, its libraries and the runner, no network,
// no environment, exec locked inside, the heap limits on the engine.
#include <gtest/gtest.h>

#include <algorithm>

#include "sandbox/runner_command.hpp"

namespace mcpmux {
namespace {

runner_launch launch() {
  runner_launch l;
  l.bwrap = "/usr/bin/bwrap";
  l.helper = "/usr/libexec/mcpmux/mcpmux-sandbox";
  l.node = "/usr/bin/node";
  l.script = "/usr/libexec/mcpmux/runner.mjs";
  l.cgroup_procs = {"/sys/fs/cgroup/mcpmux/run-1/cgroup.procs"};
  l.heap_mb = 48;
  l.cpu_seconds = 20;
  return l;
}

// The words between `from` (inclusive) and the next "--" at or after it.
std::vector<std::string> segment(const std::vector<std::string>& a, std::size_t from) {
  auto end = std::find(a.begin() + static_cast<long>(from), a.end(), "--");
  return {a.begin() + static_cast<long>(from), end};
}

bool has_pair(const std::vector<std::string>& a, const std::string& x, const std::string& y) {
  for (std::size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == x && a[i + 1] == y) return true;
  return false;
}

TEST(runner_command, the_helper_enters_with_the_runner_profile_and_limits) {
  const auto a = runner_command(launch());
  EXPECT_EQ(segment(a, 0),
            (std::vector<std::string>{"/usr/libexec/mcpmux/mcpmux-sandbox", "enter", "--runner",
                                      "--cgroup", "/sys/fs/cgroup/mcpmux/run-1/cgroup.procs",
                                      "--files", "64", "--cpu", "20", "--address-space", "2048"}));
}

TEST(runner_command, bubblewrap_shows_only_the_engine_and_the_runner) {
  const auto a = runner_command(launch());
  const auto first = std::find(a.begin(), a.end(), "--") - a.begin();
  ASSERT_EQ(a[static_cast<std::size_t>(first) + 1], "/usr/bin/bwrap");
  const auto bwrap = segment(a, static_cast<std::size_t>(first) + 2);
  for (const char* word : {"--unshare-all", "--die-with-parent", "--new-session", "--clearenv"})
    EXPECT_NE(std::find(bwrap.begin(), bwrap.end(), word), bwrap.end()) << word;
  EXPECT_EQ(std::find(bwrap.begin(), bwrap.end(), "--share-net"), bwrap.end());
  EXPECT_TRUE(has_pair(bwrap, "--cap-drop", "ALL"));
  // Every mount read-only and named; no --bind, no /, no home, no /tmp.
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < bwrap.size(); ++i) {
    EXPECT_NE(bwrap[i], "--bind");
    EXPECT_NE(bwrap[i], "--tmpfs");
    if (bwrap[i] == "--ro-bind" || bwrap[i] == "--ro-bind-try") {
      EXPECT_EQ(bwrap[i + 1], bwrap[i + 2]);
      shown.push_back(bwrap[i + 1]);
    }
  }
  EXPECT_EQ(shown,
            (std::vector<std::string>{
                "/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache", "/usr/bin/node",
                "/usr/libexec/mcpmux/runner.mjs", "/usr/libexec/mcpmux/mcpmux-sandbox"}));
}

TEST(runner_command, exec_is_locked_before_the_engine_starts_with_its_heap_limits) {
  const auto a = runner_command(launch());
  const auto lock = std::find(a.begin(), a.end(), "lock");
  ASSERT_NE(lock, a.end());
  EXPECT_EQ(*(lock - 1), "/usr/libexec/mcpmux/mcpmux-sandbox");
  EXPECT_EQ(std::vector<std::string>(lock + 1, a.end()),
            (std::vector<std::string>{"--", "/usr/bin/node", "--max-old-space-size=64",
                                      "/usr/libexec/mcpmux/runner.mjs", "--heap-mb", "48"}));
}

}  // namespace
}  // namespace mcpmux
