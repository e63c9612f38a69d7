// Integration tests of the Streamable HTTP endpoint: a real mcpmuxd, a fake server, raw HTTP.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "tests/fixtures/raw_http_client.hpp"
#include "tests/integration/harness.hpp"

namespace mcpmux::test {
namespace {

// A TCP port nobody listens on right now.
unsigned short free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

class http_endpoint_test : public daemon_test {
 protected:
  // Starts the daemon with the HTTP endpoint and one fake server "f" (none without
  // `with_server`); `extra` goes into [daemon].
  void start_http(std::string_view extra = {}, bool with_server = true) {
    port_ = free_port();
    // Open unless the test is about the token (the default is tested on its own).
    const bool about_auth = extra.find("http_token_file") != std::string_view::npos ||
                            extra.find("http_auth") != std::string_view::npos;
    std::string cfg =
        "[daemon]\nhttp = \"127.0.0.1:" + std::to_string(port_) +
        "\"\nmax_message_bytes = 65536\n" + (about_auth ? "" : "http_auth = \"none\"\n") +
        std::string(extra) + "\n" +
        // (Tools the server adds are accepted: the tests follow list changes.)
        (with_server ? fake_server_table("f", {}, "on_change = \"accept\"\n") : std::string());
    start(cfg);
    ASSERT_TRUE(daemon_->started());
    ASSERT_TRUE(daemon_->wait_for_log("Streamable HTTP endpoint on", 5s)) << daemon_->log();
  }

  // One request on a fresh connection; the whole response (SSE bodies split into events).
  http_response exchange(std::string_view method, std::string_view target,
                         const header_list& headers, std::string_view body = {}) {
    http_conn c(port_);
    EXPECT_TRUE(c.ok());
    EXPECT_TRUE(c.send_all(request_text(method, target, port_, headers, body)));
    auto head = c.read_head();
    if (!head) {
      ADD_FAILURE() << method << " " << target << ": no response";
      return {};
    }
    if (head->header("content-type") == "text/event-stream") {
      while (auto ev = c.next_event()) head->events.push_back(*ev);
      EXPECT_TRUE(c.stream_ended()) << "SSE stream did not end";
    } else {
      head->body = c.read_body().value_or("");
    }
    return *head;
  }

  header_list session_headers(const std::string& sid, header_list extra = {}) {
    header_list h = mcp_headers;
    h.emplace_back("Mcp-Session-Id", sid);
    h.emplace_back("MCP-Protocol-Version", "2025-11-25");
    for (auto& e : extra) h.push_back(std::move(e));
    return h;
  }

  http_response post(const std::string& sid, const json::value& msg, header_list extra = {}) {
    return exchange("POST", "/mcp", session_headers(sid, std::move(extra)), json::serialize(msg));
  }

  // initialize + notifications/initialized; the session id.
  std::string open_session(header_list extra = {}, json::object capabilities = {}) {
    header_list h = mcp_headers;
    h.insert(h.end(), extra.begin(), extra.end());
    json::value init = {{"jsonrpc", "2.0"},
                        {"id", 1},
                        {"method", "initialize"},
                        {"params",
                         {{"protocolVersion", "2025-11-25"},
                          {"capabilities", std::move(capabilities)},
                          {"clientInfo", {{"name", "http-test"}, {"version", "1"}}}}}};
    auto r = exchange("POST", "/mcp", h, json::serialize(init));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("content-type"), "application/json");
    const auto sid = r.header("mcp-session-id");
    EXPECT_EQ(sid.size(), 32u) << sid;
    EXPECT_EQ(r.json().at_pointer("/result/protocolVersion"), "2025-11-25") << r.body;
    auto n = post(sid, {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}, extra);
    EXPECT_EQ(n.status, 202);
    EXPECT_TRUE(n.body.empty());
    return sid;
  }

  static json::value call(std::int64_t id, std::string_view tool, json::value args,
                          json::value meta = nullptr) {
    json::object params{{"name", tool}, {"arguments", std::move(args)}};
    if (!meta.is_null()) params["_meta"] = std::move(meta);
    return {
        {"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"}, {"params", std::move(params)}};
  }

  unsigned short port_ = 0;
};

TEST_F(http_endpoint_test, InitializeListAndCallAsJson) {
  start_http();
  const auto sid = open_session();
  auto list = post(sid, {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}});
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.header("content-type"), "application/json");
  auto names = tool_names(list.json());
  EXPECT_NE(std::find(names.begin(), names.end(), "f__echo"), names.end()) << list.body;

  auto echo = post(sid, call(3, "f__echo", {{"text", "hello over http"}}));
  ASSERT_EQ(echo.status, 200) << echo.body;
  EXPECT_EQ(echo.json().at("id"), 3);
  EXPECT_EQ(first_text(echo.json()), "hello over http");

  // String ids are echoed as they came.
  json::value ping = {{"jsonrpc", "2.0"}, {"id", "p-1"}, {"method", "ping"}};
  auto pong = post(sid, ping);
  EXPECT_EQ(pong.status, 200);
  EXPECT_EQ(pong.json().at("id"), "p-1");
}

