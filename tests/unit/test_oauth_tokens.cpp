// The tokens of one login over time (protocol/oauth_tokens): refresh before expiry, one at
// a time, rotation, refresh-once-and-retry on a 401, needs login instead of a loop, back-off
// when the authorization server is down.
#include "protocol/oauth_tokens.hpp"

#include <gtest/gtest.h>

namespace mcpmux::oauth {
namespace {

using namespace std::chrono_literals;
using clock_t_ = token_keeper::clock;
using kind = token_keeper::verdict::kind;

token_set tokens(std::string access, std::optional<std::string> refresh,
                 std::optional<std::uint64_t> life = 3600) {
  token_set t;
  t.access_token = std::move(access);
  t.refresh_token = std::move(refresh);
  t.expires_in = life;
  return t;
}

oauth_error error(std::string code) {
  oauth_error e;
  e.error = std::move(code);
  e.from_server = true;
  return e;
}

const auto t0 = clock_t_::time_point{} + 1000h;

TEST(oauth_tokens, no_login_needs_one) {
  token_keeper k;
  EXPECT_FALSE(k.logged_in());
  const auto v = k.token_for_call(t0);
  EXPECT_EQ(v.what, kind::needs_login);
  EXPECT_EQ(v.why, "not logged in");
  EXPECT_FALSE(k.start_refresh(t0));
  EXPECT_FALSE(k.refresh_due());
}

TEST(oauth_tokens, a_refresh_is_due_before_expiry_one_at_a_time_with_rotation) {
  token_keeper k;
  k.on_tokens(tokens("a1", "r1"), t0);
  EXPECT_TRUE(k.changed());
  EXPECT_FALSE(k.changed());  // once per change
  EXPECT_EQ(k.token_for_call(t0).token, "a1");
  ASSERT_TRUE(k.refresh_due());
  EXPECT_EQ(*k.refresh_due(), t0 + 3600s - token_keeper::margin(3600s));
  EXPECT_EQ(token_keeper::margin(3600s), 300s);  // a tenth of an hour is capped at 5 min
  EXPECT_EQ(token_keeper::margin(20s), 5s);
  EXPECT_EQ(token_keeper::margin(6s), 3s);  // a short-lived token: at half its life, not at once
  EXPECT_FALSE(k.start_refresh(t0 + 10s));  // not due yet
  const auto due = *k.refresh_due();
  ASSERT_TRUE(k.start_refresh(due));
  EXPECT_FALSE(k.start_refresh(due));  // one in flight
  EXPECT_EQ(k.refresh_token(), "r1");
  EXPECT_EQ(k.token_for_call(due).what, kind::wait);  // calls wait for it
  k.on_tokens(tokens("a2", "r2"), due);               // rotation: r2 replaces r1
  EXPECT_EQ(k.refresh_token(), "r2");
  EXPECT_EQ(k.token_for_call(due).token, "a2");
  k.on_tokens(tokens("a3", std::nullopt), due + 1h);  // no new refresh token: r2 kept
  EXPECT_EQ(k.refresh_token(), "r2");
}

TEST(oauth_tokens, an_expired_token_waits_for_a_refresh_or_needs_login_without_one) {
  token_keeper k;
  k.on_tokens(tokens("a1", "r1", 60), t0);
  auto v = k.token_for_call(t0 + 61s);
  EXPECT_EQ(v.what, kind::wait);
  EXPECT_TRUE(k.start_refresh(t0 + 61s));

  token_keeper once;
  once.on_tokens(tokens("a1", std::nullopt, 60), t0);
  EXPECT_FALSE(once.refresh_due());  // nothing to refresh with
  v = once.token_for_call(t0 + 61s);
  EXPECT_EQ(v.what, kind::needs_login);
  EXPECT_NE(v.why.find("expired"), std::string::npos);
  EXPECT_FALSE(once.logged_in());
  EXPECT_TRUE(once.changed());  // the forgotten login is saved as gone

  token_keeper forever;  // no expires_in: used until refused
  forever.on_tokens(tokens("a1", "r1", std::nullopt), t0);
  EXPECT_EQ(forever.token_for_call(t0 + 24h * 365).token, "a1");
  EXPECT_FALSE(forever.refresh_due());
}

TEST(oauth_tokens, a_401_refreshes_once_and_retries_then_needs_login) {
  token_keeper k;
  k.on_tokens(tokens("a1", "r1"), t0);
  auto v = k.on_unauthorized("a1", t0);
  EXPECT_EQ(v.what, kind::wait);
  ASSERT_TRUE(k.start_refresh(t0));  // asked for at once, not at the due time
  // Another call refused with a1 meanwhile just waits for the same refresh.
  EXPECT_EQ(k.on_unauthorized("a1", t0).what, kind::wait);
  k.on_tokens(tokens("a2", "r2"), t0);
  // A call that still carried a1 retries with a2 without another refresh.
  v = k.on_unauthorized("a1", t0);
  EXPECT_EQ(v.what, kind::send);
  EXPECT_EQ(v.token, "a2");
  // a2 itself refused: no second refresh (that would loop), needs login.
  v = k.on_unauthorized("a2", t0);
  EXPECT_EQ(v.what, kind::needs_login);
  EXPECT_NE(v.why.find("log in again"), std::string::npos);
  EXPECT_FALSE(k.logged_in());
  EXPECT_FALSE(k.start_refresh(t0 + 1h));
}

TEST(oauth_tokens, a_token_proven_good_may_be_refreshed_on_a_later_401) {
  token_keeper k;
  k.on_tokens(tokens("a1", "r1"), t0);
  ASSERT_EQ(k.on_unauthorized("a1", t0).what, kind::wait);
  ASSERT_TRUE(k.start_refresh(t0));
  k.on_tokens(tokens("a2", "r2"), t0);
  k.on_success("a2");                                               // a2 worked for a while…
  EXPECT_EQ(k.on_unauthorized("a2", t0 + 30min).what, kind::wait);  // …so one more refresh
  // Without a refresh token a 401 is needs login at once.
  token_keeper bare;
  bare.on_tokens(tokens("a1", std::nullopt), t0);
  EXPECT_EQ(bare.on_unauthorized("a1", t0).what, kind::needs_login);
}

TEST(oauth_tokens, a_revoked_refresh_token_ends_in_needs_login) {
  token_keeper k;
  k.on_tokens(tokens("a1", "r1", 60), t0);
  ASSERT_TRUE(k.start_refresh(*k.refresh_due()));
  k.on_refresh_failed(error("invalid_grant"), t0 + 55s);
  EXPECT_FALSE(k.logged_in());
  EXPECT_TRUE(k.changed());
  const auto v = k.token_for_call(t0 + 56s);
  EXPECT_EQ(v.what, kind::needs_login);
  EXPECT_NE(v.why.find("invalid_grant"), std::string::npos);
  EXPECT_FALSE(k.start_refresh(t0 + 1h));  // and nothing asks again
}

TEST(oauth_tokens, a_server_that_is_down_is_asked_again_later_backing_off) {
  token_keeper k;
  k.on_tokens(tokens("a1", "r1", 60), t0);
  const auto due = *k.refresh_due();
  ASSERT_TRUE(k.start_refresh(due));
  k.on_refresh_failed(error("temporarily_unavailable"), due);
  EXPECT_TRUE(k.logged_in());
  EXPECT_EQ(k.token_for_call(due).token, "a1");  // still valid: still used
  ASSERT_TRUE(k.refresh_due());
  EXPECT_EQ(*k.refresh_due(), due + 5s);
  EXPECT_FALSE(k.start_refresh(due + 1s));
  ASSERT_TRUE(k.start_refresh(due + 5s));
  k.on_refresh_failed(error("invalid_response"), due + 5s);
  EXPECT_EQ(*k.refresh_due(), due + 15s);  // doubled
  // Expired meanwhile: calls fail for now (no waiting out the back-off), and say why.
  const auto v = k.token_for_call(t0 + 61s);
  EXPECT_EQ(v.what, kind::unavailable);
  EXPECT_NE(v.why.find("trying again"), std::string::npos);
  ASSERT_TRUE(k.start_refresh(due + 15s));
  k.on_tokens(tokens("a2", std::nullopt), due + 15s);
  EXPECT_EQ(k.token_for_call(due + 16s).token, "a2");
  EXPECT_EQ(k.refresh_token(), "r1");
}

TEST(oauth_tokens, a_saved_login_is_restored_and_logout_forgets_it) {
  token_keeper k(tokens("a1", "r1"), t0 + 10min);
  EXPECT_TRUE(k.logged_in());
  EXPECT_EQ(k.token_for_call(t0).token, "a1");
  ASSERT_TRUE(k.refresh_due());
  EXPECT_LT(*k.refresh_due(), t0 + 10min);
  k.forget("logged out");
  EXPECT_EQ(k.token_for_call(t0).why, "logged out");
  EXPECT_TRUE(k.changed());
  token_keeper empty(tokens("", "r1"));  // a saved file without an access token
  EXPECT_FALSE(empty.logged_in());
}

}  // namespace
}  // namespace mcpmux::oauth
