// Loopback tests of transports/http_transport: Streamable HTTP, legacy HTTP+SSE, auth, TLS.
#include "transports/http_transport.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <optional>
#include <thread>

#include "base/log.hpp"
#include "core/rpc_peer.hpp"
#include "protocol/error.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/param_headers.hpp"
#include "tests/fixtures/http_test_server.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using test::http_exchange;
using test::http_test_server;
using ::testing::HasSubstr;

// What the transport reports, plus an optional hook to answer server→client requests.
struct recorder final : transport_events {
  std::vector<std::string> messages;
  std::vector<std::size_t> oversize;
  bool closed = false;
  std::string reason;
  std::function<void(const json::object&)> hook;

  void on_message(std::string_view text) override {
    messages.emplace_back(text);
    if (!hook) return;
    boost::system::error_code ec;
    auto v = json::parse(text, ec);
    if (!ec && v.is_object()) hook(v.as_object());
  }
  void on_oversize(std::size_t bytes) override { oversize.push_back(bytes); }
  void on_closed(std::error_code, std::string r) override {
    EXPECT_FALSE(closed) << "on_closed fired twice";
    closed = true;
    reason = std::move(r);
  }

  // The message answering request `id`, if it came.
  std::optional<json::object> answer(std::int64_t id) const {
    for (const auto& m : messages) {
      boost::system::error_code ec;
      auto v = json::parse(m, ec);
      if (ec || !v.is_object()) continue;
      const auto& o = v.as_object();
      const auto* i = o.if_contains("id");
      if (i && i->is_int64() && i->as_int64() == id && !o.contains("method")) return o;
    }
    return std::nullopt;
  }
  std::size_t count_method(std::string_view method) const {
    std::size_t n = 0;
    for (const auto& m : messages)
      n += m.find("\"method\":\"" + std::string(method) + "\"") != std::string::npos;
    return n;
  }
};

std::string error_message(const json::object& o) {
  const auto* e = o.if_contains("error");
  if (!e || !e->is_object()) return {};
  return std::string(e->as_object().at("message").as_string());
}
std::int64_t error_code_of(const json::object& o) {
  return o.at("error").as_object().at("code").to_number<std::int64_t>();
}

json::object body_of(const http_exchange& ex) {
  boost::system::error_code ec;
  auto v = json::parse(ex.request().body, ec);
  return !ec && v.is_object() ? v.as_object() : json::object{};
}

std::string result_for(const json::value& id, std::string_view text = "ok") {
  return make_result(id, json::object{{"text", text}});
}

std::string call(std::int64_t id, std::string_view method = "tools/call") {
  return make_request(json::value(id), method, json::object{});
}

// Sends `text` as core does: with what it is (outgoing_info, as rpc_peer describes what it
// builds) and, for a tools/call, the Mcp-Param-* `fields` the upstream worked out. Text that is
// not a request or notification goes as a response.
std::error_code send_to(transport& t, std::string text,
                        std::vector<std::pair<std::string, std::string>> fields = {}) {
  boost::system::error_code ec;
  const auto v = json::parse(text, ec);
  const auto* o = ec ? nullptr : v.if_object();
  const auto* method = o ? o->if_contains("method") : nullptr;
  if (!method) return t.send(std::move(text));
  const auto* params = o->if_contains("params");
  const json::value none;
  if (const auto* id = o->if_contains("id"))
    return t.send_described(std::move(text), describe_request(id->as_int64(), method->as_string(),
                                                              params ? *params : none, fields));
  auto info = describe_notification(method->as_string());
  if (params && info.method == "notifications/cancelled")
    info.cancels = params->at("requestId").as_int64();
  return t.send_described(std::move(text), std::move(info));
}

class HttpTransport : public ::testing::Test {
 protected:
  void SetUp() override {
    set_log_sink(
        [this](log_level, std::string_view, std::string_view msg) { logs.emplace_back(msg); });
    set_log_level(log_level::trace);
  }
  void TearDown() override {
    if (t) t->close();
    run_for(50ms);
    t.reset();
    set_log_sink(nullptr);
    set_log_level(log_level::info);
  }

  http_transport_options options(const http_test_server& s, std::string_view path = "/mcp") {
    http_transport_options o;
    o.url = s.url(path);
    o.server_name = "test";
    o.timeout = 3000ms;
    return o;
  }
  void open(http_transport_options o) {
    t = make_http_transport(io, std::move(o));
    t->start(ev);
  }
  template <class Pred>
  bool run_until(Pred p, std::chrono::milliseconds limit = 8s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!p()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      if (io.stopped()) io.restart();
      if (io.run_one_for(10ms) == 0) std::this_thread::sleep_for(1ms);
    }
    return true;
  }
  void run_for(std::chrono::milliseconds d) {
    run_until([] { return false; }, d);
  }
  bool logs_contain(std::string_view s) const {
    for (const auto& l : logs)
      if (l.find(s) != std::string::npos) return true;
    return false;
  }

  asio::io_context io;
  recorder ev;
  std::shared_ptr<transport> t;
  std::vector<std::string> logs;
};

