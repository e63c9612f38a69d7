// In-process tests of the HTTP endpoint's limits, idle timers and shutdown: the endpoint with
// small options and a scripted core session on an io thread, raw HTTP clients on the test thread.
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <functional>
#include <future>
#include <memory>
#include <thread>

#include "tests/fixtures/raw_http_client.hpp"
#include "transports/http_endpoint.hpp"

namespace mcpmux::test {
namespace {

namespace asio = boost::asio;
using steady = std::chrono::steady_clock;

bool poll_until(const std::function<bool()>& pred, ms timeout) {
  const auto deadline = steady::now() + timeout;
  for (;;) {
    if (pred()) return true;
    if (steady::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
}

std::int64_t ms_since(steady::time_point t) {
  return std::chrono::duration_cast<ms>(steady::now() - t).count();
}

// The core side of one session (what mcpmux's session would be): answers at once, except
// "hold" and an initialize from client "hold" (kept until released) and "hold_sse" (a progress
// notification first, so the answer becomes an SSE stream, then kept). Used on the io thread
// only.
struct core_session final : transport_events {
  std::shared_ptr<transport> t;
  std::vector<json::value> held;  // ids of requests not answered yet
  bool closed = false;
  std::string reason;

  void on_message(std::string_view text) override {
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (ec || !v.is_object()) return;
    const auto& o = v.get_object();
    const auto* m = o.if_contains("method");
    const auto* id = o.if_contains("id");
    if (!m || !id) return;  // notifications, responses
    const auto method = m->as_string();
    const auto* client = v.find_pointer("/params/clientInfo/name", ec);
    const auto* token = v.find_pointer("/params/_meta/progressToken", ec);
    if (method == "hold" || (method == "initialize" && client && *client == "hold")) {
      held.push_back(*id);
    } else if (method == "hold_sse" && token) {
      json::object progress{{"jsonrpc", "2.0"},
                            {"method", "notifications/progress"},
                            {"params", {{"progressToken", *token}, {"progress", 1}}}};
      t->send(json::serialize(progress));
      held.push_back(*id);
    } else if (method == "initialize") {
      answer(*id, {{"protocolVersion", "2025-11-25"},
                   {"capabilities", json::object{}},
                   {"serverInfo", {{"name", "fake"}, {"version", "1"}}}});
    } else {
      answer(*id, json::object{});
    }
  }
  void on_oversize(std::size_t) override {}
  void on_closed(std::error_code, std::string r) override {
    closed = true;
    reason = std::move(r);
  }

  void answer(const json::value& id, json::value result) {
    t->send(json::serialize(
        json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}}));
  }
  void release_all() {
    for (auto& id : std::exchange(held, {})) answer(id, {{"released", true}});
  }
};

json::value rpc(std::int64_t id, std::string_view method, json::value params = nullptr) {
  json::object o{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) o["params"] = std::move(params);
  return o;
}

class endpoint_test : public ::testing::Test {
 protected:
  void start(http_endpoint_options o) {
    o.address = "127.0.0.1:0";
    auto started = start_http_endpoint(
        io_, std::move(o),
        [this](std::shared_ptr<transport> t, std::string_view, std::string_view) {
          auto s = std::make_shared<core_session>();
          s->t = t;
          t->start(*s);
          cores_.push_back(std::move(s));
        },
        [] { return std::string("{\"servers\":[]}"); }, {});
    ASSERT_TRUE(started) << started.error().message;
    ep_ = std::move(*started);
    port_ = ep_->port();
    thread_ = std::thread([this] { io_.run(); });
  }

  void TearDown() override {
    if (!thread_.joinable()) return;
    on_io([this] { ep_->close(); });
    EXPECT_TRUE(poll_until([this] { return !on_io([this] { return ep_->draining(); }); }, 10s));
    work_.reset();
    io_.stop();
    thread_.join();
  }

  // Runs `f` on the io thread and returns its result.
  template <class F>
  auto on_io(F f) -> decltype(f()) {
    auto task = std::make_shared<std::packaged_task<decltype(f())()>>(std::move(f));
    auto result = task->get_future();
    asio::post(io_, [task] { (*task)(); });
    return result.get();
  }

