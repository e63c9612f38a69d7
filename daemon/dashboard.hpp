// The dashboard: the page the loopback HTTP endpoint serves at /, for a person to see and steer
// the gateway. Who may see it: a browser session made from a one-time login link (`mcpmux
// dashboard` asks for one with mcpmux/dashboard/login), or a request with one of the endpoint's
// bearer tokens. A browser session is two secrets: an HttpOnly, SameSite=Strict cookie, and a
// key that only the login's answer carries, which the page keeps in its tab's sessionStorage
// and sends as a header on every request. Cookies are scoped by host, not port, so another
// local web server receives this one: what a browser sends by itself must never be enough, and
// without the key the cookie gets the page's bare shell only, no state and no action. Every
// state-changing action is a POST and a control method: the page does nothing the CLI cannot.
// The page, its style and script come from the binary, under a strict Content-Security-Policy,
// and load nothing from anywhere else. Live state comes as server-sent events (read with fetch,
// which can send the key): the status whenever the daemon's state changes, and every two
// seconds for the counts.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/control.hpp"
#include "transports/http_endpoint.hpp"

namespace mcpmux {

class manager;

class dashboard final : public control_extension {
 public:
  explicit dashboard(manager& m) : m_(m) {}

  /// The endpoint's address once it is bound ("http://127.0.0.1:PORT").
  void set_base_url(std::string url) { base_url_ = std::move(url); }
  /// Without [daemon] http, the first login starts an endpoint for the page alone: `start`
  /// binds it (and calls set_base_url), or fails saying why it could not.
  void set_endpoint_starter(std::function<result<>()> start) { start_ = std::move(start); }
  /// The daemon's state changed: open pages hear of it.
  void changed() { ++version_; }
  /// Answers a request of the endpoint's web side.
  web_response handle(const web_request& r);
  /// Takes a minute's figures of every server (the daemon calls it every sample_interval): the
  /// page draws the last hour of them.
  void sample();
  static constexpr std::chrono::seconds sample_interval{60};
  static constexpr std::size_t samples_kept = 60;

  // control_extension: mcpmux/dashboard/login → {"url"}: a one-time link, good for 2 minutes.
  std::optional<result<json::value>> handle(std::string_view method,
                                            const json::object& params) override;
  void describe(const std::string&, json::object&) const override {}
  /// A server's log line: the pages following that log get it.
  void on_log(const std::string& server, const std::string& line) override;
  static constexpr std::size_t log_backlog_lines = 200;       ///< sent when a page starts following
  static constexpr std::size_t max_log_pending = 256 * 1024;  ///< unsent bytes per page

 private:
  struct browser {
    std::string key;  ///< must come as X-Dashboard-Key with every request but the page's shell
    std::chrono::steady_clock::time_point expires;
  };
  /// The browser session the request's cookie names (null: none, or expired).
  const browser* session_of(const web_request& r);
  /// Why a request for the session's state or actions is refused (nullopt: it may pass).
  static std::optional<web_response> refusal(const web_request& r, const browser* b);
  /// The page, with the session's key in it ("": the shell a reload gets from the cookie).
  web_response page(std::string_view key) const;
  web_response login(const web_request& r);
  web_response events() const;
  web_response action(const web_request& r, const browser* b);
  web_response follow_log(const web_request& r);
  std::string status_json() const;

  manager& m_;
  std::string base_url_;
  std::uint64_t version_ = 1;
  std::map<std::string, std::chrono::steady_clock::time_point> codes_;  ///< one-time login codes
  std::map<std::string, browser> browsers_;                             ///< by cookie value
  /// One server's last hour: calls and failed calls per interval, p50 in µs (-1: none).
  struct history {
    std::int64_t calls_total = -1, errors_total = 0;  ///< at the last sample
    std::deque<std::int64_t> calls, errors, p50_us;
  };
  std::map<std::string, history, std::less<>> history_;
  /// Each server's last hour, the minute so far last (from the status's counts now).
  json::object history_json(const json::object& status) const;
  std::function<result<>()> start_;
  /// A page following a server's log: what is not sent yet.
  struct log_follower {
    std::string pending;
    std::size_t dropped = 0;  ///< lines dropped while the page fell behind
  };
  std::map<std::string, std::vector<std::weak_ptr<log_follower>>, std::less<>> followers_;
};

/// The page's three parts, served from the binary (daemon/dashboard_page.cpp).
extern const std::string_view dashboard_html;  ///< with "{{KEY}}" where the session's key goes
extern const std::string_view dashboard_css;
extern const std::string_view dashboard_js;

}  // namespace mcpmux
