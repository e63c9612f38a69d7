// Unit tests of transports/http_reply_policy: what the reply to a POST means, row by row, and the
// two "once" budgets (resend on a stale connection, token refresh on 401/403). No socket.
#include "transports/http_reply_policy.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace mcpmux {
namespace {

using step = post_step;

constexpr post_context streamable_request{.legacy = false, .request = true};
constexpr post_context streamable_notification{.legacy = false, .request = false};
constexpr post_context legacy_request{.legacy = true, .request = true};
constexpr post_context legacy_notification{.legacy = true, .request = false};

post_reply reply(unsigned status, std::string media_type = {},
                 std::optional<std::uint64_t> content_length = std::nullopt, bool body_done = false,
                 bool has_session = false) {
  return {.status = status,
          .media_type = std::move(media_type),
          .body_done = body_done,
          .content_length = content_length,
          .has_session = has_session};
}

post_reply json_reply(unsigned status = 200) {
  return reply(status, "application/json", 40);
}

// The step a fresh policy takes for one reply.
step first(post_context ctx, const post_reply& r) {
  post_reply_policy p(ctx);
  return p.on_reply(r);
}

std::string name(step s) {
  return to_string(s);
}

// ---- 2xx, Streamable HTTP -------------------------------------------------------------------

TEST(PostReplyPolicy, JsonAndSseRepliesAreRead) {
  for (auto ctx : {streamable_request, streamable_notification}) {
    EXPECT_EQ(name(first(ctx, json_reply())), "read_json");
    EXPECT_EQ(name(first(ctx, json_reply(201))), "read_json");
    EXPECT_EQ(name(first(ctx, reply(200, "text/event-stream"))), "read_sse");
    EXPECT_EQ(name(first(ctx, reply(299, "text/event-stream"))), "read_sse");
  }
}

TEST(PostReplyPolicy, AcceptedAndNoContentDeliverNothing) {
  // 202 and 204 carry no answer, even to a request: it comes on another stream.
  for (auto ctx : {streamable_request, streamable_notification}) {
    EXPECT_EQ(name(first(ctx, reply(202, {}, 0, true))), "accepted");
    EXPECT_EQ(name(first(ctx, reply(204, {}, std::nullopt, true))), "accepted");
    // Whatever their headers say: the body is read and dropped.
    EXPECT_EQ(name(first(ctx, reply(202, "application/json", 40))), "accepted");
    EXPECT_EQ(name(first(ctx, reply(202, "text/event-stream"))), "accepted");
  }
}

TEST(PostReplyPolicy, AnEmptyOkIsAMissingAnswerOnlyForARequest) {
  // Empty: the header ended the message, or no Content-Type and Content-Length: 0.
  const post_reply empties[] = {reply(200, {}, 0, true), reply(200, "application/json", 0, true),
                                reply(200, {}, 0, false), reply(201, "text/event-stream", 0, true)};
  for (const auto& r : empties) {
    EXPECT_EQ(name(first(streamable_request, r)), "missing_answer") << r.status;
    EXPECT_EQ(name(first(streamable_notification, r)), "accepted") << r.status;
  }
  // A Content-Type with Content-Length: 0 not yet known to be done is read as that type.
  EXPECT_EQ(name(first(streamable_request, reply(200, "application/json", 0, false))), "read_json");
}

TEST(PostReplyPolicy, AnotherContentTypeIsAnErrorOnlyForARequest) {
  for (std::string type : {"text/html", "text/plain", "application/octet-stream", ""}) {
    EXPECT_EQ(name(first(streamable_request, reply(200, type, 12))), "wrong_type") << type;
    EXPECT_EQ(name(first(streamable_notification, reply(200, type, 12))), "accepted") << type;
  }
  // No Content-Type and no length (chunked or until close): not empty, so of the wrong type.
  EXPECT_EQ(name(first(streamable_request, reply(200))), "wrong_type");
}

// ---- 2xx, legacy HTTP+SSE -------------------------------------------------------------------

TEST(PostReplyPolicy, LegacyRepliesOnlySayAccepted) {
  for (auto ctx : {legacy_request, legacy_notification}) {
    EXPECT_EQ(name(first(ctx, reply(202, {}, 8))), "accepted");
    EXPECT_EQ(name(first(ctx, json_reply())), "accepted");
    EXPECT_EQ(name(first(ctx, reply(200, "text/event-stream"))), "accepted");
    EXPECT_EQ(name(first(ctx, reply(200, {}, 0, true))), "accepted");
    EXPECT_EQ(name(first(ctx, reply(204, {}, std::nullopt, true))), "accepted");
  }
}

// ---- 3xx ------------------------------------------------------------------------------------

TEST(PostReplyPolicy, RedirectsAreNotFollowed) {
  for (auto ctx :
       {streamable_request, streamable_notification, legacy_request, legacy_notification}) {
    for (unsigned s : {300u, 301u, 302u, 303u, 307u, 308u, 399u})
      EXPECT_EQ(name(first(ctx, reply(s, "text/html", 10))), "redirect") << s;
  }
}

// ---- errors ---------------------------------------------------------------------------------

TEST(PostReplyPolicy, NotFoundWithASessionMeansTheSessionExpired) {
  EXPECT_EQ(name(first(streamable_request, reply(404, "text/plain", 9, false, true))),
            "session_expired");
  EXPECT_EQ(name(first(streamable_notification, reply(404, {}, 0, true, true))), "session_expired");
  // Without a session a 404 is an ordinary error (a wrong URL).
  EXPECT_EQ(name(first(streamable_request, reply(404, "text/plain", 9))), "http_error");
  // The legacy endpoint's 404: its session is gone, whatever the Mcp-Session-Id state.
  EXPECT_EQ(name(first(legacy_request, reply(404, "text/plain", 9))), "endpoint_gone");
  EXPECT_EQ(name(first(legacy_notification, reply(404, {}, 0, true, true))), "endpoint_gone");
}

TEST(PostReplyPolicy, BadGatewayAndUnavailableFailTheTransport) {
  for (auto ctx : {streamable_request, streamable_notification, legacy_request}) {
    EXPECT_EQ(name(first(ctx, reply(502, "text/html", 10))), "server_down");
    EXPECT_EQ(name(first(ctx, reply(503, {}, 0, true, true))), "server_down");
  }
  EXPECT_EQ(name(first(streamable_request, reply(504, "text/html", 10))), "http_error");
  EXPECT_EQ(name(first(streamable_request, reply(500, "text/html", 10))), "http_error");
}

TEST(PostReplyPolicy, OtherStatusesAreErrorsWithTheBodysText) {
  for (auto ctx :
       {streamable_request, streamable_notification, legacy_request, legacy_notification}) {
    for (unsigned s : {100u, 199u, 400u, 401u, 403u, 405u, 406u, 409u, 413u, 415u, 429u, 500u})
      EXPECT_EQ(name(first(ctx, reply(s, "application/json", 30))), "http_error") << s;
  }
}

// ---- the token refresh ----------------------------------------------------------------------

TEST(PostReplyPolicy, UnauthorizedRefreshesTheTokenOnce) {
  for (unsigned s : {401u, 403u}) {
    for (auto ctx : {streamable_request, streamable_notification, legacy_request}) {
      ctx.reauthorize = true;
      post_reply_policy p(ctx);
      EXPECT_TRUE(p.auth_retry_left());
      EXPECT_EQ(name(p.on_reply(reply(s, "text/plain", 12))), "refresh_token") << s;
      EXPECT_FALSE(p.auth_retry_left());
      // The refreshed token was refused too, or the command gave the same one (the client asks
      // again): the error it is.
      EXPECT_EQ(name(p.on_reply(reply(s, "text/plain", 12))), "http_error") << s;
    }
  }
}

TEST(PostReplyPolicy, TheRefreshBudgetIsSharedByBothStatusesAndSurvivesOtherReplies) {
  post_reply_policy p({.request = true, .reauthorize = true});
  EXPECT_EQ(name(p.on_reply(reply(401, "text/plain", 12))), "refresh_token");
  EXPECT_EQ(name(p.on_reply(reply(403, "text/plain", 12))), "http_error");

  post_reply_policy q({.request = true, .reauthorize = true});
  EXPECT_EQ(name(q.on_reply(reply(500, "text/plain", 12))), "http_error");
  EXPECT_TRUE(q.auth_retry_left());
  EXPECT_EQ(name(q.on_reply(reply(403, "text/plain", 12))), "refresh_token");
}

TEST(PostReplyPolicy, WithoutATokenCommandUnauthorizedIsAnError) {
  post_reply_policy p(streamable_request);
  EXPECT_FALSE(p.auth_retry_left());
  EXPECT_EQ(name(p.on_reply(reply(401, "application/json", 30))), "http_error");
  EXPECT_EQ(name(p.on_reply(reply(403, "application/json", 30))), "http_error");
}

TEST(PostReplyPolicy, AfterAFailedRefreshA404WithASessionStillExpiresIt) {
  post_reply_policy p({.request = true, .reauthorize = true});
  EXPECT_EQ(name(p.on_reply(reply(401))), "refresh_token");
  EXPECT_EQ(name(p.on_reply(reply(404, {}, 0, true, true))), "session_expired");
  EXPECT_EQ(name(p.on_reply(json_reply())), "read_json");
}

// ---- broken exchanges -----------------------------------------------------------------------

TEST(PostReplyPolicy, AStaleKeptAliveConnectionIsRetriedOnceOnAFreshOne) {
  post_reply_policy p(streamable_request);
  EXPECT_EQ(name(p.on_io_error(true, false, false)), "resend");
  EXPECT_EQ(name(p.on_io_error(true, false, false)), "io_error");  // once only
  EXPECT_EQ(name(p.on_io_error(false, false, false)), "io_error");
}

TEST(PostReplyPolicy, ANewConnectionOrATimeoutIsNotResent) {
  post_reply_policy p(streamable_request);
  EXPECT_EQ(name(p.on_io_error(false, false, false)), "io_error");
  EXPECT_EQ(name(p.on_io_error(true, true, false)), "io_error");  // slow, not stale
  // Neither spent the budget.
  EXPECT_EQ(name(p.on_io_error(true, false, false)), "resend");
}

// Cut after it went out whole, a message may have run: the server's `retry` setting decides,
// upstream, whether it goes again.
TEST(PostReplyPolicy, AMessageWrittenInFullIsNotResent) {
  post_reply_policy p(streamable_request);
  EXPECT_EQ(name(p.on_io_error(true, false, true)), "io_error");
  EXPECT_EQ(name(p.on_io_error(true, false, false)), "resend");  // the budget was not spent
}

TEST(PostReplyPolicy, TheTwoBudgetsAreIndependent) {
  post_reply_policy p({.legacy = true, .request = false, .reauthorize = true});
  EXPECT_EQ(name(p.on_io_error(true, false, false)), "resend");
  EXPECT_EQ(name(p.on_reply(reply(403))), "refresh_token");
  EXPECT_EQ(name(p.on_io_error(true, false, false)), "io_error");
  EXPECT_EQ(name(p.on_reply(reply(403))), "http_error");
}

TEST(PostReplyPolicy, EveryStepHasAName) {
  for (int s = static_cast<int>(step::resend); s <= static_cast<int>(step::http_error); ++s)
    EXPECT_NE(name(static_cast<step>(s)), "?") << s;
}

}  // namespace
}  // namespace mcpmux