TEST_F(HttpTransport, JsonReplyAndRequestHeaders) {
  http_test_server s([](http_exchange& ex) {
    auto b = body_of(ex);
    if (!b.contains("id")) return ex.respond(202, "", "");
    ex.respond(200, result_for(b.at("id")));
  });
  auto o = options(s);
  o.headers["X-Api-Key"] = "very-secret-value";
  open(o);
  ASSERT_FALSE(send_to(*t, make_notification("notifications/hello", json::object{})));
  ASSERT_FALSE(send_to(*t, call(1)));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  EXPECT_EQ(ev.answer(1)->at("result").as_object().at("text").as_string(), "ok");
  EXPECT_EQ(ev.messages.size(), 1u);  // the 202 delivers nothing
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 2u);
  // The notification is a barrier: it reached the server first.
  EXPECT_THAT(reqs[0].body, HasSubstr("notifications/hello"));
  for (const auto& r : reqs) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/mcp");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_THAT(r.header("accept"), HasSubstr("application/json"));
    EXPECT_THAT(r.header("accept"), HasSubstr("text/event-stream"));
    EXPECT_EQ(r.header("x-api-key"), "very-secret-value");
    EXPECT_EQ(r.header("mcp-session-id"), "");
  }
  EXPECT_FALSE(ev.closed);
  EXPECT_FALSE(logs_contain("very-secret-value"));
}

TEST_F(HttpTransport, SseReplyWithNotificationAndServerRequest) {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<std::string> roots_answer;
  http_test_server s([&](http_exchange& ex) {
    auto b = body_of(ex);
    if (!b.contains("method")) {  // the client's answer to our roots/list
      {
        std::lock_guard lock(mu);
        roots_answer = ex.request().body;
      }
      cv.notify_all();
      return ex.respond(202, "", "");
    }
    ex.begin_sse();
    ex.event(make_notification("notifications/progress", json::object{{"progress", 1}}));
    ex.event(make_request(json::value("srv-1"), "roots/list", json::object{}));
    {
      std::unique_lock lock(mu);
      cv.wait_for(lock, 5s, [&] { return roots_answer.has_value(); });
    }
    ex.event(result_for(b.at("id"), "done"));
    ex.event(make_notification("notifications/after", json::object{}));  // drained after the answer
    ex.end_sse();
  });
  open(options(s));
  ev.hook = [&](const json::object& o) {
    if (o.contains("method") && o.contains("id"))
      send_to(*t, make_result(o.at("id"), json::object{{"roots", json::array{}}}));
  };
  ASSERT_FALSE(send_to(*t, call(5)));
  ASSERT_TRUE(run_until([&] { return ev.count_method("notifications/after") == 1; }));
  ASSERT_EQ(ev.messages.size(), 4u);
  EXPECT_THAT(ev.messages[0], HasSubstr("notifications/progress"));
  EXPECT_THAT(ev.messages[1], HasSubstr("roots/list"));
  ASSERT_TRUE(ev.answer(5));
  EXPECT_EQ(ev.answer(5)->at("result").as_object().at("text").as_string(), "done");
  std::lock_guard lock(mu);
  ASSERT_TRUE(roots_answer);
  EXPECT_THAT(*roots_answer, HasSubstr("\"srv-1\""));
  EXPECT_THAT(*roots_answer, HasSubstr("roots"));
}

TEST_F(HttpTransport, SessionIdProtocolVersionGet405AndExpiry) {
  std::atomic<int> posts{0};
  http_test_server s([&](http_exchange& ex) {
    if (ex.request().method == "GET") return ex.respond(405, "", "");
    auto b = body_of(ex);
    const int n = ++posts;
    if (n == 1)
      return ex.respond(200, result_for(b.at("id")), "application/json",
                        {{"Mcp-Session-Id", "sess-42"}});
    if (n == 2) return ex.respond(200, result_for(b.at("id")));
    ex.respond(404, "unknown session", "text/plain");
  });
  open(options(s));
  send_to(*t, call(1, "initialize"));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  bool done = false;
  t->on_initialized("2025-11-25", 2000ms, [&] { done = true; });
  ASSERT_TRUE(run_until([&] { return done; }));
  EXPECT_EQ(s.count("GET"), 1u);
  send_to(*t, call(2));
  ASSERT_TRUE(run_until([&] { return ev.answer(2).has_value(); }));
  send_to(*t, call(3));
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_EQ(ev.reason, "session expired (HTTP 404)");
  EXPECT_FALSE(ev.answer(3));
  EXPECT_EQ(send_to(*t, call(4)), make_error_code(errc::transport_closed));
  auto reqs = s.requests();
  ASSERT_GE(reqs.size(), 4u);
  EXPECT_EQ(reqs[0].header("mcp-session-id"), "");
  EXPECT_EQ(reqs[0].header("mcp-protocol-version"), "");
  EXPECT_EQ(reqs[1].method, "GET");
  EXPECT_EQ(reqs[1].header("mcp-session-id"), "sess-42");
  EXPECT_EQ(reqs[1].header("accept"), "text/event-stream");
  EXPECT_EQ(reqs[2].header("mcp-session-id"), "sess-42");
  EXPECT_EQ(reqs[2].header("mcp-protocol-version"), "2025-11-25");
}

