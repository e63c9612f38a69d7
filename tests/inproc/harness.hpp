// The in-process harness: a manager built from a configuration, whose servers are scripted by
// the test through fake channels (core/channel.hpp), and clients that talk to sessions over
// fake transports. No processes, no sockets, no sleeps: run() drives the loop with poll() until
// nothing is left to do, and advance() moves core's clock (tests/inproc/fake_clock.hpp).
//
// Tests speak messages only: what a client sends and receives, what a server receives and
// answers. They do not reach into sessions or upstreams, so they hold across rewrites of the
// call path.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/channel.hpp"
#include "core/manager.hpp"
#include "core/session.hpp"
#include "tests/unit/env_guard.hpp"

namespace mcpmux::test {

namespace json = boost::json;
using namespace std::chrono_literals;

/// An in-memory connection seen from core: what core sends is recorded (parsed), and what the
/// other end says reaches core on the next poll, as a real transport's read would.
class fake_channel final : public transport, public std::enable_shared_from_this<fake_channel> {
 public:
  explicit fake_channel(boost::asio::io_context& io) : io_(io) {}

  void start(transport_events& events) override { events_ = &events; }
  std::error_code send(std::string text) override;
  void close() override;
  std::size_t queued_bytes() const override { return 0; }

  /// The other end says `msg`.
  void deliver(const json::object& msg);
  /// The other end goes away (EOF): core hears on_closed.
  void hang_up(std::string why);
  bool closed() const { return closed_; }

  std::vector<json::object> sent;  ///< what core sent, in order
  std::function<void(const json::object&)> on_sent;

 private:
  boost::asio::io_context& io_;
  transport_events* events_ = nullptr;
  bool closed_ = false;
};

/// A configured server's other end, scripted by the test; one fake_channel per connection.
/// By default it answers the handshake of its era (`era = "modern"` in its table, else legacy),
/// lists `tools` and echoes tools/call (`{"text": …}` back as text content); `on_call` replaces
/// the echo.
class fake_server {
 public:
  fake_server(boost::asio::io_context& io, std::string name, bool modern);

  /// The channel factory's answer for this server: a new connection, or none when `refuse`.
  result<opened_channel> open();

  // Scripting.
  std::vector<json::object> tools;
  std::function<void(fake_server&, const json::object& request)> on_call;
  bool refuse = false;  ///< opening a connection fails

  // The server's side of the conversation.
  void answer(const json::object& request, json::value result);
  void fail(const json::object& request, int code, std::string_view text);
  void say(json::object msg);  ///< any message, on the current connection
  void notify(std::string_view method, json::object params = {});
  void hang_up(std::string why = "EOF on stdout");

  /// What it received, over every connection, in order.
  const std::vector<json::object>& received() const { return received_; }
  /// The requests or notifications of `method` it received.
  std::vector<json::object> got(std::string_view method) const;
  int connections() const { return connections_; }
  bool modern() const { return modern_; }

  static json::object echo_tool();

 private:
  void handle(const json::object& msg);

  boost::asio::io_context& io_;
  std::string name_;
  bool modern_;
  std::shared_ptr<fake_channel> channel_;
  std::vector<json::object> received_;
  int connections_ = 0;
};

class mux;

/// A client of the manager over a fake transport (session::start), legacy (`initialize`) or
/// modern (2026-07-28: `_meta` on every request).
class fake_client {
 public:
  fake_client(mux& m, bool modern, json::object capabilities = {});
  ~fake_client();

  /// Sends a request; returns its id (1, 2, …; or `id` when given).
  json::value request(std::string_view method, json::object params = {},
                      std::optional<json::value> id = std::nullopt);
  /// Sends a request, runs the loop, and returns the answer when there is one.
  std::optional<json::object> ask(std::string_view method, json::object params = {},
                                  std::optional<json::value> id = std::nullopt);
  void notify(std::string_view method, json::object params = {});
  void say(const json::object& msg) { channel_->deliver(msg); }
  /// Closes the connection (the client goes away).
  void hang_up() { channel_->hang_up("EOF"); }

  /// Everything it received, in order.
  const std::vector<json::object>& received() const { return channel_->sent; }
  /// The answer (response or error) to request `id`, when it came; fails the test when more
  /// than one came.
  std::optional<json::object> answer(const json::value& id) const;
  /// Notifications and requests of `method` it received.
  std::vector<json::object> got(std::string_view method) const;
  bool closed() const { return channel_->closed(); }

 private:
  mux& mux_;
  bool modern_;
  json::object capabilities_;
  std::shared_ptr<fake_channel> channel_;
  std::shared_ptr<session> session_;
  std::int64_t next_id_ = 1;
};

/// The daemon's core in process: a manager over `toml` (servers need only a name, a command and
/// optionally `era`), its state store in memory and its directories fresh (no test sees
/// another's tool cache or pins), every server a fake_server.
class mux {
 public:
  /// `script` sets up the fake servers before the manager starts them.
  explicit mux(std::string_view toml, std::function<void(mux&)> script = {});
  ~mux();

  /// Runs every ready handler until none is left (the loop is then idle).
  void run();
  /// Moves core's clock forward by `d`, then runs what came due.
  void advance(std::chrono::steady_clock::duration d);
  /// Advances the clock by `step` at a time until `done` holds (at most `limit` in all); false
  /// when it never did.
  bool advance_until(const std::function<bool()>& done,
                     std::chrono::steady_clock::duration step = 100ms,
                     std::chrono::steady_clock::duration limit = 60s);
  /// Reloads with a new configuration text (mcpmux/reload's work).
  json::value reload(std::string_view toml);

  fake_server& server(const std::string& name) { return *servers_.at(name); }
  manager& mgr() { return *mgr_; }
  boost::asio::io_context& io() { return io_; }
  std::uint64_t next_session_id() { return ++sessions_; }

 private:
  config load(std::string_view toml);

  boost::asio::io_context io_;
  std::string dir_;
  env_guard state_, cache_, config_, runtime_;
  std::map<std::string, std::unique_ptr<fake_server>> servers_;
  std::string next_toml_;
  std::unique_ptr<manager> mgr_;
  std::uint64_t sessions_ = 0;
};

/// `{"text": text}` as the arguments of an echo call.
json::object call_params(std::string_view tool, std::string_view text = "hi");
/// The text of a tools/call result's first content item ("" when none).
std::string result_text(const json::object& response);

}  // namespace mcpmux::test
