// OAuth logins on disk (core/oauth_store): a round trip, private files in a private directory,
// and a file others could read refused without its secrets in the error.
#include "core/oauth_store.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace mcpmux {
namespace {

namespace fs = std::filesystem;

class OauthStore : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string templ = (fs::temp_directory_path() / "mcpmux-oauth-XXXXXX").string();
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    dir_ = root_ + "/state/oauth";
  }
  void TearDown() override { fs::remove_all(root_); }

  static mode_t mode_of(const std::string& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 0777;
  }
  static oauth_record record() {
    oauth_record r;
    r.server = "github";
    r.resource = "https://api.example.com/mcp";
    r.issuer = "https://auth.example.com";
    r.client = oauth::client_credentials{r.issuer, "client-1", "client-secret-XYZ", 1900000000,
                                         "client_secret_basic"};
    oauth::token_set t;
    t.access_token = "access-token-SECRET";
    t.refresh_token = "refresh-token-SECRET";
    t.scope = "repo read:org";
    r.tokens = t;
    r.expires_at = 1800000000;
    r.refreshed_at = 1700000000;
    r.grant = "authorization_code";
    r.client_id = "client-1";
    r.auth_method = "client_secret_basic";
    r.token_endpoint = "https://auth.example.com/token";
    r.revocation_endpoint = "https://auth.example.com/revoke";
    r.scope = "repo read:org offline_access";
    return r;
  }

  std::string root_, dir_;
};

TEST_F(OauthStore, a_login_round_trips_in_a_private_file) {
  ASSERT_TRUE(store_oauth_record(dir_, record()).ok());
  EXPECT_EQ(mode_of(dir_), 0700u);
  EXPECT_EQ(mode_of(dir_ + "/github.json"), 0600u);
  auto got = load_oauth_record(dir_, "github");
  ASSERT_TRUE(got.ok()) << got.error().message;
  const auto& r = *got;
  ASSERT_TRUE(r);
  EXPECT_EQ(r->resource, "https://api.example.com/mcp");
  EXPECT_EQ(r->issuer, "https://auth.example.com");
  ASSERT_TRUE(r->client);
  EXPECT_EQ(r->client->client_id, "client-1");
  EXPECT_EQ(r->client->client_secret, "client-secret-XYZ");
  EXPECT_EQ(r->client->issuer, "https://auth.example.com");  // bound to its issuer
  EXPECT_EQ(r->client->auth_method, "client_secret_basic");
  EXPECT_EQ(r->client->secret_expires, 1900000000);
  ASSERT_TRUE(r->tokens);
  EXPECT_EQ(r->tokens->access_token, "access-token-SECRET");
  EXPECT_EQ(r->tokens->refresh_token, std::optional<std::string>("refresh-token-SECRET"));
  EXPECT_EQ(r->tokens->scope, std::optional<std::string>("repo read:org"));
  EXPECT_EQ(r->expires_at, 1800000000);
  EXPECT_EQ(r->refreshed_at, 1700000000);
  EXPECT_EQ(r->grant, "authorization_code");
  EXPECT_EQ(r->client_id, "client-1");
  EXPECT_EQ(r->auth_method, "client_secret_basic");
  EXPECT_EQ(r->token_endpoint, "https://auth.example.com/token");
  EXPECT_EQ(r->revocation_endpoint, "https://auth.example.com/revoke");
  EXPECT_EQ(r->scope, "repo read:org offline_access");

  auto none = load_oauth_record(dir_, "other");  // no login is no error
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(*none);
}

TEST_F(OauthStore, a_file_others_can_read_is_refused_and_replaced_private) {
  ASSERT_TRUE(store_oauth_record(dir_, record()).ok());
  const auto path = dir_ + "/github.json";
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto got = load_oauth_record(dir_, "github");
  ASSERT_FALSE(got.ok());
  const auto& why = got.error().message;
  EXPECT_NE(why.find("644"), std::string::npos) << why;
  EXPECT_NE(why.find("log in again"), std::string::npos) << why;
  EXPECT_EQ(why.find("SECRET"), std::string::npos) << why;  // the error names, never quotes
  // A new login replaces it with a private file (the loosened mode is not kept).
  ASSERT_TRUE(store_oauth_record(dir_, record()).ok());
  EXPECT_EQ(mode_of(path), 0600u);
  EXPECT_TRUE(load_oauth_record(dir_, "github").ok());
}

TEST_F(OauthStore, odd_files_are_refused_and_logout_removes_the_login) {
  fs::create_directories(dir_);
  const auto target = root_ + "/elsewhere.json";
  std::ofstream(target) << "{}";
  ::chmod(target.c_str(), 0600);
  ASSERT_EQ(::symlink(target.c_str(), (dir_ + "/linked.json").c_str()), 0);
  EXPECT_FALSE(load_oauth_record(dir_, "linked").ok());
  std::ofstream(dir_ + "/junk.json") << "not json";
  ::chmod((dir_ + "/junk.json").c_str(), 0600);
  EXPECT_FALSE(load_oauth_record(dir_, "junk").ok());

  ASSERT_TRUE(store_oauth_record(dir_, record()).ok());
  EXPECT_TRUE(remove_oauth_record(dir_, "github").ok());
  EXPECT_FALSE(load_oauth_record(dir_, "github").value());
  EXPECT_TRUE(remove_oauth_record(dir_, "github").ok());  // already gone: fine
}

}  // namespace
}  // namespace mcpmux