// Agents run 16 or 64 tool calls at once: with the session's GET stream open, 64 concurrent
// calls in one session are all answered (the default limit counts requests awaiting their
// answer only), and the 65th waiting at once is refused with 429.
TEST_F(http_endpoint_test, SixtyFourCallsInFlightInOneSessionAreNormalUse) {
  start_http();
  const auto sid = open_session();
  http_conn get(port_);
  ASSERT_TRUE(get.send_all(request_text("GET", "/mcp", port_, session_headers(sid), "")));
  auto get_head = get.read_head();
  ASSERT_TRUE(get_head);
  EXPECT_EQ(get_head->status, 200);

  std::vector<std::unique_ptr<http_conn>> conns;
  for (int i = 0; i < 64; ++i) {
    conns.push_back(std::make_unique<http_conn>(port_));
    ASSERT_TRUE(conns.back()->send_all(
        request_text("POST", "/mcp", port_, session_headers(sid),
                     json::serialize(call(100 + i, "f__slow", {{"ms", 1500}})))));
  }
  // All 64 are on their way to the server; one more at once is over the limit.
  std::this_thread::sleep_for(300ms);
  auto over = post(sid, call(999, "f__echo", {{"text", "one too many"}}));
  EXPECT_EQ(over.status, 429) << over.body;
  int answered = 0;
  for (int i = 0; i < 64; ++i) {
    auto head = conns[i]->read_head();
    ASSERT_TRUE(head) << "call " << i << ": no response";
    EXPECT_EQ(head->status, 200) << "call " << i;
    std::string body;
    if (head->header("content-type") == "text/event-stream") {
      while (auto ev = conns[i]->next_event()) body = ev->data;
    } else {
      body = conns[i]->read_body().value_or("");
    }
    const auto v = json::parse(body);
    EXPECT_EQ(v.at("id"), 100 + i) << body;
    if (first_text(v) == "slept 1500") ++answered;
  }
  EXPECT_EQ(answered, 64);
  // Answered requests no longer count.
  auto after = post(sid, call(1000, "f__echo", {{"text", "room again"}}));
  EXPECT_EQ(after.status, 200) << after.body;
}

TEST_F(http_endpoint_test, ProgressComesAsSseThenTheResult) {
  start_http();
  const auto sid = open_session();
  auto r =
      post(sid, call(7, "f__progress", {{"steps", 3}, {"ms", 50}}, {{"progressToken", "tok"}}));
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.header("content-type"), "text/event-stream");
  std::vector<json::value> messages;
  for (const auto& ev : r.events) {
    EXPECT_FALSE(ev.id.empty()) << "every event carries an id";
    if (ev.data.empty()) continue;  // the priming event
    messages.push_back(json::parse(ev.data));
  }
  ASSERT_EQ(messages.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(messages[i].at("method"), "notifications/progress");
    EXPECT_EQ(messages[i].at_pointer("/params/progressToken"), "tok");
    EXPECT_EQ(messages[i].at_pointer("/params/progress"), i + 1);
  }
  EXPECT_EQ(messages[3].at("id"), 7);
  EXPECT_EQ(first_text(messages[3]), "progress done 3");
  // Event ids are unique.
  std::set<std::string> ids;
  for (const auto& ev : r.events) ids.insert(ev.id);
  EXPECT_EQ(ids.size(), r.events.size());
}

TEST_F(http_endpoint_test, ServerRequestOnThePostStreamAnsweredByPost) {
  start_http();
  const auto sid = open_session({}, {{"sampling", json::object{}}});
  json::value ask = {{"method", "sampling/createMessage"}, {"params", {{"maxTokens", 5}}}};
  http_conn c(port_);
  ASSERT_TRUE(c.send_all(request_text("POST", "/mcp", port_, session_headers(sid),
                                      json::serialize(call(11, "f__client_request", ask)))));
  auto head = c.read_head();
  ASSERT_TRUE(head);
  ASSERT_EQ(head->status, 200);
  ASSERT_EQ(head->header("content-type"), "text/event-stream");
  // The server's request to the client comes on this request's stream.
  std::optional<json::value> asked;
  while (auto ev = c.next_event(5s)) {
    if (ev->data.empty()) continue;
    asked = json::parse(ev->data);
    break;
  }
  ASSERT_TRUE(asked);
  ASSERT_EQ(asked->at("method"), "sampling/createMessage") << json::serialize(*asked);
  json::value answer = {{"jsonrpc", "2.0"},
                        {"id", asked->at("id")},
                        {"result",
                         {{"role", "assistant"},
                          {"model", "m"},
                          {"content", {{"type", "text"}, {"text", "sampled"}}}}}};
  auto accepted = post(sid, answer);
  EXPECT_EQ(accepted.status, 202);
  EXPECT_TRUE(accepted.body.empty());
  auto result = c.next_event(5s);
  ASSERT_TRUE(result);
  auto v = json::parse(result->data);
  EXPECT_EQ(v.at("id"), 11) << result->data;
  EXPECT_NE(first_text(v).find("sampled"), std::string::npos) << result->data;
  EXPECT_FALSE(c.next_event(2s));
  EXPECT_TRUE(c.stream_ended());
}

