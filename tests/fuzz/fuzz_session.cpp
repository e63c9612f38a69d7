// Fuzzes a session's handling of arbitrary client bytes, without sockets: a manager with no
// servers, an in-memory transport, the input framed as NDJSON. Every reply must be one valid
// JSON-RPC line, and every request (and every rejected line) must get exactly one answer.
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/log.hpp"
#include "config/config.hpp"
#include "core/manager.hpp"
#include "core/session.hpp"
#include "protocol/error.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/ndjson.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace mcpmux;

constexpr std::size_t max_message = 4096;

// Records what the session sends; start() keeps the events so the fuzzer can deliver messages.
class fake_transport : public transport {
 public:
  void start(transport_events& events) override { events_ = &events; }
  std::error_code send(std::string message) override {
    if (closed_) return make_error_code(errc::transport_closed);
    sent_.push_back(std::move(message));
    return {};
  }
  void close() override { closed_ = true; }
  std::size_t queued_bytes() const override { return 0; }

  transport_events* events_ = nullptr;
  std::vector<std::string> sent_;
  bool closed_ = false;
};

// What the session must send for one line: nothing, or one answer under `id`.
struct expectation {
  bool answer = false;
  json::value id;
  bool error_only = false;  // a rejected line is answered with an error
};

expectation expect(message_parser& p, std::string_view line) {
  auto parsed = p.parse(line);
  if (auto* err = parsed.if_error()) return {true, err->id, true};
  auto& m = parsed.value();
  if (m.kind == message_kind::request) return {true, m.id(), false};
  return {};
}

void check_reply(message_parser& p, const std::string& text, const expectation& want) {
  FUZZ_CHECK(text.find('\n') == std::string::npos, "reply contains a raw newline: %s",
             text.c_str());
  auto parsed = p.parse(text);
  auto* err = parsed.if_error();
  FUZZ_CHECK(!err, "reply is not valid JSON-RPC (%s): %s", err ? err->message.c_str() : "",
             text.c_str());
  const auto& m = parsed.value();
  FUZZ_CHECK(m.kind == message_kind::response || m.kind == message_kind::error_response,
             "answer is not a response: %s", text.c_str());
  FUZZ_CHECK(m.id() == want.id, "answer has id %s, wanted %s", json::serialize(m.id()).c_str(),
             json::serialize(want.id).c_str());
  if (want.error_only)
    FUZZ_CHECK(m.kind == message_kind::error_response, "rejected line answered with a result");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool quiet = [] {
    // Trace level with a sink that drops lines: the formatting of every log call still runs.
    set_log_sink([](log_level, std::string_view, std::string_view) {});
    set_log_level(log_level::trace);
    return true;
  }();
  (void)quiet;

  boost::asio::io_context io;
  config cfg;
  cfg.source = "<fuzz>";
  cfg.daemon.max_message_bytes = max_message;
  // No servers, so no connection is ever opened.
  auto mgr = std::make_unique<manager>(
      io, std::move(cfg), daemon_info{},
      [](const channel_request&) { return result<opened_channel>(failure("no channels here")); });
  mgr->start();
  auto t = std::make_shared<fake_transport>();
  auto s = session::start(*mgr, t, 1);
  FUZZ_CHECK(t->events_ != nullptr, "session did not start its transport");

  message_parser mine, check;
  ndjson_framer framer(max_message);
  std::size_t requests = 0, answers = 0;
  const auto on_line = [&](std::string_view line) {
    if (t->closed_) return;
    const expectation want = expect(mine, line);
    const std::size_t before = t->sent_.size();
    t->events_->on_message(line);
    io.restart();
    io.poll();
    const std::size_t sent = t->sent_.size() - before;
    FUZZ_CHECK(sent == (want.answer ? 1u : 0u), "%zu messages sent for a line that needs %d: %.*s",
               sent, want.answer ? 1 : 0, static_cast<int>(line.size() > 300 ? 300 : line.size()),
               line.data());
    if (want.answer) {
      ++requests;
      ++answers;
      check_reply(check, t->sent_.back(), want);
    }
  };
  const auto on_oversize = [&](std::size_t bytes) {
    if (t->closed_) return;
    const std::size_t before = t->sent_.size();
    t->events_->on_oversize(bytes);
    io.restart();
    io.poll();
    FUZZ_CHECK(t->sent_.size() == before + 1, "oversize line not answered once");
    check_reply(check, t->sent_.back(), {true, nullptr, true});
    FUZZ_CHECK(t->closed_, "session stayed open after an oversize line");
  };
  framer.feed(std::string_view(reinterpret_cast<const char*>(data), size), on_line, on_oversize);
  FUZZ_CHECK(requests == answers, "%zu requests, %zu answers", requests, answers);

  // Tear down as the daemon does at shutdown.
  mgr->close_sessions();
  FUZZ_CHECK(t->closed_, "session did not close its transport");
  FUZZ_CHECK(mgr->clients() == 0, "session still attached after close");
  s.reset();
  io.restart();
  io.poll();
  mgr.reset();
  return 0;
}