  // The core session of the n-th session created.
  bool core_closed(std::size_t n) {
    return on_io([&] { return cores_.at(n)->closed; });
  }
  std::string core_reason(std::size_t n) {
    return on_io([&] { return cores_.at(n)->reason; });
  }
  std::size_t core_count() {
    return on_io([&] { return cores_.size(); });
  }
  std::size_t held_total() {
    return on_io([&] {
      std::size_t n = 0;
      for (auto& c : cores_) n += c->held.size();
      return n;
    });
  }
  void release_all() {
    on_io([&] {
      for (auto& c : cores_) c->release_all();
    });
  }

  // One request on a fresh connection; the whole response.
  http_response exchange(std::string_view method, std::string_view target,
                         const header_list& headers, std::string_view body = {}) {
    http_conn c(port_);
    EXPECT_TRUE(c.ok());
    EXPECT_TRUE(c.send_all(request_text(method, target, port_, headers, body)));
    auto head = read_response(c);
    if (!head) ADD_FAILURE() << method << " " << target << ": no response";
    return head.value_or(http_response{});
  }

  // The next response on `c` (an SSE body split into events, read to its end).
  static std::optional<http_response> read_response(http_conn& c, ms timeout = 10s) {
    auto head = c.read_head(timeout);
    if (!head) return std::nullopt;
    if (head->header("content-type") == "text/event-stream") {
      while (auto ev = c.next_event(timeout)) head->events.push_back(*ev);
      EXPECT_TRUE(c.stream_ended()) << "SSE stream did not end";
    } else {
      head->body = c.read_body(timeout).value_or("");
    }
    return head;
  }

  header_list session_headers(const std::string& sid) {
    header_list h = mcp_headers;
    h.emplace_back("Mcp-Session-Id", sid);
    h.emplace_back("MCP-Protocol-Version", "2025-11-25");
    return h;
  }

  http_response post(const std::string& sid, const json::value& msg) {
    return exchange("POST", "/mcp", session_headers(sid), json::serialize(msg));
  }

  // Sends a POST on `c` without waiting for the answer.
  void send_post(http_conn& c, const std::string& sid, const json::value& msg) {
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.send_all(
        request_text("POST", "/mcp", port_, session_headers(sid), json::serialize(msg))));
  }

  // An initialize request; the core holds its answer when `client` is "hold".
  static json::value initialize_message(std::string_view client = "t") {
    return rpc(1, "initialize",
               {{"protocolVersion", "2025-11-25"},
                {"capabilities", json::object{}},
                {"clientInfo", {{"name", client}, {"version", "1"}}}});
  }

  http_response initialize() {
    return exchange("POST", "/mcp", mcp_headers, json::serialize(initialize_message()));
  }

  // initialize + notifications/initialized; the session id.
  std::string open_session() {
    auto r = initialize();
    EXPECT_EQ(r.status, 200) << r.body;
    const auto sid = r.header("mcp-session-id");
    EXPECT_EQ(sid.size(), 32u) << sid;
    auto n = post(sid, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
    EXPECT_EQ(n.status, 202);
    return sid;
  }

  // Opens the session's GET stream on `c` and reads its priming event.
  void open_get(http_conn& c, const std::string& sid) {
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.send_all(request_text("GET", "/mcp", port_, session_headers(sid), {})));
    auto head = c.read_head();
    ASSERT_TRUE(head);
    ASSERT_EQ(head->status, 200);
    ASSERT_EQ(head->header("content-type"), "text/event-stream");
    auto priming = c.next_event();
    ASSERT_TRUE(priming);
    EXPECT_TRUE(priming->data.empty());
  }

  // GET /status on `c` (keep-alive); its status code.
  int status_on(http_conn& c) {
    if (!c.send_all(request_text("GET", "/status", port_, {}, {}))) return 0;
    auto r = read_response(c, 5s);
    return r ? r->status : 0;
  }