TEST_F(HttpTransport, GetListenerDeliversNotificationsAndCloseSendsDelete) {
  http_test_server s([&](http_exchange& ex) {
    const auto& m = ex.request().method;
    if (m == "DELETE") return ex.respond(200, "", "");
    if (m == "GET") {
      ex.begin_sse();
      ex.event(make_notification("notifications/tools/list_changed", json::object{}));
      return ex.hold(10s);
    }
    auto b = body_of(ex);
    ex.respond(200, result_for(b.at("id")), "application/json", {{"Mcp-Session-Id", "s1"}});
  });
  open(options(s));
  send_to(*t, call(1, "initialize"));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  bool done = false;
  t->on_initialized("2025-06-18", 2000ms, [&] { done = true; });
  ASSERT_TRUE(
      run_until([&] { return done && ev.count_method("notifications/tools/list_changed") == 1; }));
  t->close();
  const auto before = ev.messages.size();
  ASSERT_TRUE(run_until([&] { return s.count("DELETE") == 1; }));
  EXPECT_EQ(s.requests().back().header("mcp-session-id"), "s1");
  run_for(50ms);
  EXPECT_EQ(ev.messages.size(), before);
  EXPECT_FALSE(ev.closed);  // no event after close()
}

TEST_F(HttpTransport, EstablishedListenerEndingClosesTransport) {
  http_test_server s([&](http_exchange& ex) {
    if (ex.request().method == "GET") {
      ex.begin_sse();
      ex.event(make_notification("notifications/message", json::object{}));
      return ex.end_sse();
    }
    ex.respond(200, result_for(body_of(ex).at("id")), "application/json",
               {{"Mcp-Session-Id", "s1"}});
  });
  open(options(s));
  send_to(*t, call(1, "initialize"));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  bool done = false;
  t->on_initialized("2025-06-18", 0ms, [&] { done = true; });
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_TRUE(done);
  EXPECT_EQ(ev.count_method("notifications/message"), 1u);
  EXPECT_THAT(ev.reason, HasSubstr("SSE listener stream ended"));
}

TEST_F(HttpTransport, ListenerThatNeverAnswersIsGivenUpAfterMaxWait) {
  http_test_server s([&](http_exchange& ex) {
    if (ex.request().method == "GET") return ex.hold(5s);
    ex.respond(200, result_for(body_of(ex).at("id")));
  });
  open(options(s));
  bool done = false;
  const auto start = std::chrono::steady_clock::now();
  t->on_initialized("2025-06-18", 200ms, [&] { done = true; });
  ASSERT_TRUE(run_until([&] { return done; }, 3s));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  EXPECT_FALSE(ev.closed);
}

TEST_F(HttpTransport, PostStreamCutBeforeAnswerIsResumedWithLastEventId) {
  std::atomic<int> gets{0};
  http_test_server s([&](http_exchange& ex) {
    if (ex.request().method == "GET") {
      ++gets;
      if (ex.request().header("last-event-id") != "e2") return ex.respond(405, "", "");
      ex.begin_sse();
      ex.event(result_for(json::value(9), "resumed"), "e3");
      return ex.end_sse();
    }
    ex.begin_sse();
    ex.raw("retry: 50\nid: e1\ndata:\n\n");  // priming event
    ex.event(make_notification("notifications/progress", json::object{}), "e2");
    ex.cut();
  });
  open(options(s));
  send_to(*t, call(9));
  ASSERT_TRUE(run_until([&] { return ev.answer(9).has_value(); }));
  EXPECT_EQ(ev.answer(9)->at("result").as_object().at("text").as_string(), "resumed");
  EXPECT_EQ(gets.load(), 1);
  EXPECT_EQ(ev.count_method("notifications/progress"), 1u);
  EXPECT_FALSE(ev.closed);
}

TEST_F(HttpTransport, ListenerCutAfterEventIdIsResumed) {
  std::atomic<int> gets{0};
  http_test_server s([&](http_exchange& ex) {
    if (ex.request().method == "GET") {
      const int n = ++gets;
      ex.begin_sse();
      if (n == 1) {
        ex.raw("retry: 20\n\n");
        ex.event(make_notification("notifications/first", json::object{}), "L1");
        return ex.cut();
      }
      if (ex.request().header("last-event-id") == "L1")
        ex.event(make_notification("notifications/second", json::object{}), "L2");
      return ex.hold(5s);
    }
    ex.respond(200, result_for(body_of(ex).at("id")), "application/json",
               {{"Mcp-Session-Id", "s1"}});
  });
  open(options(s));
  send_to(*t, call(1, "initialize"));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  bool done = false;
  t->on_initialized("2025-11-25", 2000ms, [&] { done = true; });
  ASSERT_TRUE(run_until([&] { return ev.count_method("notifications/second") == 1; }));
  EXPECT_TRUE(done);
  EXPECT_EQ(ev.count_method("notifications/first"), 1u);
  EXPECT_EQ(gets.load(), 2);
  EXPECT_FALSE(ev.closed);
}

