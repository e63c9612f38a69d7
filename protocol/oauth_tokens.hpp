// The tokens of one OAuth login over time, as a stepable machine (no I/O; time passed in): the
// access token to send, the refresh that is due before it expires (one at a time), what a 401
// in the middle of a call means (the seeds' rule: refresh once, then retry; a second 401 with
// the new token is not refreshed again), rotation (a new refresh token replaces the old), and
// the "needs login" state that ends it all — never a loop. The owner performs the refreshes
// and keeps the tokens on disk (see `changed()`).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>

#include "protocol/oauth_grant.hpp"

namespace mcpmux::oauth {

class token_keeper {
 public:
  using clock = std::chrono::system_clock;  // expiry is wall time: it survives a restart

  /// What a call should do about its Authorization header.
  struct verdict {
    enum kind {
      send,         ///< send `token` (fresh enough)
      wait,         ///< a refresh is in flight (or must start: refresh_due() says); ask again
      needs_login,  ///< no usable token: `why` says so; the call fails with it
      unavailable,  ///< expired, and refreshing it failed for now: the call fails with `why`
                    ///< (a later call tries again once the back-off has passed)
    } what = needs_login;
    std::string token;
    std::string why;
  };

  /// Restores a saved login (tokens from disk); none: needs login.
  explicit token_keeper(std::optional<token_set> saved = std::nullopt,
                        std::optional<clock::time_point> expires = std::nullopt);

  /// New tokens from a login (authorization code) or a refresh. A refresh without a new
  /// refresh token keeps the old one (rotation is the server's choice).
  void on_tokens(token_set tokens, clock::time_point now);
  /// The token for a call now. An expired token with a refresh token left is `wait` (the owner
  /// starts the refresh); without one, `needs_login`.
  verdict token_for_call(clock::time_point now);

  /// True when the owner should start a refresh now: the token expires within the margin, or a
  /// 401 asked for it, and none is in flight. Marks one in flight.
  bool start_refresh(clock::time_point now);
  /// When the next refresh is due (to arm a timer); none without a refresh token or expiry.
  std::optional<clock::time_point> refresh_due() const;
  /// The refresh token to send (valid while a refresh is in flight).
  const std::string& refresh_token() const {
    return tokens_ && tokens_->refresh_token ? *tokens_->refresh_token : empty_;
  }
  /// The refresh's outcome: tokens, or the server's error. `invalid_grant` (the refresh token
  /// was revoked or rotated away) ends in needs login; any other failure (the server was down)
  /// keeps the login and tries again later, backing off.
  void on_refresh_failed(const oauth_error& e, clock::time_point now);

  /// A call sent with `token_used` got HTTP 401. Returns what to do with the call: `send` the
  /// newer token (a refresh already replaced it), `wait` for a refresh (the first 401 of this
  /// token), or `needs_login` (this token was refreshed already: refreshing again would loop).
  verdict on_unauthorized(const std::string& token_used, clock::time_point now);

  /// A call sent with `token_used` succeeded: a token a 401's refresh brought is proven good
  /// (a later 401 may refresh it again).
  void on_success(const std::string& token_used);

  /// Logged out (or the login was refused): everything forgotten.
  void forget(std::string why);

  bool logged_in() const { return tokens_.has_value(); }
  const std::string& why_not() const { return why_; }
  std::optional<clock::time_point> expires() const { return expires_; }
  const std::optional<token_set>& tokens() const { return tokens_; }
  /// True once after each change the owner must save (new tokens, forgotten ones).
  bool changed() { return std::exchange(changed_, false); }

  /// How long before expiry a refresh starts: a tenth of the token's life, between 5 s and 5 min,
  /// and at most half of it.
  static std::chrono::seconds margin(std::chrono::seconds lifetime);

 private:
  bool backing_off(clock::time_point now) const;

  std::optional<token_set> tokens_;
  std::optional<clock::time_point> expires_;
  std::optional<clock::time_point> refresh_at_;
  bool refreshing_ = false;
  bool refresh_asked_ = false;       ///< a call wants a refresh now (expired, or a 401)
  bool asked_by_401_ = false;        ///< the refresh asked for / in flight came from a 401
  bool current_from_401_ = false;    ///< the current token came from such a refresh
  std::chrono::seconds backoff_{0};  ///< after a failed refresh that was not invalid_grant
  std::string why_ = "not logged in";
  bool changed_ = false;
  std::string empty_;
};

}  // namespace mcpmux::oauth