  // A JSON-RPC error body without id, as the endpoint's refusals carry.
  static void expect_refusal_body(const http_response& r, std::string_view text) {
    EXPECT_EQ(r.header("content-type"), "application/json");
    auto v = r.json();
    ASSERT_TRUE(v.is_object()) << r.body;
    EXPECT_EQ(v.at("jsonrpc"), "2.0");
    EXPECT_TRUE(v.at("id").is_null()) << r.body;
    EXPECT_EQ(v.at_pointer("/error/code"), -32000) << r.body;
    EXPECT_NE(r.body.find(text), std::string::npos) << r.body;
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_ = asio::make_work_guard(io_);
  std::shared_ptr<http_endpoint> ep_;
  std::vector<std::shared_ptr<core_session>> cores_;  // io thread only
  unsigned short port_ = 0;
  std::thread thread_;
};

TEST_F(endpoint_test, OpenRequestLimitPerSession) {
  http_endpoint_options o;
  o.max_requests_per_session = 2;
  start(o);
  const auto a = open_session();
  const auto b = open_session();

  // The session's GET stream is not a request: it does not count against the limit.
  http_conn hg(port_);
  open_get(hg, a);
  http_conn h1(port_), h2(port_);
  send_post(h1, a, rpc(10, "hold"));
  send_post(h2, a, rpc(11, "hold"));
  ASSERT_TRUE(poll_until([&] { return held_total() == 2; }, 5s));

  // A third request in the same session: 429 with a JSON-RPC error, and no core call.
  auto refused = post(a, rpc(12, "ping"));
  EXPECT_EQ(refused.status, 429);
  expect_refusal_body(refused, "Too Many Requests");
  EXPECT_THAT(refused.body, ::testing::HasSubstr("more than 2 requests awaiting their answer"));
  // Notifications open no stream: still accepted.
  EXPECT_EQ(post(a, {{"jsonrpc", "2.0"},
                     {"method", "notifications/cancelled"},
                     {"params", {{"requestId", 99}}}})
                .status,
            202);
  // Another session is unaffected.
  auto other = post(b, rpc(2, "ping"));
  EXPECT_EQ(other.status, 200) << other.body;
  EXPECT_EQ(other.json().at("id"), 2);

  // Once the requests are answered, the session takes requests again.
  release_all();
  for (auto* c : {&h1, &h2}) {
    auto r = read_response(*c);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->json().at_pointer("/result/released"), true) << r->body;
  }
  auto again = post(a, rpc(13, "ping"));
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json().at("id"), 13);
}

TEST_F(endpoint_test, SessionLimit) {
  http_endpoint_options o;
  o.max_sessions = 2;
  start(o);
  const auto a = open_session();
  const auto b = open_session();

  auto refused = initialize();
  EXPECT_EQ(refused.status, 503);
  EXPECT_TRUE(refused.header("mcp-session-id").empty());
  expect_refusal_body(refused, "too many sessions");
  EXPECT_EQ(core_count(), 2u) << "no core session is started for a refused initialize";

  // The existing sessions are unaffected.
  EXPECT_EQ(post(a, rpc(2, "ping")).status, 200);
  EXPECT_EQ(post(b, rpc(2, "ping")).status, 200);

  // Ending one frees its slot.
  EXPECT_EQ(exchange("DELETE", "/mcp", session_headers(b)).status, 200);
  EXPECT_EQ(post(b, rpc(3, "ping")).status, 404);
  const auto c = open_session();
  EXPECT_NE(c, b);
  EXPECT_EQ(post(c, rpc(2, "ping")).status, 200);
  EXPECT_EQ(initialize().status, 503);

  // So does a session that mcpmux ends.
  on_io([&] { cores_.at(0)->t->close(); });
  EXPECT_EQ(post(a, rpc(3, "ping")).status, 404);
  EXPECT_EQ(open_session().size(), 32u);
}

TEST_F(endpoint_test, ConnectionLimit) {
  http_endpoint_options o;
  o.max_connections = 2;
  start(o);
  http_conn c1(port_), c2(port_);
  ASSERT_EQ(status_on(c1), 200);
  ASSERT_EQ(status_on(c2), 200);

  // A third connection gets a 503 with Retry-After and is closed.
  http_conn c3(port_);
  ASSERT_TRUE(c3.ok());
  c3.send_all(request_text("GET", "/status", port_, {}, {}));  // may race with the refusal
  auto refused = c3.read_head(5s);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(ascii_lower(refused->header("connection")), "close");
  EXPECT_EQ(refused->header("retry-after"), "1");
  refused->body = c3.read_body(5s).value_or("");
  expect_refusal_body(*refused, "too many connections");
  EXPECT_TRUE(c3.wait_closed(5s));

  // The connections already open keep working.
  EXPECT_EQ(status_on(c1), 200);
  EXPECT_EQ(status_on(c2), 200);

  // Once one closes, a new connection is served (the endpoint notices the close shortly).
  c2.close();
  std::optional<http_conn> c4;
  EXPECT_TRUE(poll_until(
      [&] {
        c4.emplace(port_);
        return status_on(*c4) == 200;
      },
      5s));
  EXPECT_EQ(status_on(c1), 200);
}