TEST_F(HttpTransport, SendFailsWhenTheQueueIsFull) {
  http_test_server s([&](http_exchange& ex) {
    ex.begin_sse();
    ex.hold(3s);
  });
  auto o = options(s, "/sse");
  o.type = http_transport_options::kind::legacy_sse;
  o.limits.max_queue_bytes = 100;
  open(o);
  EXPECT_FALSE(send_to(*t, call(1)));
  EXPECT_EQ(send_to(*t, std::string(100, ' ')), make_error_code(errc::queue_full));
}

// ---- the 2026-07-28 era: stateless requests with the era's headers ---------------------------

std::string modern_call(std::int64_t id, std::string_view method, json::object params) {
  params["_meta"] = json::object{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                                 {"io.modelcontextprotocol/clientCapabilities", json::object{}}};
  return make_request(json::value(id), method, params);
}

TEST_F(HttpTransport, ModernRequestsCarryTheEraHeadersAndNoSession) {
  http_test_server s([](http_exchange& ex) {
    auto b = body_of(ex);
    // A session id offered by a confused server must not be taken up.
    ex.respond(200, result_for(b.at("id")), "application/json", {{"Mcp-Session-Id", "sess-x"}});
  });
  open(options(s));
  // The tool mirrors two arguments into headers (x-mcp-header).
  auto headers = std::make_shared<mcp::tool_param_headers>();
  headers->tools["deploy"] = *mcp::param_headers(json::parse(R"({"type":"object","properties":{
        "region":{"type":"string","x-mcp-header":"Region"},
        "count":{"type":"integer","x-mcp-header":"Count"}}})")
                                                     .as_object());
  const json::object args{{"region", "eu west"}, {"count", 3}};
  send_to(*t, modern_call(1, "tools/call", {{"name", "deploy"}, {"arguments", args}}),
          mcp::param_header_fields(headers->tools["deploy"], args));
  send_to(*t, modern_call(2, "resources/read", {{"uri", "file:///ä.txt"}}));
  send_to(*t, modern_call(3, "tools/list", {}));
  ASSERT_TRUE(run_until([&] { return ev.answer(1) && ev.answer(2) && ev.answer(3); }));
  // A legacy request on the same transport: no era headers, and no session either (the modern
  // replies' Mcp-Session-Id was not taken up).
  send_to(*t, call(4));
  ASSERT_TRUE(run_until([&] { return ev.answer(4).has_value(); }));
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 4u);
  std::map<std::int64_t, test::recorded_request> by_id;
  for (auto& r : reqs) by_id[json::parse(r.body).as_object().at("id").as_int64()] = r;
  for (std::int64_t id : {1, 2, 3}) {
    EXPECT_EQ(by_id[id].header("mcp-protocol-version"), "2026-07-28") << id;
    EXPECT_EQ(by_id[id].header("mcp-session-id"), "") << id;
  }
  EXPECT_EQ(by_id[1].header("mcp-method"), "tools/call");
  EXPECT_EQ(by_id[1].header("mcp-name"), "deploy");
  EXPECT_EQ(by_id[1].header("mcp-param-region"), "eu west");
  EXPECT_EQ(by_id[1].header("mcp-param-count"), "3");
  EXPECT_EQ(by_id[2].header("mcp-method"), "resources/read");
  EXPECT_EQ(by_id[2].header("mcp-name"), mcp::encode_header_value("file:///ä.txt"));
  EXPECT_THAT(by_id[2].header("mcp-name"), ::testing::StartsWith("=?base64?"));
  EXPECT_EQ(by_id[3].header("mcp-method"), "tools/list");
  EXPECT_EQ(by_id[3].header("mcp-name"), "");
  EXPECT_EQ(by_id[4].header("mcp-method"), "");
  EXPECT_EQ(by_id[4].header("mcp-protocol-version"), "");
  EXPECT_EQ(by_id[4].header("mcp-session-id"), "");
}

TEST_F(HttpTransport, ModernErrorStatusWithJsonRpcBodyIsTheAnswer) {
  http_test_server s([](http_exchange& ex) {
    auto b = body_of(ex);
    const auto id = b.at("id");
    if (id == 1)
      return ex.respond(400, make_error(id, -32022, "Unsupported protocol version",
                                        &(const json::value&)json::value(json::object{
                                            {"supported", json::array{"2026-07-28"}}})));
    if (id == 2) return ex.respond(404, make_error(id, -32601, "Method not found"));
    ex.respond(400, "not json", "text/plain");
  });
  open(options(s));
  send_to(*t, modern_call(1, "server/discover", {}));
  send_to(*t, modern_call(2, "nope/nope", {}));
  send_to(*t, modern_call(3, "tools/list", {}));
  ASSERT_TRUE(run_until([&] { return ev.answer(1) && ev.answer(2) && ev.answer(3); }));
  EXPECT_EQ(error_code_of(*ev.answer(1)), -32022);
  EXPECT_EQ(ev.answer(1)->at("error").as_object().at("data").as_object().at("supported"),
            json::array{"2026-07-28"});
  EXPECT_EQ(error_code_of(*ev.answer(2)), -32601);  // a modern 404 is no session expiry
  EXPECT_THAT(error_message(*ev.answer(3)), HasSubstr("HTTP 400"));
  EXPECT_FALSE(ev.closed);
}