TEST_F(http_endpoint_test, BrokenPostStreamResumesWithGet) {
  start_http();
  const auto sid = open_session();
  std::string first_id;
  {
    http_conn c(port_);
    ASSERT_TRUE(
        c.send_all(request_text("POST", "/mcp", port_, session_headers(sid),
                                json::serialize(call(21, "f__progress", {{"steps", 3}, {"ms", 300}},
                                                     {{"progressToken", 5}})))));
    auto head = c.read_head();
    ASSERT_TRUE(head);
    ASSERT_EQ(head->header("content-type"), "text/event-stream");
    while (auto ev = c.next_event(5s)) {
      if (ev->data.find("notifications/progress") != std::string::npos) {
        first_id = ev->id;
        break;
      }
    }
    ASSERT_FALSE(first_id.empty());
  }  // the connection breaks after the first progress event
  http_conn again(port_);
  ASSERT_TRUE(again.send_all(
      request_text("GET", "/mcp", port_, session_headers(sid, {{"Last-Event-ID", first_id}}), {})));
  auto head = again.read_head();
  ASSERT_TRUE(head);
  ASSERT_EQ(head->status, 200);
  std::vector<json::value> rest;
  while (auto ev = again.next_event(5s)) rest.push_back(json::parse(ev->data));
  EXPECT_TRUE(again.stream_ended()) << "the resumed stream ends after the answer";
  ASSERT_EQ(rest.size(), 3u);
  EXPECT_EQ(rest[0].at_pointer("/params/progress"), 2);
  EXPECT_EQ(rest[1].at_pointer("/params/progress"), 3);
  EXPECT_EQ(rest[2].at("id"), 21);
  EXPECT_EQ(first_text(rest[2]), "progress done 3");
}

TEST_F(http_endpoint_test, SessionRules) {
  start_http();
  json::value list = {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}};
  // No session id on a request other than initialize.
  auto missing = exchange("POST", "/mcp", mcp_headers, json::serialize(list));
  EXPECT_EQ(missing.status, 400);
  auto unknown = post("00000000000000000000000000000000", list);
  EXPECT_EQ(unknown.status, 404);

  const auto sid = open_session();
  EXPECT_EQ(post(sid, list).status, 200);
  // Batches, bad JSON, bad Accept, bad protocol version.
  auto batch = exchange("POST", "/mcp", session_headers(sid), "[" + json::serialize(list) + "]");
  EXPECT_EQ(batch.status, 400);
  EXPECT_EQ(batch.json().at_pointer("/error/code"), -32600) << batch.body;
  EXPECT_EQ(exchange("POST", "/mcp", session_headers(sid), "{nope").status, 400);
  header_list json_only = {{"Accept", "application/json"},
                           {"Content-Type", "application/json"},
                           {"Mcp-Session-Id", sid}};
  EXPECT_EQ(exchange("POST", "/mcp", json_only, json::serialize(list)).status, 406);
  header_list old_version = {{"Accept", "application/json, text/event-stream"},
                             {"Content-Type", "application/json"},
                             {"Mcp-Session-Id", sid},
                             {"MCP-Protocol-Version", "1999-01-01"}};
  EXPECT_EQ(exchange("POST", "/mcp", old_version, json::serialize(list)).status, 400);
  EXPECT_EQ(post(sid, list, {{"MCP-Protocol-Version", "1999-01-01"}}).status, 400);
  // 405 for other methods, 404 for other paths.
  EXPECT_EQ(exchange("PUT", "/mcp", session_headers(sid), "{}").status, 405);
  EXPECT_EQ(exchange("GET", "/nope", {}).status, 404);

  // DELETE ends the session; afterwards it is unknown.
  EXPECT_EQ(exchange("DELETE", "/mcp", session_headers(sid)).status, 200);
  EXPECT_EQ(post(sid, list).status, 404);
  EXPECT_EQ(exchange("DELETE", "/mcp", session_headers(sid)).status, 404);
  EXPECT_TRUE(daemon_->wait_for_log("the client ended the session", 2s));
}