// Connections that never send a token cannot lock out a client that does: those that have not
// authenticated hold at most part of the slots and give theirs up to newcomers, oldest first,
// while an authenticated one keeps its own; and they get seconds, not a minute, for a request.
TEST_F(endpoint_test, SlowConnectionsWithoutATokenCannotLockOutAValidClient) {
  char path[] = "/tmp/mcpmux-token-XXXXXX";
  const int fd = ::mkstemp(path);  // mode 0600
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "s3cret-token\n", 13), 13);
  ::close(fd);
  http_endpoint_options o;
  o.max_connections = 8;
  o.token_file = path;
  o.unauthenticated_timeout = 1s;
  start(o);
  ::unlink(path);
  const header_list auth = {{"Authorization", "Bearer s3cret-token"}};
  auto status_with_token = [&](http_conn& c) {
    if (!c.send_all(request_text("GET", "/status", port_, auth, {}))) return 0;
    auto r = read_response(c, 5s);
    return r ? r->status : 0;
  };
  http_conn kept(port_);
  ASSERT_EQ(status_with_token(kept), 200);

  // 20 connections send half a request's header, then nothing.
  std::vector<std::unique_ptr<http_conn>> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(std::make_unique<http_conn>(port_));
    ASSERT_TRUE(slow.back()->send_all(
        "GET /status HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) + "\r\n"));
  }
  EXPECT_EQ(exchange("GET", "/status", auth).status, 200);
  EXPECT_EQ(status_with_token(kept), 200);
  const auto t0 = steady::now();
  for (auto& c : slow) EXPECT_TRUE(c->wait_closed(5s));
  EXPECT_LT(ms_since(t0), 3000);
  EXPECT_EQ(status_with_token(kept), 200);  // the authenticated connection stays
}

// Host, Origin, Authorization and Mcp-Session-Id may come once: a second one (which the checks,
// reading the first, would not see) is refused with 400 on /mcp, /status and the web side.
TEST_F(endpoint_test, ARepeatedHostOriginAuthorizationOrSessionIdIsRefused) {
  http_endpoint_options o;
  o.web = [](const web_request&) {
    web_response r;
    r.body = "the page";
    return r;
  };
  start(o);
  const std::string own = "127.0.0.1:" + std::to_string(port_);
  EXPECT_EQ(exchange("GET", "/", {}).status, 200);
  EXPECT_EQ(exchange("GET", "/status", {{"Origin", "http://" + own}}).status, 200);
  const std::vector<header_list> twice = {
      {{"Host", own}, {"Host", "evil.example"}},
      {{"Origin", "http://" + own}, {"Origin", "http://evil.example"}},
      {{"Authorization", "Bearer a"}, {"Authorization", "Bearer b"}},
      {{"Mcp-Session-Id", "a"}, {"Mcp-Session-Id", "b"}},
  };
  for (const auto& target : {"/", "/status", "/mcp"})
    for (const auto& h : twice) {
      auto headers = mcp_headers;
      headers.insert(headers.end(), h.begin(), h.end());
      auto r = exchange(target == std::string("/mcp") ? "POST" : "GET", target, headers,
                        target == std::string("/mcp") ? json::serialize(rpc(1, "ping")) : "");
      EXPECT_EQ(r.status, 400) << target << " " << h[0].first;
      expect_refusal_body(r, "more than one " + h[0].first);
    }
}