TEST_F(HttpTransport, CancellingAModernRequestClosesItsStreamWithoutAPost) {
  std::atomic<bool> stream_closed{false};
  http_test_server s([&](http_exchange& ex) {
    auto b = body_of(ex);
    if (!b.contains("id")) return ex.respond(202, "", "");
    if (b.at("id") == 1) {  // a long call: progress, then silence until the client leaves
      ex.begin_sse();
      ex.event(make_notification("notifications/progress", json::object{{"progress", 1}}));
      ex.hold(5s);
      stream_closed = true;
      return;
    }
    ex.respond(200, result_for(b.at("id")));
  });
  open(options(s));
  send_to(*t, modern_call(1, "tools/call", {{"name", "slow"}}));
  ASSERT_TRUE(run_until([&] { return ev.count_method("notifications/progress") == 1; }));
  send_to(*t, make_notification("notifications/cancelled", json::object{{"requestId", 1}}));
  ASSERT_TRUE(run_until([&] { return stream_closed.load(); }, 3s));
  send_to(*t, modern_call(2, "tools/list", {}));  // the transport goes on
  ASSERT_TRUE(run_until([&] { return ev.answer(2).has_value(); }));
  EXPECT_FALSE(ev.answer(1));  // nothing for the cancelled request
  EXPECT_FALSE(ev.closed);
  EXPECT_EQ(s.count("POST"), 2u);  // no notifications/cancelled was posted
}

TEST_F(HttpTransport, ModernListenStreamOutlivesTheTimeoutAndIsNotResumed) {
  http_test_server s([&](http_exchange& ex) {
    auto b = body_of(ex);
    if (b.at("method") == "subscriptions/listen") {
      ex.begin_sse();
      ex.event(make_notification("notifications/subscriptions/acknowledged", json::object{}),
               "ev-1");
      std::this_thread::sleep_for(700ms);  // quieter than the client's timeout
      ex.event(make_notification("notifications/tools/list_changed", json::object{}), "ev-2");
      return ex.cut();
    }
    ex.respond(200, result_for(b.at("id")));
  });
  auto o = options(s);
  o.timeout = 300ms;
  o.max_connections = 1;
  open(o);
  send_to(*t, modern_call(1, "subscriptions/listen", {}));
  // The open stream does not take the pool's only connection from other requests.
  send_to(*t, modern_call(2, "tools/list", {}));
  ASSERT_TRUE(run_until([&] { return ev.answer(2).has_value(); }));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  EXPECT_EQ(ev.count_method("notifications/tools/list_changed"), 1u);
  EXPECT_THAT(error_message(*ev.answer(1)), HasSubstr("No response received"));
  EXPECT_EQ(s.count("GET"), 0u);  // no Last-Event-ID resumption in this era
  EXPECT_FALSE(ev.closed);
}

TEST_F(HttpTransport, SseEndingWithoutAnswerFailsTheRequest) {
  http_test_server s([&](http_exchange& ex) {
    ex.begin_sse();
    ex.event(make_notification("notifications/progress", json::object{}));
    ex.end_sse();
  });
  open(options(s));
  send_to(*t, call(7));
  ASSERT_TRUE(run_until([&] { return ev.answer(7).has_value(); }));
  EXPECT_EQ(error_message(*ev.answer(7)), "No response received for request ID 7");
  EXPECT_EQ(error_code_of(*ev.answer(7)), -32000);
  EXPECT_FALSE(ev.closed);
}

TEST_F(HttpTransport, TokenCommandRefreshedOnceOn401) {
  const auto dir = test::make_temp_dir();
  const auto file = dir + "/token";
  std::ofstream(file) << "t1\n";
  http_test_server s([&](http_exchange& ex) {
    const auto auth = ex.request().header("authorization");
    if (auth == "Bearer t1") {
      std::ofstream(file) << "  t2  \n";
      return ex.respond(401, "expired", "text/plain", {{"WWW-Authenticate", "Bearer realm=\"x\""}});
    }
    if (auth == "Bearer t2") return ex.respond(200, result_for(body_of(ex).at("id"), "authed"));
    ex.respond(403, "no token", "text/plain");
  });
  auto o = options(s);
  o.bearer = make_command_bearer(io, "cat '" + file + "'", o.timeout);
  open(o);
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  EXPECT_EQ(ev.answer(1)->at("result").as_object().at("text").as_string(), "authed");
  auto reqs = s.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].header("authorization"), "Bearer t1");
  EXPECT_EQ(reqs[1].header("authorization"), "Bearer t2");
  EXPECT_FALSE(logs_contain("t1"));
  EXPECT_FALSE(logs_contain("t2"));
}