TEST_F(http_endpoint_test, HostOriginAndLimits) {
  start_http();
  EXPECT_EQ(exchange("GET", "/status", {{"Host", "evil.example:" + std::to_string(port_)}}).status,
            403);
  EXPECT_EQ(exchange("GET", "/status", {{"Host", "127.0.0.1:1"}}).status, 403);
  EXPECT_EQ(exchange("GET", "/status", {{"Host", "localhost:" + std::to_string(port_)}}).status,
            200);
  EXPECT_EQ(exchange("GET", "/status", {{"Origin", "http://evil.example"}}).status, 403);
  EXPECT_EQ(exchange("GET", "/status", {{"Origin", "null"}}).status, 403);
  EXPECT_EQ(exchange("GET", "/status", {{"Origin", "http://localhost.evil.example"}}).status, 403);
  // Only the endpoint's own origin, port included: another local port is another site's.
  EXPECT_EQ(exchange("GET", "/status", {{"Origin", "http://localhost:3000"}}).status, 403);
  EXPECT_EQ(exchange("GET", "/status", {{"Origin", "http://[::1]"}}).status, 403);
  EXPECT_EQ(
      exchange("GET", "/status", {{"Origin", "http://[::1]:" + std::to_string(port_)}}).status,
      200);
  header_list other_port = mcp_headers;
  other_port.emplace_back("Origin", "http://127.0.0.1:" + std::to_string(port_ + 1));
  EXPECT_EQ(exchange("POST", "/mcp", other_port, "{}").status, 403);

  // Body over max_message_bytes (65536): 413 without reading it all.
  const auto sid = open_session();
  std::string big = R"({"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":")" +
                    std::string(70000, 'x') + "\"}}";
  EXPECT_EQ(post(sid, json::parse(big)).status, 413);
  // Headers over 16 KiB: 431.
  EXPECT_EQ(exchange("GET", "/status", {{"X-Big", std::string(20000, 'y')}}).status, 431);
  // The daemon is still fine.
  EXPECT_EQ(post(sid, {{"jsonrpc", "2.0"}, {"id", 10}, {"method", "ping"}}).status, 200);
}

TEST_F(http_endpoint_test, BearerToken) {
  auto token_file = dir_.write("http.token", "  s3cret-token\n");
  ::chmod(token_file.c_str(), 0600);
  start_http("http_token_file = " + toml_quote(token_file));
  EXPECT_EQ(exchange("GET", "/status", {}).status, 401);
  EXPECT_EQ(exchange("GET", "/status", {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(exchange("GET", "/status", {{"Authorization", "Bearer s3cret-tokenX"}}).status, 401);
  auto ok = exchange("GET", "/status", {{"Authorization", "Bearer s3cret-token"}});
  EXPECT_EQ(ok.status, 200);
  // The MCP endpoint too.
  json::value ping = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}};
  EXPECT_EQ(exchange("POST", "/mcp", mcp_headers, json::serialize(ping)).status, 401);
  const auto sid = open_session({{"Authorization", "Bearer s3cret-token"}});
  EXPECT_EQ(post(sid, ping, {{"Authorization", "Bearer s3cret-token"}}).status, 200);
}

// A token file others may read is refused at start, as the secrets file is: the daemon does not
// start, and says why and what to do.
TEST_F(http_endpoint_test, ATokenFileOthersCanReadIsRefused) {
  auto token_file = dir_.write("http.token", "s3cret-token\n");
  ::chmod(token_file.c_str(), 0644);
  dir_.write("config.toml", "[daemon]\nhttp = \"127.0.0.1:" + std::to_string(free_port()) +
                                "\"\nhttp_token_file = " + toml_quote(token_file) + "\n");
  const auto d = dir_.path();
  auto r = run_process(
      {mcpmuxd_path(), "--config", dir_.file("config.toml"), "--socket", dir_.file("s.sock")}, {},
      5s,
      {{"XDG_RUNTIME_DIR", d},
       {"XDG_CACHE_HOME", d + "/cache"},
       {"XDG_CONFIG_HOME", d + "/config"},
       {"XDG_STATE_HOME", d + "/state"}});
  EXPECT_FALSE(r.timed_out) << "the daemon started";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("is readable by others (mode 0644)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chmod 600 " + token_file), std::string::npos) << r.err;
}

