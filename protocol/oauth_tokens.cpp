#include "protocol/oauth_tokens.hpp"

#include <algorithm>

namespace mcpmux::oauth {
namespace {

using namespace std::chrono_literals;

constexpr std::chrono::seconds min_backoff = 5s, max_backoff = 5min;

}  // namespace

std::chrono::seconds token_keeper::margin(std::chrono::seconds lifetime) {
  // Never more than half the life: a token shorter-lived than the margin would be refreshed
  // again as soon as it arrived.
  return std::min(std::clamp<std::chrono::seconds>(lifetime / 10, 5s, 5min), lifetime / 2);
}

token_keeper::token_keeper(std::optional<token_set> saved, std::optional<clock::time_point> expires)
    : tokens_(std::move(saved)), expires_(expires) {
  if (!tokens_ || tokens_->access_token.empty()) {
    tokens_.reset();
    expires_.reset();
    return;
  }
  // A saved token is refreshed a little before it expires, like a new one (its life is not
  // known any more: the smallest margin).
  if (expires_ && !refresh_token().empty()) refresh_at_ = *expires_ - 5s;
}

void token_keeper::on_tokens(token_set tokens, clock::time_point now) {
  // Rotation: a new refresh token replaces the old; none given keeps the old one.
  if (!tokens.refresh_token && tokens_ && tokens_->refresh_token)
    tokens.refresh_token = tokens_->refresh_token;
  tokens_ = std::move(tokens);
  // A token got by the refresh a 401 asked for gets no second refresh from a 401.
  current_from_401_ = std::exchange(asked_by_401_, false);
  refreshing_ = refresh_asked_ = false;
  backoff_ = 0s;
  why_.clear();
  changed_ = true;
  expires_.reset();
  refresh_at_.reset();
  if (tokens_->expires_in) {
    const auto life = std::chrono::seconds(*tokens_->expires_in);
    expires_ = now + life;
    if (!refresh_token().empty()) refresh_at_ = *expires_ - margin(life);
  }
}

token_keeper::verdict token_keeper::token_for_call(clock::time_point now) {
  if (!tokens_) return {verdict::needs_login, {}, why_};
  if (refreshing_) return {verdict::wait, {}, {}};
  if (expires_ && now >= *expires_) {
    if (refresh_token().empty()) {
      forget("the login expired (no refresh token)");
      return {verdict::needs_login, {}, why_};
    }
    if (backing_off(now)) return {verdict::unavailable, {}, why_};
    refresh_asked_ = true;
    return {verdict::wait, {}, {}};
  }
  return {verdict::send, tokens_->access_token, {}};
}

bool token_keeper::start_refresh(clock::time_point now) {
  if (!tokens_ || refreshing_ || refresh_token().empty()) return false;
  const bool due = refresh_at_ && now >= *refresh_at_;
  if ((!due && !refresh_asked_) || backing_off(now)) return false;
  refreshing_ = true;
  refresh_asked_ = false;
  return true;
}

std::optional<token_keeper::clock::time_point> token_keeper::refresh_due() const {
  if (!tokens_ || refreshing_ || refresh_token().empty()) return std::nullopt;
  return refresh_at_;
}

void token_keeper::on_refresh_failed(const oauth_error& e, clock::time_point now) {
  refreshing_ = asked_by_401_ = false;
  if (e.error == "invalid_grant" || e.error == "invalid_client" ||
      e.error == "unauthorized_client") {
    // The refresh token is dead (revoked, rotated away, expired) or the client is: only the
    // person can log in again. Asking again would loop.
    return forget("the login was refused on refresh (" + e.error + "); log in again");
  }
  // The server was unreachable or confused: keep the login, try again later (backing off).
  backoff_ = std::clamp(backoff_ * 2, min_backoff, max_backoff);
  refresh_at_ = now + backoff_;
  // An unexpired token still serves meanwhile; calls with an expired one fail until then.
  why_ = "refreshing the login failed (" + e.error + "); trying again in " +
         std::to_string(backoff_.count()) + " s";
}

token_keeper::verdict token_keeper::on_unauthorized(const std::string& token_used,
                                                    clock::time_point now) {
  (void)now;
  if (!tokens_) return {verdict::needs_login, {}, why_};
  if (token_used != tokens_->access_token) {
    // A refresh already replaced the token the call carried: retry with the new one.
    return {verdict::send, tokens_->access_token, {}};
  }
  if (refreshing_) return {verdict::wait, {}, {}};
  // The seeds' rule: refresh once and retry. A token that a 401's refresh just brought and that
  // is refused again is not refreshed again: the server does not take this login.
  if (refresh_token().empty() || current_from_401_) {
    forget("the server refused the login (HTTP 401); log in again");
    return {verdict::needs_login, {}, why_};
  }
  refresh_asked_ = asked_by_401_ = true;
  return {verdict::wait, {}, {}};
}

void token_keeper::on_success(const std::string& token_used) {
  if (tokens_ && token_used == tokens_->access_token) current_from_401_ = false;
}

bool token_keeper::backing_off(clock::time_point now) const {
  return backoff_.count() > 0 && refresh_at_ && now < *refresh_at_;
}

void token_keeper::forget(std::string why) {
  if (tokens_) changed_ = true;
  tokens_.reset();
  expires_.reset();
  refresh_at_.reset();
  refreshing_ = refresh_asked_ = asked_by_401_ = current_from_401_ = false;
  why_ = std::move(why);
}

}  // namespace mcpmux::oauth