TEST_F(HttpTransport, UnchangedTokenGives401ErrorWithHints) {
  const auto dir = test::make_temp_dir();
  const auto file = dir + "/token";
  std::ofstream(file) << "same";
  http_test_server s([&](http_exchange& ex) {
    ex.respond(401, "bad token", "text/plain",
               {{"WWW-Authenticate", "Bearer error=\"invalid_token\""},
                {"Mcp-Auth-Server", "https://auth.example"}});
  });
  auto o = options(s);
  o.bearer = make_command_bearer(io, "cat '" + file + "'", o.timeout);
  open(o);
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  const auto msg = error_message(*ev.answer(1));
  EXPECT_THAT(msg, HasSubstr("HTTP 401: bad token"));
  EXPECT_THAT(msg, HasSubstr("invalid_token"));
  EXPECT_THAT(msg, HasSubstr("https://auth.example"));
  EXPECT_THAT(msg, HasSubstr("the server refused the token from token_command"));
  EXPECT_EQ(s.count("POST"), 1u);
}

TEST_F(HttpTransport, FailingTokenCommandClosesTransport) {
  http_test_server s([&](http_exchange& ex) { ex.respond(200, result_for(body_of(ex).at("id"))); });
  auto o = options(s);
  o.bearer = make_command_bearer(io, "exit 3", o.timeout);
  open(o);
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_THAT(ev.reason, HasSubstr("token_command exited with code 3"));
  EXPECT_EQ(s.count("POST"), 0u);
}

TEST_F(HttpTransport, SlowReplyHitsTheTimeout) {
  http_test_server s([&](http_exchange& ex) {
    ex.hold(2s);
    ex.respond(200, result_for(body_of(ex).at("id")));
  });
  auto o = options(s);
  o.timeout = 200ms;
  open(o);
  const auto start = std::chrono::steady_clock::now();
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1500ms);
  EXPECT_THAT(error_message(*ev.answer(1)), HasSubstr("timed out"));
  EXPECT_FALSE(ev.closed);
}

TEST_F(HttpTransport, MalformedJsonIsAParseError) {
  http_test_server s(
      [&](http_exchange& ex) { ex.respond(200, "{\"jsonrpc\":\"2.0\",", "application/json"); });
  open(options(s));
  send_to(*t, call(3));
  ASSERT_TRUE(run_until([&] { return ev.answer(3).has_value(); }));
  EXPECT_EQ(error_code_of(*ev.answer(3)), -32700);
}

TEST_F(HttpTransport, BodyOverTheCapIsAnError) {
  http_test_server s([&](http_exchange& ex) {
    ex.respond(200, result_for(body_of(ex).at("id"), std::string(5000, 'x')),
               "application/json; charset=utf-8");
  });
  auto o = options(s);
  o.limits.max_message_bytes = 1000;
  open(o);
  send_to(*t, call(4));
  ASSERT_TRUE(run_until([&] { return ev.answer(4).has_value(); }));
  EXPECT_THAT(error_message(*ev.answer(4)), HasSubstr("max_message_bytes"));
  // An SSE event over the cap is reported as oversize.
}

TEST_F(HttpTransport, OversizeSseEventIsReported) {
  http_test_server s([&](http_exchange& ex) {
    auto id = body_of(ex).at("id");
    ex.begin_sse();
    ex.event(make_notification("notifications/big", json::object{{"x", std::string(5000, 'x')}}));
    ex.event(result_for(id));
    ex.end_sse();
  });
  auto o = options(s);
  o.limits.max_message_bytes = 1000;
  open(o);
  send_to(*t, call(4));
  ASSERT_TRUE(run_until([&] { return ev.answer(4).has_value(); }));
  ASSERT_EQ(ev.oversize.size(), 1u);
  EXPECT_GT(ev.oversize[0], 1000u);
  EXPECT_EQ(ev.messages.size(), 1u);
}

TEST_F(HttpTransport, HttpErrorStatusBecomesErrorResponse) {
  http_test_server s(
      [&](http_exchange& ex) { ex.respond(500, "boom: " + std::string(1000, 'y'), "text/plain"); });
  open(options(s));
  send_to(*t, call(8));
  ASSERT_TRUE(run_until([&] { return ev.answer(8).has_value(); }));
  const auto msg = error_message(*ev.answer(8));
  EXPECT_THAT(msg, HasSubstr("HTTP 500: boom: yyy"));
  EXPECT_LT(msg.size(), 300u);
  EXPECT_EQ(error_code_of(*ev.answer(8)), -32000);
}

TEST_F(HttpTransport, RedirectOnPostIsRefused) {
  http_test_server s([&](http_exchange& ex) {
    ex.respond(307, "", "", {{"Location", "http://elsewhere/"}});
  });
  open(options(s));
  send_to(*t, call(2));
  ASSERT_TRUE(run_until([&] { return ev.answer(2).has_value(); }));
  EXPECT_THAT(error_message(*ev.answer(2)), HasSubstr("redirect"));
  EXPECT_EQ(s.count("POST"), 1u);
}

TEST_F(HttpTransport, ServiceUnavailableClosesTransport) {
  http_test_server s([&](http_exchange& ex) { ex.respond(503, "later", "text/plain"); });
  open(options(s));
  send_to(*t, call(2));
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_THAT(ev.reason, HasSubstr("503"));
}

TEST_F(HttpTransport, ConnectionRefusedClosesTransport) {
  unsigned short port = 0;
  {
    http_test_server s([](http_exchange&) {});
    port = s.port();
  }
  http_transport_options o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/mcp";
  open(o);
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_THAT(ev.reason, HasSubstr("cannot connect"));
}

