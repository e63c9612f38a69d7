// The sandbox's policy and its bubblewrap command line, worked out from a server's config over a
// home directory made for the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sandbox/bwrap.hpp"
#include "sandbox/policy.hpp"

namespace mcpmux {
namespace {

namespace fs = std::filesystem;

class SandboxPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("mcpmux-policy-" + std::to_string(::getpid()));
    fs::create_directories(root_ / "home/project/node_modules");
    fs::create_directories(root_ / "home/café");
    fs::create_directories(root_ / "home/.config/mcpmux");
    fs::create_directories(root_ / "home/.local/state/mcpmux");
    std::ofstream(root_ / "home/project/server.js") << "//";
    std::ofstream(root_ / "home/.config/mcpmux/secrets.json") << "{}";
    ctx_.home = (root_ / "home").string();
    ctx_.private_paths = {ctx_.home + "/.config/mcpmux", ctx_.home + "/.config/mcpmux/secrets.json",
                          ctx_.home + "/.local/state/mcpmux", ctx_.home + "/nonexistent"};
    ctx_.cache_root = (root_ / "cache").string();
    ctx_.program = "/usr/bin/npx";
    ctx_.helper = "/usr/libexec/mcpmux/mcpmux-sandbox";
    server_.name = "files";
    server_.command = "npx";
    server_.sandbox.mode = sandbox_mode::standard;
  }
  void TearDown() override { fs::remove_all(root_); }

  const sandbox_mount* mount_at(const sandbox_policy& p, const std::string& path) const {
    auto it = std::find_if(p.mounts.begin(), p.mounts.end(),
                           [&](const sandbox_mount& m) { return m.path == path; });
    return it == p.mounts.end() ? nullptr : &*it;
  }

  fs::path root_;
  sandbox_context ctx_;
  server_config server_;
};

TEST_F(SandboxPolicy, WhatTheServerIsGivenIsWritableUnderDefaultAndReadOnlyUnderStrict) {
  server_.args = {"-y", "@modelcontextprotocol/server-filesystem", ctx_.home + "/project",
                  "--data=" + ctx_.home + "/café"};
  auto p = make_policy(server_, ctx_);
  ASSERT_TRUE(p.active());
  EXPECT_EQ(p.network.mode, network_setting::kind::all);
  const auto* project = mount_at(p, ctx_.home + "/project");
  ASSERT_NE(project, nullptr);
  EXPECT_EQ(project->how, sandbox_mount::kind::read_write);
  ASSERT_NE(mount_at(p, ctx_.home + "/café"), nullptr);
  // npx writes into a cache of the server's own, seen where npx looks.
  const auto* cache = mount_at(p, ctx_.home + "/.npm");
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->source, ctx_.cache_root + "/files/npm");

  server_.sandbox.mode = sandbox_mode::strict;
  auto strict = make_policy(server_, ctx_);
  EXPECT_EQ(strict.network.mode, network_setting::kind::none);
  EXPECT_EQ(mount_at(strict, ctx_.home + "/project")->how, sandbox_mount::kind::read_only);
}

TEST_F(SandboxPolicy, AFileGivenBringsItsProjectAndRootsAreDecoded) {
  server_.command = "node";
  ctx_.program = "/usr/bin/node";
  server_.args = {ctx_.home + "/project/server.js"};
  server_.roots = {"file://" + ctx_.home + "/caf%C3%A9"};
  auto p = make_policy(server_, ctx_);
  const auto* project = mount_at(p, ctx_.home + "/project");
  ASSERT_NE(project, nullptr);
  EXPECT_EQ(project->how, sandbox_mount::kind::read_only);
  const auto* root = mount_at(p, ctx_.home + "/café");
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->why, "roots");
}

