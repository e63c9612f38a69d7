// Unit tests of sandbox/limits and sandbox/cgroup: the parsers and descriptions, then real groups
// on this machine (skipped where no cgroup is writable): a memory limit's kill and its reason,
// a fork bomb held by the tasks limit, kill_all, removal.
#include "sandbox/cgroup.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "sandbox/limits.hpp"

namespace mcpmux {
namespace {

using namespace cgroup_detail;

TEST(ResourceLimits, DescribeForPeople) {
  EXPECT_EQ(describe(resource_limits{}), "no limits");
  EXPECT_EQ(describe(resource_limits{512ull << 20, 0.5, 1024, 8192}),
            "memory 512 MiB, cpu 0.5, tasks 1024, files 8192");
  EXPECT_EQ(describe(resource_limits{.cpu_max = 2}), "cpu 2");
  EXPECT_EQ(format_bytes(3ull << 29), "1.5 GiB");
  EXPECT_EQ(format_bytes(8ull << 30), "8 GiB");
  EXPECT_EQ(format_bytes(100 * 1024), "100 KiB");
  EXPECT_EQ(format_bytes(17), "17 bytes");
  EXPECT_EQ(format_cpus(0.25), "0.25");
  EXPECT_FALSE(resource_limits{}.any());
  EXPECT_TRUE(resource_limits{.files_max = 1}.any());
}

TEST(Cgroup, ParsesProcSelfCgroup) {
  const auto m = parse_proc_cgroup("9:name=systemd:/\n4:memory:/a/b\n2:cpu,cpuacct:/\n0::/u\n");
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[1].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ(m[1].path, "/a/b");
  EXPECT_EQ(m[2].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_TRUE(m[3].controllers.empty());
  EXPECT_EQ(m[3].path, "/u");
}

TEST(Cgroup, ParsesCgroupMounts) {
  const auto mounts = parse_cgroup_mounts(
      "30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup "
      "rw,cpu,cpuacct\n"
      "40 30 0:37 /x /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n");
  ASSERT_EQ(mounts.size(), 2u);
  EXPECT_FALSE(mounts[0].v2);
  EXPECT_EQ(mounts[0].point, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(mounts[0].options, (std::vector<std::string>{"rw", "cpu", "cpuacct"}));
  EXPECT_TRUE(mounts[1].v2);
  EXPECT_EQ(mounts[1].root, "/x");
}

TEST(Cgroup, KeyedValuesAndNames) {
  bool found = false;
  EXPECT_EQ(keyed_value("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill", &found), 3u);
  EXPECT_TRUE(found);
  EXPECT_EQ(keyed_value("max 0\n", "oom_kill", &found), 0u);
  EXPECT_FALSE(found);
  EXPECT_EQ(sanitise_name("my server/../x"), "my_server_.._x");
  EXPECT_EQ(sanitise_name(".hidden"), "_.hidden");
  EXPECT_EQ(sanitise_name(""), "_");
  EXPECT_EQ(sanitise_name(std::string(100, 'a')).size(), 48u);
}

TEST(Cgroup, DescribeSaysWhatEnforcesEachLimit) {
  cgroup_host host;
  host.places[static_cast<std::size_t>(cgroup_controller::memory)] = {cgroup_kind::v1, "/m", ""};
  host.places[static_cast<std::size_t>(cgroup_controller::pids)] = {cgroup_kind::v2, "/p", ""};
  host.places[static_cast<std::size_t>(cgroup_controller::cpu)].problem = "no cpu controller";
  EXPECT_EQ(describe(host, resource_limits{512ull << 20, 0.5, 1024, 8192}),
            "memory 512 MiB (cgroup v1), cpu: no limit (no cpu controller), tasks 1024 "
            "(cgroup v2), files 8192 (rlimit)");
  EXPECT_EQ(describe(host, resource_limits{}), "no limits");
}

// The real thing, on a machine with writable cgroups.
class RealCgroup : public testing::Test {
 protected:
  void SetUp() override {
    host_ = probe_cgroups();
    if (!host_.usable()) GTEST_SKIP() << host_.problem;
    // The processes a test orphans (a shell that died with its sleeps running) come back here
    // to be reaped, not to an init that may never reap them.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  void TearDown() override {
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  }
  void need(cgroup_controller c) {
    if (host_.at(c).kind == cgroup_kind::none)
      GTEST_SKIP() << controller_name(c) << ": " << host_.at(c).problem;
  }
  // Starts `/bin/sh -c script` inside `group`; the child joins before it execs.
  pid_t start_in(const server_group& group, const char* script) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (const auto& file : group.procs_files()) {
        const int fd = ::open(file.c_str(), O_WRONLY);
        if (fd < 0 || ::write(fd, "0", 1) != 1) ::_exit(126);
        ::close(fd);
      }
      const int null = ::open("/dev/null", O_RDWR);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
      ::execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
      ::_exit(127);
    }
    return pid;
  }
  static bool gone(const std::string& dir) {
    struct stat st {};
    return ::stat(dir.c_str(), &st) != 0;
  }
  static std::string dir_of(const std::string& procs_file) {
    return procs_file.substr(0, procs_file.rfind('/'));
  }
  cgroup_host host_;
};

TEST_F(RealCgroup, MemoryLimitKillsAndSaysSo) {
  need(cgroup_controller::memory);
  auto group = create_group(host_, "mem test", resource_limits{.memory_max = 64ull << 20});
  ASSERT_TRUE(group.ok()) << group.error().message;
  EXPECT_EQ(group->kill_reason(), "");
  // tail keeps the whole stream in memory when it has no newline: 100 MiB past a 64 MiB limit.
  const pid_t pid = start_in(*group, "head -c 100M /dev/zero | tail");
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGKILL) << status;
  EXPECT_EQ(group->kill_reason(), "memory limit 64 MiB");
  EXPECT_NE(group->limits_reached().find("memory limit 64 MiB: "), std::string::npos)
      << group->limits_reached();
  EXPECT_NE(group->description().find("(cgroup v"), std::string::npos) << group->description();
}

TEST_F(RealCgroup, TasksLimitHoldsAForkBombAndKillAllEmptiesTheGroup) {
  need(cgroup_controller::pids);
  auto group = create_group(host_, "fork bomb", resource_limits{.tasks_max = 16});
  ASSERT_TRUE(group.ok()) << group.error().message;
  const std::string dir = dir_of(group->procs_files().front());
  // 50 sleeps asked for, 16 tasks allowed (the shell included); dash gives up at the first
  // fork refused, its sleeps stay.
  const pid_t pid = start_in(*group, "for i in $(seq 50); do sleep 5 & done; wait");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (group->limits_reached().empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_NE(group->limits_reached().find("tasks limit 16 reached"), std::string::npos)
      << group->limits_reached();
  std::ifstream current(dir + "/pids.current");
  unsigned tasks = 0;
  current >> tasks;
  EXPECT_GT(tasks, 1u);
  EXPECT_LE(tasks, 16u);
  EXPECT_EQ(group->kill_reason(), "");  // a refused fork kills nothing

  EXPECT_FALSE(group->empty());
  EXPECT_TRUE(group->kill_all(2000));
  EXPECT_TRUE(group->empty());
  EXPECT_EQ(::waitpid(pid, nullptr, 0), pid);
  EXPECT_TRUE(group->remove());
  EXPECT_TRUE(gone(dir));
}

TEST_F(RealCgroup, TheDestructorRemovesTheGroupAndNamesAreUnique) {
  std::vector<std::string> dirs;
  {
    auto a = create_group(host_, "same", resource_limits{});
    auto b = create_group(host_, "same", resource_limits{});
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_FALSE(a->procs_files().empty());
    EXPECT_NE(a->procs_files(), b->procs_files());
    for (const auto& f : a->procs_files()) dirs.push_back(dir_of(f));
    for (const auto& f : b->procs_files()) dirs.push_back(dir_of(f));
    // A process left in a group does not keep it: the destructor kills it.
    start_in(*a, "sleep 30");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (a->empty() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_FALSE(a->empty());
  }
  for (const auto& d : dirs) EXPECT_TRUE(gone(d)) << d;
}

TEST_F(RealCgroup, StaleGroupsOfADeadDaemonAreRemovedAtProbe) {
  need(cgroup_controller::pids);
  // A pid that is not running: a child that was reaped.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const std::string parent = host_.at(cgroup_controller::pids).parent;
  const std::string stale = parent + "/old-" + std::to_string(dead) + "-1";
  const std::string live = parent + "/live-" + std::to_string(::getppid()) + "-1";
  ASSERT_EQ(::mkdir(stale.c_str(), 0755), 0) << stale;
  ASSERT_EQ(::mkdir(live.c_str(), 0755), 0) << live;
  probe_cgroups();
  EXPECT_TRUE(gone(stale));
  EXPECT_FALSE(gone(live));
  ::rmdir(live.c_str());
}

TEST_F(RealCgroup, CpuLimitIsWritten) {
  need(cgroup_controller::cpu);
  auto group = create_group(host_, "cpu", resource_limits{.cpu_max = 0.5});
  ASSERT_TRUE(group.ok()) << group.error().message;
  const std::string dir = dir_of(group->procs_files().front());
  std::ostringstream text;
  for (const auto& f : group->procs_files()) {
    const std::string d = dir_of(f);
    for (const char* file : {"/cpu.max", "/cpu.cfs_quota_us"}) {
      std::ifstream in(d + file);
      if (in) text << in.rdbuf();
    }
  }
  EXPECT_NE(text.str().find("50000"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace mcpmux