TEST_F(HttpTransport, ConcurrentPostsDoNotSerialise) {
  std::atomic<int> inside{0};
  std::atomic<int> peak{0};
  http_test_server s([&](http_exchange& ex) {
    const int now = ++inside;
    int p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
    ex.hold(300ms);
    --inside;
    ex.respond(200, result_for(body_of(ex).at("id")));
  });
  open(options(s));
  for (int i = 1; i <= 3; ++i) send_to(*t, call(i));
  ASSERT_TRUE(run_until([&] { return ev.answer(1) && ev.answer(2) && ev.answer(3); }));
  EXPECT_GE(peak.load(), 2);
  // Keep-alive: a later request reuses a pooled connection rather than failing.
  send_to(*t, call(4));
  ASSERT_TRUE(run_until([&] { return ev.answer(4).has_value(); }));
}

// A server that closes connections idle for 1 s (Node's close theirs after 5 s): rounds of three
// calls at once, spaced around that, all succeed. Between rounds the pool holds three
// connections, which the server closes after the longer gaps: each is checked for a pending close
// before reuse, so none is written to and no call is cut.
TEST_F(HttpTransport, CallsSpacedAroundTheServersIdleCloseAllSucceed) {
  http_test_server s([&](http_exchange& ex) {
    ex.hold(50ms);  // the calls of a round overlap: three connections
    ex.respond(200, result_for(body_of(ex).at("id")));
  });
  s.close_idle_after(1000ms);
  open(options(s));
  std::int64_t id = 0;
  auto round = [&] {
    for (int i = 0; i < 3; ++i) send_to(*t, call(++id));
    const auto last = id;
    const bool answered = run_until([&] {
      return ev.closed || (ev.answer(last - 2) && ev.answer(last - 1) && ev.answer(last));
    });
    for (auto k = last - 2; k <= last; ++k)
      EXPECT_TRUE(answered && ev.answer(k) && ev.answer(k)->contains("result")) << "call " << k;
  };
  for (auto gap : {800ms, 900ms, 1100ms, 1200ms, 1500ms}) {
    round();
    run_for(gap);
  }
  round();
  EXPECT_FALSE(ev.closed) << ev.reason;
  EXPECT_GT(s.connections(), 3u);  // the closed ones were replaced
}

// A pooled connection idle longer than pool_idle is closed, not used.
TEST_F(HttpTransport, AConnectionIdleLongerThanPoolIdleIsNotReused) {
  http_test_server s([&](http_exchange& ex) { ex.respond(200, result_for(body_of(ex).at("id"))); });
  auto o = options(s);
  o.pool_idle = 200ms;
  open(o);
  for (std::int64_t id : {1, 2}) {  // the second at once: on the pooled connection
    send_to(*t, call(id));
    ASSERT_TRUE(run_until([&] { return ev.answer(id).has_value(); }));
  }
  EXPECT_EQ(s.connections(), 1u);
  run_for(300ms);
  send_to(*t, call(3));
  ASSERT_TRUE(run_until([&] { return ev.answer(3).has_value(); }));
  EXPECT_EQ(s.connections(), 2u);
}

// A POST cut after it went out whole may have run: the transport does not send it again. It
// fails as any cut call does, and the server's `retry` setting decides upstream.
TEST_F(HttpTransport, APostCutAfterItWasWrittenIsNotSentAgain) {
  std::atomic<int> n{0};
  http_test_server s([&](http_exchange& ex) {
    if (++n == 2) return ex.cut();  // read, then the connection closes
    ex.respond(200, result_for(body_of(ex).at("id")));
  });
  open(options(s));
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  send_to(*t, call(2));  // on the pooled connection
  ASSERT_TRUE(run_until([&] { return ev.closed || ev.answer(2).has_value(); }));
  EXPECT_TRUE(ev.closed);
  EXPECT_THAT(ev.reason, HasSubstr("POST failed"));
  EXPECT_EQ(s.count("POST"), 2u);
}

TEST_F(HttpTransport, BadUrlIsReportedAfterStart) {
  http_transport_options o;
  o.url = "ftp://example.com/x";
  open(o);
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_THAT(ev.reason, HasSubstr("scheme"));
}

// ---- legacy HTTP+SSE ----------------------------------------------------------------------

// A legacy server: GET /sse streams `endpoint` then whatever POSTs push to `outbox`.
struct legacy_server {
  explicit legacy_server(std::string endpoint, std::chrono::milliseconds endpoint_delay = 0ms)
      : server([this, endpoint, endpoint_delay](http_exchange& ex) {
          if (ex.request().method == "GET") {
            ex.begin_sse();
            std::this_thread::sleep_for(endpoint_delay);
            ex.event(endpoint, {}, "endpoint");
            for (;;) {
              std::unique_lock lock(mu);
              if (!cv.wait_for(lock, 5s, [&] { return !outbox.empty() || stop; }))
                return ex.end_sse();
              if (stop) return ex.end_sse();
              auto m = std::move(outbox.front());
              outbox.pop_front();
              lock.unlock();
              ex.event(m, {}, "message");
            }
          }
          auto b = body_of(ex);
          ex.respond(202, "Accepted", "text/plain");
          if (b.contains("id") && b.contains("method")) {
            std::lock_guard lock(mu);
            outbox.push_back(result_for(b.at("id"), "legacy"));
            if (b.at("method").as_string() == "quit") stop = true;
          }
          cv.notify_all();
        }) {}
  ~legacy_server() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    server.stop();
  }
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> outbox;
  bool stop = false;
  http_test_server server;
};

