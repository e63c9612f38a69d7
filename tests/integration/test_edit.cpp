// `mcpmux add|remove|enable|disable` against a running daemon: the config edited in place (a
// commented file given back byte for byte), the daemon reloaded, and the command returning once
// the server is ready, or with its error when its start failed.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

constexpr std::string_view header = R"(# my servers, by hand
[daemon]          # defaults are fine
log_level = "debug"

# the first one
)";

class edit : public daemon_test {
 protected:
  /// `mcpmux --socket S COMMAND --config CFG ARGS...`, the secrets kept in a file of the test's.
  run_result mcpmux(std::vector<std::string> args) {
    std::vector<std::string> argv{mcpmux_path(), "--socket", daemon_->socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.begin() + 4, {"--config", dir_.file("config.toml")});  // before any --
    return run_process(argv, {}, 20s, {{"MCPMUX_SECRETS_FILE", dir_.file("secrets.json")}});
  }
  std::string tools() { return run_cli(daemon_->socket(), {"tools"}).out; }
  std::string config() { return read_file(dir_.file("config.toml")); }
};

TEST_F(edit, AddDisableEnableRemoveAgainstARunningDaemon) {
  const std::string original =
      std::string(header) + fake_server_table("alpha", {}) + "# the end, after the tables\n";
  daemon_options opt;
  opt.env["MCPMUX_SECRETS_FILE"] = dir_.file("secrets.json");
  start(original, opt);
  ASSERT_TRUE(daemon_->started());

  // Added: ready when the command returns, its token in the secret store, not the file.
  auto r = mcpmux({"add", "beta", "--env", "BETA_TOKEN=s3cret-value", "--", fake_server_path(),
                   "--no-builtins", "--tools", "2"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "beta is ready: 2 tools")) << describe(r);
  EXPECT_TRUE(contains(tools(), "beta__tool_1"));
  EXPECT_TRUE(config().starts_with(original)) << config();
  EXPECT_TRUE(contains(config(), "${secret:beta_BETA_TOKEN}")) << config();
  EXPECT_FALSE(contains(config(), "s3cret-value"));
  EXPECT_TRUE(contains(read_file(dir_.file("secrets.json")), "s3cret-value"));

  // A name in use, and a server that cannot be valid: refused, the file untouched.
  const auto with_beta = config();
  r = mcpmux({"add", "alpha", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "has a server \"alpha\" already")) << describe(r);
  r = mcpmux({"add", "bad.name", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << describe(r);
  EXPECT_TRUE(contains(r.err, "would not be valid")) << describe(r);
  EXPECT_EQ(config(), with_beta);

  // A start that fails: the server's error, exit 1.
  r = mcpmux({"add", "broken", "--", dir_.file("no-such-program")});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "broken did not start:")) << describe(r);
  EXPECT_TRUE(contains(r.err, "no-such-program")) << describe(r);
  const auto before_disable = config();

  r = mcpmux({"disable", "beta"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "beta is disabled")) << describe(r);
  EXPECT_FALSE(contains(tools(), "beta__tool_1"));
  r = mcpmux({"enable", "beta"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "beta is ready")) << describe(r);
  EXPECT_TRUE(contains(tools(), "beta__tool_1"));
  EXPECT_EQ(config(), before_disable);

  for (const char* name : {"broken", "beta"}) {
    r = mcpmux({"remove", name});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_TRUE(contains(r.out, std::string(name) + " stopped and removed")) << describe(r);
  }
  EXPECT_EQ(config(), original);  // byte for byte
  EXPECT_FALSE(contains(tools(), "beta__"));
  EXPECT_TRUE(contains(tools(), "alpha__echo"));
  r = mcpmux({"remove", "beta"});
  EXPECT_EQ(r.exit_code, 1) << describe(r);
  EXPECT_TRUE(contains(r.err, "no server \"beta\"")) << describe(r);
}

TEST_F(edit, WithoutADaemonTheFileIsCreatedPrivateAndSaysSo) {
  const auto cfg = dir_.file("new/config.toml");
  run_result r = run_process({mcpmux_path(), "--socket", dir_.file("nobody.sock"), "add", "solo",
                              "--config", cfg, "--", "some-server", "--flag"});
  ASSERT_EQ(r.exit_code, 0) << describe(r);
  EXPECT_TRUE(contains(r.out, "no daemon answers")) << describe(r);
  EXPECT_EQ(read_file(cfg), "[servers.solo]\ncommand = \"some-server\"\nargs = [\"--flag\"]\n");
  struct stat st {};
  ASSERT_EQ(::stat(cfg.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace mcpmux::test
