#include "daemon/dashboard.hpp"

#include <algorithm>
#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "base/random.hpp"
#include "core/manager.hpp"

namespace mcpmux {
namespace {

using namespace std::chrono_literals;
using clock = std::chrono::steady_clock;

constexpr std::string_view cookie_name = "mcpmux_dashboard";
constexpr auto code_life = 2min;
constexpr auto session_life = 12h;
constexpr std::size_t max_codes = 16, max_browsers = 32;

// The control methods the page may call: what it shows and what a person may do there.
constexpr std::array<std::string_view, 8> page_methods = {
    "mcpmux/restart", "mcpmux/reload",     "mcpmux/quarantine",  "mcpmux/trust",
    "mcpmux/logs",    "mcpmux/auth/login", "mcpmux/auth/logout", "mcpmux/tools"};

// Every answer of the web side: nothing from elsewhere, no framing, no sniffing, no caching.
void harden(web_response& r) {
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'none'; script-src 'self'; style-src 'self'; "
                         "img-src 'self' data:; connect-src 'self'; base-uri 'none'; "
                         "form-action 'none'; frame-ancestors 'none'");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  r.headers.emplace_back("Cache-Control", "no-store");
}

web_response text(unsigned status, std::string body,
                  std::string content_type = "text/plain; charset=utf-8") {
  web_response r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.body = std::move(body);
  return r;
}

web_response json_answer(unsigned status, const json::value& v) {
  return text(status, json::serialize(v), "application/json");
}

// The value of `name` in "a=1; b=2" (a Cookie header, sep ';') or "a=1&b=2" (a query, sep
// '&'; the values here are hex, so nothing needs decoding).
std::string_view value_of(std::string_view text, char sep, std::string_view name) {
  while (!text.empty()) {
    const auto end = text.find(sep);
    auto pair = text.substr(0, end);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name &&
        pair[name.size()] == '=')
      return pair.substr(name.size() + 1);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return {};
}

// One log line as a server-sent event: a JSON string, so that nothing in it can end the event.
std::string line_event(std::string_view line) {
  return "event: line\ndata: " + json::serialize(json::string(line)) + "\n\n";
}

// Equal in time independent of where they differ.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

clock::time_point expiry(clock::time_point t) {
  return t;
}
template <class T>
clock::time_point expiry(const T& v) {
  return v.expires;
}

// Drops what expired, then the oldest (the soonest to expire) beyond `keep`.
template <class Map>
void drop_expired(Map& m, clock::time_point now, std::size_t keep) {
  std::erase_if(m, [&](const auto& kv) { return expiry(kv.second) <= now; });
  while (m.size() > keep)
    m.erase(std::min_element(m.begin(), m.end(), [](const auto& a, const auto& b) {
      return expiry(a.second) < expiry(b.second);
    }));
}

}  // namespace

std::optional<result<json::value>> dashboard::handle(std::string_view method, const json::object&) {
  if (method != "mcpmux/dashboard/login") return std::nullopt;
  if (base_url_.empty())  // no [daemon] http: the page alone, started now
    if (auto started = start_ ? start_() : failure("no endpoint to start"); !started)
      return failure("the dashboard's page did not start: " + started.error().message);
  auto code = random_hex(32);
  if (!code) return rpc_error{rpc_code::internal_error, "no random bytes for a login", nullptr};
  const auto now = clock::now();
  drop_expired(codes_, now, max_codes - 1);
  codes_[*code] = now + code_life;
  return json::value(json::object{{"url", base_url_ + "/login?code=" + *code},
                                  {"base_url", base_url_},
                                  {"expires_in_s", std::chrono::seconds(code_life).count()}});
}

const dashboard::browser* dashboard::session_of(const web_request& r) {
  const auto value = value_of(r.cookie, ';', cookie_name);
  if (value.empty()) return nullptr;
  const auto now = clock::now();
  drop_expired(browsers_, now, max_browsers);
  for (const auto& [cookie, b] : browsers_)
    if (same_secret(cookie, value)) return &b;
  return nullptr;
}

std::optional<web_response> dashboard::refusal(const web_request& r, const browser* b) {
  if (!r.token.empty()) return std::nullopt;
  if (!b) return json_answer(401, json::object{{"error", "not logged in"}});
  if (!same_secret(r.key, b->key))
    return json_answer(403, json::object{{"error", "missing or wrong X-Dashboard-Key"}});
  return std::nullopt;
}