TEST_F(endpoint_test, IdleConnectionTimesOut) {
  http_endpoint_options o;
  o.idle_timeout = 300ms;
  start(o);

  // A keep-alive connection without a next request is closed after idle_timeout.
  http_conn c(port_);
  ASSERT_EQ(status_on(c), 200);
  const auto t0 = steady::now();
  EXPECT_TRUE(c.wait_closed(5s));
  EXPECT_GE(ms_since(t0), 200);

  // So is one that never finishes its request header.
  http_conn partial(port_);
  ASSERT_TRUE(partial.send_all("GET /status HTTP/1.1\r\nHost: 127.0.0.1"));
  EXPECT_TRUE(partial.wait_closed(5s));

  // A connection waiting for an answer is not idle: a request held for several idle timeouts
  // is still answered on it.
  const auto sid = open_session();
  http_conn h(port_);
  send_post(h, sid, rpc(5, "hold"));
  ASSERT_TRUE(poll_until([&] { return held_total() == 1; }, 5s));
  std::this_thread::sleep_for(1s);
  release_all();
  auto r = read_response(h);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->json().at("id"), 5);
}

TEST_F(endpoint_test, IdleSessionsAreSwept) {
  http_endpoint_options o;
  o.session_idle_timeout = 400ms;
  start(o);
  // Session A has a request in flight from its start: its initialize, which the core holds.
  const auto a_core = core_count();
  http_conn a_conn(port_);
  ASSERT_TRUE(a_conn.send_all(request_text("POST", "/mcp", port_, mcp_headers,
                                           json::serialize(initialize_message("hold")))));
  ASSERT_TRUE(poll_until([&] { return held_total() == 1; }, 5s));

  // Session B keeps a GET stream open. Should the sweep end B before its GET arrives (the test
  // thread stalled for a whole timeout), that GET gets 404: start B over.
  std::optional<http_conn> get;
  std::string b;
  std::size_t b_core = 0;
  for (int attempt = 0; attempt < 5 && !get; ++attempt) {
    b_core = core_count();
    auto init = initialize();
    ASSERT_EQ(init.status, 200);
    b = init.header("mcp-session-id");
    get.emplace(port_);
    ASSERT_TRUE(get->send_all(request_text("GET", "/mcp", port_, session_headers(b), {})));
    auto head = get->read_head();
    ASSERT_TRUE(head);
    if (head->status == 404) {
      get.reset();
      continue;
    }
    ASSERT_EQ(head->status, 200);
    ASSERT_TRUE(get->next_event());  // priming
  }
  ASSERT_TRUE(get);

  // Session C, opened last, sits idle: the sweep that ends it has seen A and B idle for longer.
  const auto c_core = core_count();
  auto init = initialize();
  ASSERT_EQ(init.status, 200);
  const auto c = init.header("mcp-session-id");
  ASSERT_TRUE(poll_until([&] { return core_closed(c_core); }, 5s));
  EXPECT_EQ(core_reason(c_core), "idle");
  auto gone = post(c, rpc(2, "ping"));
  EXPECT_EQ(gone.status, 404);
  EXPECT_NE(gone.body.find("Session not found"), std::string::npos) << gone.body;

  EXPECT_FALSE(core_closed(a_core)) << "a session with a request in flight is kept";
  EXPECT_FALSE(core_closed(b_core)) << "a session with an open GET stream is kept";
  EXPECT_FALSE(get->next_event(50ms));
  EXPECT_FALSE(get->stream_ended() || get->eof()) << "the GET stream was ended";
  EXPECT_EQ(post(b, rpc(2, "ping")).status, 200);

  // Once the request is answered and the stream closed, they go idle too.
  release_all();
  auto answered = read_response(a_conn);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
  const auto a = answered->header("mcp-session-id");
  EXPECT_EQ(a.size(), 32u);
  get->close();
  EXPECT_TRUE(poll_until([&] { return core_closed(a_core) && core_closed(b_core); }, 5s));
  EXPECT_EQ(core_reason(a_core), "idle");
  EXPECT_EQ(core_reason(b_core), "idle");
  EXPECT_EQ(post(a, rpc(3, "ping")).status, 404);
  EXPECT_EQ(post(b, rpc(3, "ping")).status, 404);
}