TEST_F(HttpTransport, LegacyEndpointAndMessages) {
  legacy_server ls("/messages?sessionId=abc", 150ms);
  auto o = options(ls.server, "/sse");
  o.type = http_transport_options::kind::legacy_sse;
  open(o);
  // Sent before the endpoint is known: queued.
  ASSERT_FALSE(send_to(*t, call(1, "initialize")));
  EXPECT_GT(t->queued_bytes(), 0u);
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  EXPECT_EQ(ev.answer(1)->at("result").as_object().at("text").as_string(), "legacy");
  bool done = false;
  t->on_initialized("2024-11-05", 1000ms, [&] { done = true; });
  EXPECT_TRUE(done);  // no listener in the legacy protocol
  send_to(*t, call(2));
  ASSERT_TRUE(run_until([&] { return ev.answer(2).has_value(); }));
  auto reqs = ls.server.requests();
  ASSERT_GE(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].method, "GET");
  EXPECT_EQ(reqs[0].target, "/sse");
  EXPECT_EQ(reqs[0].header("accept"), "text/event-stream");
  EXPECT_EQ(reqs[1].method, "POST");
  EXPECT_EQ(reqs[1].target, "/messages?sessionId=abc");
  // The stream ending closes the transport.
  send_to(*t, call(3, "quit"));
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_EQ(ev.reason, "Legacy SSE stream closed");
}

TEST_F(HttpTransport, LegacyCrossOriginEndpointIsRefused) {
  legacy_server ls("http://evil.example:8080/messages");
  auto o = options(ls.server, "/sse");
  o.type = http_transport_options::kind::legacy_sse;
  open(o);
  send_to(*t, call(1, "initialize"));
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_THAT(ev.reason, HasSubstr("same origin"));
  EXPECT_EQ(ls.server.count("POST"), 0u);
}

TEST_F(HttpTransport, LegacyEndpointMissingTimesOut) {
  http_test_server s([&](http_exchange& ex) {
    ex.begin_sse();
    ex.hold(3s);
  });
  auto o = options(s, "/sse");
  o.type = http_transport_options::kind::legacy_sse;
  o.timeout = 200ms;
  open(o);
  ASSERT_TRUE(run_until([&] { return ev.closed; }, 2s));
  EXPECT_THAT(ev.reason, HasSubstr("no endpoint event"));
}

// ---- TLS ----------------------------------------------------------------------------------

TEST_F(HttpTransport, TlsWithCaFileSucceeds) {
  const auto dir = test::make_test_certificate();
  ASSERT_FALSE(dir.empty()) << "openssl req failed";
  http_test_server s(
      [&](http_exchange& ex) { ex.respond(200, result_for(body_of(ex).at("id"), "tls")); }, dir);
  auto o = options(s);
  o.ca_file = dir + "/cert.pem";
  open(o);
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.answer(1).has_value(); }));
  EXPECT_EQ(ev.answer(1)->at("result").as_object().at("text").as_string(), "tls");
  // By host name too (SNI and DNS-name verification).
  t->close();
  auto o2 = o;
  o2.url = "https://localhost:" + std::to_string(s.port()) + "/mcp";
  recorder ev2;
  auto t2 = make_http_transport(io, o2);
  t2->start(ev2);
  send_to(*t2, call(2));
  ASSERT_TRUE(run_until([&] { return ev2.answer(2).has_value() || ev2.closed; }));
  EXPECT_TRUE(ev2.answer(2)) << ev2.reason;
  t2->close();
}

TEST_F(HttpTransport, TlsWithoutCaFileFailsVerification) {
  const auto dir = test::make_test_certificate();
  ASSERT_FALSE(dir.empty());
  http_test_server s([&](http_exchange& ex) { ex.respond(200, result_for(body_of(ex).at("id"))); },
                     dir);
  open(options(s));
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_THAT(ev.reason, HasSubstr("TLS handshake"));
  EXPECT_FALSE(ev.answer(1));
}

TEST_F(HttpTransport, TlsHostNameMismatchFails) {
  const auto dir = test::make_test_certificate("DNS:other.example");
  ASSERT_FALSE(dir.empty());
  http_test_server s([&](http_exchange& ex) { ex.respond(200, result_for(body_of(ex).at("id"))); },
                     dir);
  auto o = options(s);
  o.ca_file = dir + "/cert.pem";
  open(o);
  send_to(*t, call(1));
  ASSERT_TRUE(run_until([&] { return ev.closed; }));
  EXPECT_THAT(ev.reason, HasSubstr("TLS handshake"));
}

}  // namespace
}  // namespace mcpmux