// The default: no open door on the loopback port. A token is made next to the socket (256 bits,
// 0600), every request needs it, status names the file, and a restart keeps it.
TEST_F(http_endpoint_test, ATokenIsRequiredByDefault) {
  start_http("http_auth = \"token\"");
  const std::string token_file = dir_.path() + "/http-token";
  struct stat st {};
  ASSERT_EQ(::stat(token_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string token;
  std::getline(std::ifstream(token_file), token);
  EXPECT_EQ(token.size(), 64u);
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos);
  const header_list auth = {{"Authorization", "Bearer " + token}};
  EXPECT_EQ(exchange("GET", "/status", {}).status, 401);
  EXPECT_EQ(exchange("GET", "/status", auth).status, 200);
  json::value ping = {{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ping"}};
  EXPECT_EQ(exchange("POST", "/mcp", mcp_headers, json::serialize(ping)).status, 401);
  EXPECT_EQ(post(open_session(auth), ping, auth).status, 200);
  // The owner finds it through the socket.
  auto status = json::parse(run_cli(daemon_->socket(), {"status", "--json"}).out);
  EXPECT_EQ(status.at("http").at("auth"), "token");
  EXPECT_EQ(status.at("http").at("token_file"), json::value(token_file));
  // A restart keeps a private token; one others could read is replaced.
  EXPECT_EQ(daemon_->stop(), 0);
  daemon_.reset();
  start_http("http_auth = \"token\"");
  std::string again;
  std::getline(std::ifstream(token_file), again);
  EXPECT_EQ(again, token);
  EXPECT_EQ(daemon_->stop(), 0);
  daemon_.reset();
  ::chmod(token_file.c_str(), 0644);
  start_http("http_auth = \"token\"");
  std::getline(std::ifstream(token_file), again);
  EXPECT_NE(again, token);
  ASSERT_EQ(::stat(token_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(http_endpoint_test, NoAuthIsAnOptOutWithAWarning) {
  start_http("http_auth = \"none\"");
  EXPECT_EQ(exchange("GET", "/status", {}).status, 200);
  EXPECT_TRUE(daemon_->wait_for_log("ANY user or program on this machine", 5s)) << daemon_->log();
  auto status = json::parse(run_cli(daemon_->socket(), {"status", "--json"}).out);
  EXPECT_EQ(status.at("http").at("auth"), "none");
  EXPECT_TRUE(status.at("http").at("token_file").is_null());
}

TEST_F(http_endpoint_test, GetStreamGetsListChangedAndResumes) {
  start_http();
  const auto a = open_session();
  const auto b = open_session();

  http_conn get(port_);
  ASSERT_TRUE(get.send_all(request_text("GET", "/mcp", port_, session_headers(a), {})));
  auto head = get.read_head();
  ASSERT_TRUE(head);
  ASSERT_EQ(head->status, 200);
  ASSERT_EQ(head->header("content-type"), "text/event-stream");
  auto priming = get.next_event();
  ASSERT_TRUE(priming);
  EXPECT_TRUE(priming->data.empty());

  // A second GET stream for the same session is refused.
  EXPECT_EQ(exchange("GET", "/mcp", session_headers(a)).status, 409);

  auto r = post(b, call(5, "f__list_changed", json::object{}));
  ASSERT_EQ(r.status, 200) << r.body;
  std::optional<sse_event> changed;
  while (auto ev = get.next_event(5s)) {
    if (ev->data.find("notifications/tools/list_changed") != std::string::npos) {
      changed = ev;
      break;
    }
  }
  ASSERT_TRUE(changed) << "no list_changed on the GET stream";
  get.close();

  // Resume from the priming event: the list_changed event is replayed with its id.
  http_conn again(port_);
  ASSERT_TRUE(again.send_all(request_text(
      "GET", "/mcp", port_, session_headers(a, {{"Last-Event-ID", priming->id}}), {})));
  auto head2 = again.read_head();
  ASSERT_TRUE(head2);
  ASSERT_EQ(head2->status, 200);
  auto replayed = again.next_event();
  ASSERT_TRUE(replayed);
  EXPECT_EQ(replayed->id, changed->id);
  EXPECT_EQ(replayed->data, changed->data);

  // DELETE ends the session and with it the stream.
  EXPECT_EQ(exchange("DELETE", "/mcp", session_headers(a)).status, 200);
  EXPECT_FALSE(again.next_event(3s));
  EXPECT_TRUE(again.stream_ended() || again.eof());
}

TEST_F(http_endpoint_test, NotificationsHeldUntilAGetStreamOpens) {
  start_http();
  const auto a = open_session();
  const auto b = open_session();
  auto r = post(b, call(5, "f__list_changed", json::object{}));
  ASSERT_EQ(r.status, 200) << r.body;
  // No stream was open for a: the notification waits for its GET.
  http_conn get(port_);
  ASSERT_TRUE(get.send_all(request_text("GET", "/mcp", port_, session_headers(a), {})));
  auto head = get.read_head();
  ASSERT_TRUE(head);
  ASSERT_EQ(head->status, 200);
  bool seen = false;
  while (auto ev = get.next_event(5s)) {
    if (ev->data.find("notifications/tools/list_changed") != std::string::npos) {
      seen = true;
      break;
    }
  }
  EXPECT_TRUE(seen);
}

TEST_F(http_endpoint_test, StatusAndMetrics) {
  start_http();
  auto status = exchange("GET", "/status", {});
  ASSERT_EQ(status.status, 200);
  EXPECT_EQ(status.header("content-type"), "application/json");
  auto v = status.json();
  ASSERT_TRUE(v.is_object()) << status.body;
  ASSERT_TRUE(v.at("servers").is_array());
  EXPECT_EQ(v.at_pointer("/servers/0/name"), "f");

  auto metrics = exchange("GET", "/metrics", {});
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.header("content-type").rfind("text/plain; version=0.0.4", 0), 0u);
  const auto& m = metrics.body;
  EXPECT_NE(m.find("mcpmux_up 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("mcpmux_server_up{server=\"f\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("# TYPE mcpmux_server_calls_total counter"), std::string::npos) << m;
  EXPECT_NE(m.find("mcpmux_server_tools{server=\"f\"} "), std::string::npos) << m;
  EXPECT_NE(m.find("mcpmux_uptime_seconds "), std::string::npos) << m;
  EXPECT_EQ(exchange("POST", "/metrics", {}, "x").status, 405);

  // Latency as histograms that sum: per server and per tool, cumulative buckets ending in
  // +Inf = _count, and the CLI's status stays free of them.
  const auto sid = open_session();
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(post(sid, call(10 + i, "f__echo", {{"text", "x"}})).status, 200);
  EXPECT_EQ(post(sid, call(20, "f__slow", {{"ms", 30}})).status, 200);
  const auto after = exchange("GET", "/metrics", {}).body;
  EXPECT_NE(after.find("# TYPE mcpmux_server_request_duration_seconds histogram"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("# TYPE mcpmux_tool_call_duration_seconds histogram"), std::string::npos);
  EXPECT_NE(after.find("mcpmux_tool_call_duration_seconds_count{server=\"f\",tool=\"echo\"} 3\n"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("mcpmux_tool_call_duration_seconds_bucket{server=\"f\",tool=\"slow\","
                       "le=\"+Inf\"} 1\n"),
            std::string::npos)
      << after;
  // The 30 ms call is not in the 25 ms bucket but is in the 50 ms one.
  EXPECT_NE(after.find("mcpmux_tool_call_duration_seconds_bucket{server=\"f\",tool=\"slow\","
                       "le=\"0.025\"} 0\n"),
            std::string::npos)
      << after;
  EXPECT_NE(after.find("mcpmux_tool_call_duration_seconds_bucket{server=\"f\",tool=\"slow\","
                       "le=\"0.05\"} 1\n"),
            std::string::npos)
      << after;
  EXPECT_EQ(after.find("latency_p50"), std::string::npos) << "gauges replaced by histograms";
  EXPECT_FALSE(exchange("GET", "/status", {})
                   .json()
                   .at_pointer("/servers/0")
                   .as_object()
                   .contains("latency_histogram"));
}

TEST_F(http_endpoint_test, SigtermEndsHttpConnectionsCleanly) {
  start_http();
  const auto sid = open_session();

  // A tool call in flight whose answer is due as JSON. A ping reusing its id gets 400 once the
  // call is registered (before that, the ping is simply answered).
  http_conn slow(port_);
  ASSERT_TRUE(slow.send_all(request_text("POST", "/mcp", port_, session_headers(sid),
                                         json::serialize(call(50, "f__slow", {{"ms", 30000}})))));
  ASSERT_TRUE(wait_until(
      [&] {
        return post(sid, {{"jsonrpc", "2.0"}, {"id", 50}, {"method", "ping"}}).status == 400;
      },
      5s));

  // A tool call in flight whose answer is an SSE stream (progress came first).
  http_conn streaming(port_);
  ASSERT_TRUE(streaming.send_all(
      request_text("POST", "/mcp", port_, session_headers(sid),
                   json::serialize(call(51, "f__progress", {{"steps", 100}, {"ms", 300}},
                                        {{"progressToken", "p"}})))));
  auto head = streaming.read_head();
  ASSERT_TRUE(head);
  ASSERT_EQ(head->header("content-type"), "text/event-stream");
  bool progressed = false;
  while (auto ev = streaming.next_event(5s)) {
    if (ev->data.find("notifications/progress") != std::string::npos) {
      progressed = true;
      break;
    }
  }
  ASSERT_TRUE(progressed);

  // The session's GET stream, and an idle keep-alive connection.
  http_conn get(port_);
  ASSERT_TRUE(get.send_all(request_text("GET", "/mcp", port_, session_headers(sid), {})));
  auto get_head = get.read_head();
  ASSERT_TRUE(get_head);
  ASSERT_EQ(get_head->status, 200);
  ASSERT_TRUE(get.next_event());  // priming
  http_conn idle(port_);
  ASSERT_TRUE(idle.send_all(request_text("GET", "/status", port_, {}, {})));
  auto status = idle.read_head();
  ASSERT_TRUE(status);
  ASSERT_EQ(status->status, 200);
  ASSERT_TRUE(idle.read_body());

  ASSERT_EQ(::kill(daemon_->pid(), SIGTERM), 0);

  // The JSON call gets an error answer instead of a dropped connection.
  auto answer = slow.read_head(5s);
  ASSERT_TRUE(answer) << "the request in flight got no answer";
  EXPECT_EQ(answer->status, 200);
  auto body = slow.read_body(5s);
  ASSERT_TRUE(body);
  auto v = parse_or_null(*body);
  EXPECT_EQ(v.at("id"), 50) << *body;
  EXPECT_EQ(v.at_pointer("/error/code"), -32000) << *body;
  EXPECT_TRUE(slow.wait_closed(5s));

  // The SSE call gets its error as the last event, then the stream's last chunk.
  std::optional<sse_event> last;
  while (auto ev = streaming.next_event(5s)) last = ev;
  EXPECT_TRUE(streaming.stream_ended()) << "the SSE stream was cut";
  ASSERT_TRUE(last);
  auto e = parse_or_null(last->data);
  EXPECT_EQ(e.at("id"), 51) << last->data;
  EXPECT_EQ(e.at_pointer("/error/code"), -32000) << last->data;

  // The GET stream ends cleanly; the idle connection is closed.
  EXPECT_FALSE(get.next_event(5s));
  EXPECT_TRUE(get.stream_ended()) << "the GET stream was cut";
  EXPECT_TRUE(idle.wait_closed(5s));

  EXPECT_EQ(daemon_->stop(), 0);
}

TEST_F(http_endpoint_test, SigtermWithoutChildrenStillEndsStreams) {
  // No upstream to wait for: the daemon still waits for its HTTP connections to finish.
  start_http({}, false);
  const auto sid = open_session();
  http_conn get(port_);
  ASSERT_TRUE(get.send_all(request_text("GET", "/mcp", port_, session_headers(sid), {})));
  auto head = get.read_head();
  ASSERT_TRUE(head);
  ASSERT_EQ(head->status, 200);
  ASSERT_TRUE(get.next_event());  // priming
  ASSERT_EQ(::kill(daemon_->pid(), SIGTERM), 0);
  EXPECT_FALSE(get.next_event(5s));
  EXPECT_TRUE(get.stream_ended()) << "the GET stream was cut";
  EXPECT_EQ(daemon_->stop(), 0);
}

TEST_F(http_endpoint_test, NonLoopbackAddressIsRefused) {
  auto cfg = dir_.write("remote.toml",
                        "[daemon]\nhttp = \"0.0.0.0:" + std::to_string(free_port()) + "\"\n");
  auto r = run_process({mcpmuxd_path(), "--config", cfg, "--socket", dir_.file("r.sock")}, {}, 10s);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("not a loopback address"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("http_allow_remote"), std::string::npos) << r.err;
}

// ---- 2026-07-28 on /mcp ----------------------------------------------------------------------

TEST_F(http_endpoint_test, ModernPostsAreStatelessAndTheirHeadersAreChecked) {
  start_http();
  const json::object meta{{"io.modelcontextprotocol/protocolVersion", "2026-07-28"},
                          {"io.modelcontextprotocol/clientCapabilities", json::object{}}};
  const auto modern = [&](const json::value& msg, header_list extra, bool drop_defaults = false) {
    header_list h = mcp_headers;
    if (!drop_defaults) {
      h.emplace_back("MCP-Protocol-Version", "2026-07-28");
      h.emplace_back("Mcp-Method", std::string(msg.at("method").as_string()));
    }
    for (auto& e : extra) h.push_back(std::move(e));
    return exchange("POST", "/mcp", h, json::serialize(msg));
  };
  // A call answered as JSON, with resultType, and no session.
  auto r = modern(call(1, "f__echo", {{"text", "hi"}}, meta), {{"Mcp-Name", "f__echo"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("mcp-session-id"), "");
  EXPECT_EQ(r.json().at_pointer("/result/resultType"), "complete") << r.body;
  EXPECT_EQ(r.json().at_pointer("/result/content/0/text"), "hi") << r.body;
  // The headers: missing or disagreeing → 400 with -32020; each refusal harms nothing.
  const std::pair<header_list, bool> bad[] = {
      {{}, true},  // no version, no method
      {{{"Mcp-Name", "f__echo"}, {"MCP-Protocol-Version", "2026-07-28"}}, true},  // no method
      {{{"Mcp-Name", "other"}}, false},                                           // wrong name
      {{}, false},                                                                // no name
      {{{"Mcp-Name", "=?base64?!!!?="}}, false},                                  // bad encoding
  };
  for (const auto& [headers, drop] : bad) {
    r = modern(call(2, "f__echo", {{"text", "x"}}, meta), headers, drop);
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json().at_pointer("/error/code"), -32020) << r.body;
  }
  r = modern(call(3, "f__echo", {{"text", "b64"}}, meta),
             {{"Mcp-Name", "=?base64?Zl9fZWNobw==?="}});
  EXPECT_EQ(r.status, 200) << r.body;
  // Meta errors are 400 (-32602, -32022); an unknown method is 404.
  r = modern(call(4, "f__echo", {}, json::object{}), {{"Mcp-Name", "f__echo"}});
  EXPECT_EQ(r.status, 400);
  json::object old = meta;
  old["io.modelcontextprotocol/protocolVersion"] = "2099-01-01";
  r = modern(call(5, "f__echo", {}, old),
             {{"Mcp-Name", "f__echo"}, {"MCP-Protocol-Version", "2099-01-01"}}, true);
  EXPECT_EQ(r.status, 400) << r.body;
  json::value unknown = {
      {"jsonrpc", "2.0"}, {"id", 6}, {"method", "no/such"}, {"params", {{"_meta", meta}}}};
  r = modern(unknown, {});
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(r.json().at_pointer("/error/code"), -32601);
  // No GET stream, no DELETE in this era.
  header_list g = mcp_headers;
  g.emplace_back("MCP-Protocol-Version", "2026-07-28");
  EXPECT_EQ(exchange("GET", "/mcp", g).status, 405);
  EXPECT_EQ(exchange("DELETE", "/mcp", g).status, 405);
  // The daemon is fine, and legacy sessions still work.
  const auto sid = open_session();
  EXPECT_EQ(post(sid, call(7, "f__echo", {{"text", "legacy"}})).status, 200);
}

// Every run of at least 32 hex digits in `text`: what could be a secret.
std::set<std::string> hex_runs(std::string_view text) {
  std::set<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || !std::isxdigit(static_cast<unsigned char>(text[i]))) {
      if (i - start >= 32) out.emplace(text.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

// Cookies reach every port of 127.0.0.1: another local web server receives the dashboard's.
// Everything the login's answer sets, and every secret an answer to the cookie alone carries,
// replayed from elsewhere, gets neither the daemon's state nor an action; nor does the whole
// session sent with another local port's Origin. The page's own flow works.
TEST_F(http_endpoint_test, TheDashboardsCookieAloneIsNeverEnough) {
  start_http();
  auto ctl = connect();
  const auto restarts = status_of(ctl, "f").restarts;
  auto link = ctl.request("mcpmux/dashboard/login");
  ASSERT_TRUE(link);
  const std::string url(link->at_pointer("/result/url").as_string());
  auto login = exchange("GET", url.substr(url.find("/login")), {});
  EXPECT_EQ(login.status, 200) << login.body;
  std::string cookies;  // as a browser sends them back
  for (const auto& c : login.set_cookies)
    cookies += (cookies.empty() ? "" : "; ") + c.substr(0, c.find(';'));
  ASSERT_FALSE(cookies.empty());

  // What the cookie alone gets: the page's shell, its script and style, with nothing in them
  // (body or headers) that looks like a secret.
  std::set<std::string> replayed = hex_runs(cookies);
  replayed.insert("");  // no key at all
  for (const char* path : {"/", "/dashboard.js", "/dashboard.css"}) {
    auto r = exchange("GET", path, {{"Cookie", cookies}});
    EXPECT_EQ(r.status, 200) << path;
    std::string everything = r.body;
    for (const auto& [name, value] : r.headers) everything += "\n" + value;
    for (const auto& c : r.set_cookies) everything += "\n" + c;
    const auto found = hex_runs(everything);
    EXPECT_TRUE(found.empty()) << path << " answers a cookie alone with " << *found.begin();
    replayed.insert(found.begin(), found.end());
  }
  // The key: in the login's page only.
  const auto at = login.body.find(R"(name="dashboard-key" content=")");
  ASSERT_NE(at, std::string::npos) << login.body;
  const auto key = login.body.substr(at + 30, 64);
  ASSERT_EQ(hex_runs(key).size(), 1u) << key;

  const std::string own = "http://127.0.0.1:" + std::to_string(port_);
  const std::string restart = R"({"method":"mcpmux/restart","params":{"server":"f"}})";
  auto act = [&](const header_list& extra, const std::string& body) {
    header_list h = {{"Content-Type", "application/json"}};
    h.insert(h.end(), extra.begin(), extra.end());
    return exchange("POST", "/dashboard/action", h, body);
  };
  auto get_status = [&](std::string_view target, const header_list& h) {  // (streams stay open)
    http_conn c(port_);
    EXPECT_TRUE(c.send_all(request_text("GET", target, port_, h, {})));
    auto head = c.read_head();
    return head ? head->status : 0;
  };
  for (const auto& guess : replayed) {
    header_list h = {{"Cookie", cookies}, {"Origin", own}};
    if (!guess.empty()) h.emplace_back("X-Dashboard-Key", guess);
    for (const char* path : {"/dashboard/events", "/dashboard/log?server=f"})
      EXPECT_EQ(get_status(path, h), 403) << path << " with " << guess;
    EXPECT_EQ(act(h, restart).status, 403) << guess;
  }
  // The key without the cookie: not logged in.
  EXPECT_EQ(act({{"X-Dashboard-Key", key}}, restart).status, 401);
  // The whole session, from another local port's page: refused before the dashboard sees it.
  for (const std::string& origin :
       {"http://127.0.0.1:" + std::to_string(port_ + 1), std::string("http://localhost:8080")}) {
    const header_list h = {{"Cookie", cookies}, {"X-Dashboard-Key", key}, {"Origin", origin}};
    EXPECT_EQ(get_status("/", h), 403) << origin;
    EXPECT_EQ(get_status("/dashboard/events", h), 403) << origin;
    EXPECT_EQ(act(h, restart).status, 403) << origin;
  }
  EXPECT_EQ(status_of(ctl, "f").restarts, restarts) << "a replay restarted the server";

  // The page's own flow: the cookie and the key, from its own origin.
  const header_list session = {{"Cookie", cookies}, {"X-Dashboard-Key", key}, {"Origin", own}};
  auto tools = act(session, R"({"method":"mcpmux/tools","params":{"server":"f"}})");
  EXPECT_EQ(tools.status, 200) << tools.body;
  EXPECT_TRUE(tools.json().at_pointer("/result/tools").is_array()) << tools.body;
  http_conn events(port_);
  ASSERT_TRUE(events.send_all(request_text("GET", "/dashboard/events", port_, session, {})));
  auto head = events.read_head();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  auto first = events.next_event(2s);
  ASSERT_TRUE(first);
  EXPECT_TRUE(contains(first->data, R"("name":"f")")) << first->data;
}

}  // namespace
}  // namespace mcpmux::test