TEST_F(endpoint_test, CloseLetsResponsesInFlightFinish) {
  http_endpoint_options o;
  o.shutdown_grace = 10s;  // far beyond the wait below: the connections end on their own
  start(o);
  const auto sid = open_session();

  http_conn json_post(port_);  // a request in flight, answer due as JSON
  send_post(json_post, sid, rpc(1, "hold"));
  ASSERT_TRUE(poll_until([&] { return held_total() == 1; }, 5s));

  http_conn sse_post(port_);  // a request in flight whose answer is an SSE stream
  send_post(sse_post, sid, rpc(2, "hold_sse", {{"_meta", {{"progressToken", "p"}}}}));
  auto sse_head = sse_post.read_head();
  ASSERT_TRUE(sse_head);
  ASSERT_EQ(sse_head->header("content-type"), "text/event-stream");
  std::optional<sse_event> progress;
  while ((progress = sse_post.next_event(5s)) && progress->data.empty()) {
  }
  ASSERT_TRUE(progress);
  EXPECT_NE(progress->data.find("notifications/progress"), std::string::npos);

  http_conn get(port_);  // the session's GET stream
  open_get(get, sid);

  http_conn idle(port_);  // an idle keep-alive connection
  ASSERT_EQ(status_on(idle), 200);

  on_io([&] { ep_->close(); });

  // The JSON request gets its error answer, marked Connection: close, then the close.
  auto r = read_response(json_post, 5s);
  ASSERT_TRUE(r) << "no answer to the request in flight";
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(ascii_lower(r->header("connection")), "close");
  auto v = r->json();
  EXPECT_EQ(v.at("id"), 1) << r->body;
  EXPECT_EQ(v.at_pointer("/error/code"), -32000) << r->body;
  EXPECT_EQ(v.at_pointer("/error/message"), "Session terminated") << r->body;
  EXPECT_TRUE(json_post.wait_closed(5s));

  // The SSE request gets the error as its last event, then the last chunk.
  auto last = sse_post.next_event(5s);
  ASSERT_TRUE(last);
  auto e = json::parse(last->data);
  EXPECT_EQ(e.at("id"), 2) << last->data;
  EXPECT_EQ(e.at_pointer("/error/message"), "Session terminated") << last->data;
  EXPECT_FALSE(sse_post.next_event(5s));
  EXPECT_TRUE(sse_post.stream_ended()) << "the SSE stream was cut instead of ended";
  EXPECT_TRUE(sse_post.wait_closed(5s));

  // The GET stream ends with its last chunk.
  EXPECT_FALSE(get.next_event(5s));
  EXPECT_TRUE(get.stream_ended()) << "the GET stream was cut instead of ended";
  EXPECT_TRUE(get.wait_closed(5s));

  // The idle connection is closed.
  EXPECT_TRUE(idle.wait_closed(5s));

  EXPECT_TRUE(poll_until([&] { return !on_io([&] { return ep_->draining(); }); }, 5s));
  EXPECT_TRUE(core_closed(0));
  EXPECT_EQ(core_reason(0), "daemon stopping");
  http_conn late(port_);
  EXPECT_FALSE(late.ok()) << "still accepting after close()";
}

TEST_F(endpoint_test, CloseCutsBusyConnectionsAfterTheGrace) {
  http_endpoint_options o;
  o.shutdown_grace = 300ms;
  start(o);
  // A client stuck in the middle of its body: 100 bytes announced, 10 sent.
  http_conn stuck(port_);
  ASSERT_TRUE(stuck.send_all("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
                             "\r\nExpect: 100-continue\r\nContent-Type: application/json\r\n"
                             "Content-Length: 100\r\n\r\n"));
  auto cont = stuck.read_head(5s);  // the header was read: the endpoint now waits for the body
  ASSERT_TRUE(cont);
  ASSERT_EQ(cont->status, 100);
  ASSERT_TRUE(stuck.send_all("{\"jsonrpc\""));

  const auto t0 = steady::now();
  EXPECT_TRUE(on_io([&] {
    ep_->close();
    return ep_->draining();
  }));
  EXPECT_TRUE(poll_until([&] { return !on_io([&] { return ep_->draining(); }); }, 5s));
  EXPECT_GE(ms_since(t0), 250);
  EXPECT_TRUE(stuck.wait_closed(5s));
}

}  // namespace
}  // namespace mcpmux::test