web_response dashboard::handle(const web_request& r) {
  web_response out;
  const auto* b = session_of(r);
  const bool get = r.method == "GET";
  if (r.path == "/dashboard.css" || r.path == "/dashboard.js") {
    // No secret in them: served to anyone who passed Host and Origin.
    out = text(
        200, std::string(r.path == "/dashboard.css" ? dashboard_css : dashboard_js),
        r.path == "/dashboard.css" ? "text/css; charset=utf-8" : "text/javascript; charset=utf-8");
  } else if (r.path == "/login") {
    out = login(r);
  } else if (r.path == "/" && get) {
    if (b) {
      out = page({});  // a reload: the tab has the key already; a cookie alone gets none
    } else if (!r.token.empty()) {
      out = login(r);  // a bearer token is as good as a login link
    } else {
      out = text(401,
                 "This is mcpmux's dashboard. Open it with `mcpmux dashboard`, which prints a "
                 "one-time login link.\n");
    }
  } else if ((r.path == "/dashboard/events" || r.path == "/dashboard/log") && get) {
    if (auto no = refusal(r, b))
      out = std::move(*no);
    else
      out = r.path == "/dashboard/events" ? events() : follow_log(r);
  } else if (r.path == "/dashboard/action") {
    out = action(r, b);
  } else {
    out = text(404, "Not Found\n");
  }
  harden(out);
  return out;
}

// A one-time code (or a bearer token) becomes a browser session: the cookie, and the page with
// the session's key, which no later answer carries again.
web_response dashboard::login(const web_request& r) {
  const auto now = clock::now();
  drop_expired(codes_, now, max_codes);
  bool ok = !r.token.empty();
  const auto given = value_of(r.query, '&', "code");
  for (auto it = codes_.begin(); !ok && it != codes_.end(); ++it)
    if (same_secret(it->first, given)) {
      codes_.erase(it);  // once
      ok = true;
      break;
    }
  if (!ok)
    return text(403,
                "This login link is not valid (each works once, for two minutes). Run `mcpmux "
                "dashboard` for a new one.\n");
  auto cookie = random_hex(32);
  auto key = random_hex(32);
  if (!cookie || !key) return text(500, "no random bytes for a session\n");
  drop_expired(browsers_, now, max_browsers - 1);
  browsers_[*cookie] = {*key, now + session_life};
  web_response out = page(*key);
  out.headers.emplace_back("Set-Cookie",
                           std::string(cookie_name) + "=" + *cookie +
                               "; Path=/; HttpOnly; SameSite=Strict; Max-Age=" +
                               std::to_string(std::chrono::seconds(session_life).count()));
  return out;
}

web_response dashboard::page(std::string_view key) const {
  std::string html(dashboard_html);
  if (auto at = html.find("{{KEY}}"); at != std::string::npos) html.replace(at, 7, key);
  return text(200, std::move(html), "text/html; charset=utf-8");
}

// The status, with each server's last hour for the sparklines.
std::string dashboard::status_json() const {
  auto status = m_.control("mcpmux/status", {}, 0).value();
  if (auto* o = status.if_object()) (*o)["history"] = history_json(*o);
  return json::serialize(status);
}

void dashboard::sample() {
  const auto status = m_.control("mcpmux/status", {}, 0).value();
  const auto* servers = status.as_object().if_contains("servers");
  if (!servers || !servers->is_array()) return;
  std::map<std::string, history, std::less<>> next;
  for (const auto& s : servers->get_array()) {
    const auto& o = s.as_object();
    const std::string name(o.at("name").as_string());
    auto& h = next[name];
    if (auto it = history_.find(name); it != history_.end()) h = std::move(it->second);
    const auto calls = o.at("calls").to_number<std::int64_t>();
    const auto errors = o.at("errors").to_number<std::int64_t>();
    // A restart of the daemon's count (a new upstream after a reload) is a fresh start.
    const bool known = h.calls_total >= 0 && calls >= h.calls_total;
    h.calls.push_back(known ? calls - h.calls_total : 0);
    h.errors.push_back(known ? std::max<std::int64_t>(0, errors - h.errors_total) : 0);
    const auto* p50 = o.if_contains("latency_p50_us");
    h.p50_us.push_back(p50 && p50->is_number() ? p50->to_number<std::int64_t>() : -1);
    h.calls_total = calls;
    h.errors_total = errors;
    for (auto* q : {&h.calls, &h.errors, &h.p50_us})
      while (q->size() > samples_kept) q->pop_front();
  }
  history_ = std::move(next);  // servers gone are forgotten
  changed();
}