TEST_F(SandboxPolicy, McpmuxOwnFilesAreHiddenLastWhateverTheConfigAllows) {
  server_.sandbox.allow_read = {ctx_.home};  // the whole home directory, asked for
  auto p = make_policy(server_, ctx_);
  ASSERT_FALSE(p.mounts.empty());
  const auto& last = p.mounts.back();
  EXPECT_TRUE(last.how == sandbox_mount::kind::empty_dir ||
              last.how == sandbox_mount::kind::empty_file);
  EXPECT_NE(mount_at(p, ctx_.home + "/.config/mcpmux"), nullptr);
  // What is inside a hidden directory goes with it; what does not exist is not mounted.
  EXPECT_EQ(mount_at(p, ctx_.home + "/.config/mcpmux/secrets.json"), nullptr);
  EXPECT_EQ(mount_at(p, ctx_.home + "/nonexistent"), nullptr);
  EXPECT_EQ(why_hidden(p, ctx_.home + "/.config/mcpmux/secrets.json"),
            "mcpmux's own: never visible to a server");
  EXPECT_EQ(why_hidden(p, ctx_.home + "/project/server.js"), "");
  server_.sandbox.allow_read.clear();
  auto plain = make_policy(server_, ctx_);
  EXPECT_EQ(why_hidden(plain, ctx_.home + "/project/server.js"),
            "hidden: allow_read or allow_write in its table shows it");
  EXPECT_EQ(why_hidden(plain, "/usr/bin/env"), "");
}

TEST_F(SandboxPolicy, OffIsNoSandboxAndLimitsDefaultUnlessSet) {
  server_.sandbox.mode = sandbox_mode::off;
  EXPECT_FALSE(make_policy(server_, ctx_).active());
  server_.sandbox.mode = sandbox_mode::required;
  server_.sandbox.memory_max = 512ull << 20;
  server_.sandbox.tasks_max = 0;  // no limit
  auto p = make_policy(server_, ctx_);
  EXPECT_EQ(p.limits.memory_max, 512ull << 20);
  EXPECT_EQ(p.limits.tasks_max, 0u);
  EXPECT_EQ(p.limits.files_max, default_limits.files_max);
}

TEST_F(SandboxPolicy, TheCommandLineHidesHomeMountsInOrderAndRoutesAListThroughTheProxy) {
  server_.args = {ctx_.home + "/project"};
  server_.sandbox.network = network_setting{network_setting::kind::hosts, {"api.example.com"}};
  auto p = make_policy(server_, ctx_);
  EXPECT_EQ(p.env.at("HTTPS_PROXY"), "http://127.0.0.1:3128");
  sandbox_launch launch{"/usr/bin/bwrap",
                        ctx_.helper,
                        {"/sys/fs/cgroup/pids/x/cgroup.procs"},
                        "/run/user/1/mcpmux/proxy/1.sock",
                        true};
  auto cmd = sandboxed_command(p, ctx_, launch, {"/usr/bin/npx", "-y", "pkg"});
  const auto at = [&](const std::string& word) {
    return std::find(cmd.begin(), cmd.end(), word) - cmd.begin();
  };
  EXPECT_EQ(cmd[0], ctx_.helper);
  EXPECT_EQ(cmd[1], "enter");
  EXPECT_EQ(cmd[at("--cgroup") + 1], "/sys/fs/cgroup/pids/x/cgroup.procs");
  EXPECT_EQ(cmd[at("--files") + 1], "8192");
  EXPECT_EQ(std::count(cmd.begin(), cmd.end(), "--share-net"), 0);  // own network namespace
  // The home directory is an empty tmpfs before anything is mounted into it.
  const auto home = std::find(cmd.begin(), cmd.end(), ctx_.home) - cmd.begin();
  EXPECT_EQ(cmd[home - 1], "--tmpfs");
  EXPECT_LT(home, at(ctx_.home + "/project"));
  EXPECT_EQ(cmd[at(proxy_socket_inside) - 1], launch.proxy_socket);
  EXPECT_NE(at("confine"), static_cast<long>(cmd.size()));
  EXPECT_LT(at("confine"), at("forward"));
  EXPECT_EQ(cmd.back(), "pkg");
  EXPECT_EQ(cmd[cmd.size() - 3], "/usr/bin/npx");
}

}  // namespace
}  // namespace mcpmux