json::object dashboard::history_json(const json::object& status) const {
  // The counts now, for the minute so far.
  std::map<std::string_view, const json::object*> now;
  if (const auto* servers = status.if_contains("servers"); servers && servers->is_array())
    for (const auto& s : servers->get_array())
      if (const auto* o = s.if_object()) now.emplace(o->at("name").get_string(), o);
  json::object out;
  for (const auto& [name, h] : history_) {
    auto array = [](const std::deque<std::int64_t>& q) {
      json::array a;
      a.reserve(q.size() + 1);
      for (auto v : q) a.push_back(v);
      return a;
    };
    auto calls = array(h.calls), errors = array(h.errors), p50 = array(h.p50_us);
    if (auto it = now.find(name); it != now.end() && h.calls_total >= 0) {
      const auto& o = *it->second;
      const auto total = o.at("calls").to_number<std::int64_t>();
      calls.push_back(std::max<std::int64_t>(0, total - h.calls_total));
      errors.push_back(
          std::max<std::int64_t>(0, o.at("errors").to_number<std::int64_t>() - h.errors_total));
      const auto* v = o.if_contains("latency_p50_us");
      p50.push_back(v && v->is_number() ? v->to_number<std::int64_t>() : -1);
    }
    out[name] = json::object{{"interval_s", sample_interval.count()},
                             {"calls", std::move(calls)},
                             {"errors", std::move(errors)},
                             {"p50_us", std::move(p50)}};
  }
  return out;
}

// The status at once, then whenever the daemon's state changes, and every two seconds for the
// counts and times.
web_response dashboard::events() const {
  web_response out;
  out.events = [this, seen = std::uint64_t(0), sent = clock::time_point()]() mutable {
    const auto now = clock::now();
    if (version_ == seen && now - sent < 2s) return std::string();
    seen = version_;
    sent = now;
    return "event: status\ndata: " + status_json() + "\n\n";
  };
  return out;
}

// A server's log as it grows: its last lines, then each new one, as `line` events (each a JSON
// string). A page that falls behind by more than max_log_pending loses lines, and is told how
// many.
web_response dashboard::follow_log(const web_request& r) {
  const auto name = value_of(r.query, '&', "server");
  auto up = m_.find_upstream(name);
  if (!up) return text(404, "no server named \"" + std::string(name.substr(0, 64)) + "\"\n");
  auto f = std::make_shared<log_follower>();
  for (const auto& line : up->log_lines(log_backlog_lines)) f->pending += line_event(line);
  followers_[up->name()].push_back(f);
  web_response out;
  out.events = [f] {
    auto text = std::exchange(f->pending, {});
    if (f->dropped)
      text += line_event(
          fmt::format("[{} lines not shown: the page fell behind]", std::exchange(f->dropped, 0)));
    return text;
  };
  return out;
}

void dashboard::on_log(const std::string& server, const std::string& line) {
  auto it = followers_.find(server);
  if (it == followers_.end()) return;
  std::erase_if(it->second, [](const auto& w) { return w.expired(); });
  if (it->second.empty()) {
    followers_.erase(it);
    return;
  }
  const auto event = line_event(line);
  for (const auto& w : it->second) {
    auto f = w.lock();
    if (f->pending.size() + event.size() > max_log_pending)
      ++f->dropped;
    else
      f->pending += event;
  }
}

// POST {"method", "params"} with the session's key (or a bearer token): a control method the
// page may call, answered as {"result"} or {"error"}.
web_response dashboard::action(const web_request& r, const browser* b) {
  if (r.method != "POST") return text(405, "POST only\n");
  if (auto no = refusal(r, b)) return std::move(*no);
  if (r.content_type.substr(0, 16) != "application/json")
    return json_answer(415, json::object{{"error", "the body must be application/json"}});
  boost::system::error_code ec;
  auto body = json::parse(r.body, ec);
  const auto* o = body.if_object();
  const auto* method = o ? o->if_contains("method") : nullptr;
  if (ec || !method || !method->is_string())
    return json_answer(400, json::object{{"error", "expected {\"method\", \"params\"}"}});
  const std::string_view name = method->get_string();
  if (std::find(page_methods.begin(), page_methods.end(), name) == page_methods.end())
    return json_answer(403, json::object{{"error", "not a method the page may call"}});
  json::object params;
  if (const auto* p = o->if_contains("params"); p && p->is_object()) params = p->get_object();
  params.erase("follow");  // a page request gets lines, not a stream on a session it lacks
  auto answer = m_.control(name, params, 0);
  if (const auto* e = answer.if_error())
    return json_answer(200, json::object{{"error", json::object{{"code", static_cast<int>(e->code)},
                                                                {"message", e->message},
                                                                {"data", e->data}}}});
  return json_answer(200, json::object{{"result", *answer}});
}

}  // namespace mcpmux
