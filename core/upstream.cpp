// Upstream: one server's lifecycle — connect, the handshake, its lists and notes, liveness and
// failure reporting. Calls through it, both ways, are in upstream_calls.cpp.
#include "core/upstream.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/json/serialize.hpp>
#include <random>
#include <set>

#include "core/protocol/error.hpp"
#include "core/rpc_peer.hpp"
#include "core/tool_cache.hpp"
#include "core/upstream_detail.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;

constexpr std::size_t log_ring_size = 1000;
constexpr std::size_t latency_ring_size = 1024;

}  // namespace

rpc_outcome error_reply(int code, std::string text) {
  json::object err;
  err["code"] = code;
  err["message"] = std::move(text);
  json::object body;
  body["jsonrpc"] = "2.0";
  body["id"] = nullptr;
  body["error"] = std::move(err);
  return {{}, message{message_kind::error_response, std::move(body)}};
}

void upstream_stats::record(std::chrono::microseconds d, bool error) {
  ++calls;
  if (error) ++errors;
  const auto us = static_cast<std::uint32_t>(std::min<std::int64_t>(d.count(), UINT32_MAX));
  if (latencies_us.size() < latency_ring_size)
    latencies_us.push_back(us);
  else
    latencies_us[latency_next] = us;
  latency_next = (latency_next + 1) % latency_ring_size;
}

std::optional<std::uint32_t> upstream_stats::percentile(double p) const {
  if (latencies_us.empty()) return std::nullopt;
  auto v = latencies_us;
  auto k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

namespace {

// Versions are unique across upstream objects, so a server replaced by reload never looks
// unchanged to the manager.
std::uint64_t new_lists_version() {
  static std::uint64_t last = 0;
  return ++last;
}

double random01() {
  static std::minstd_rand gen(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
}

backoff_policy policy_for(const daemon_config& d) {
  backoff_policy p;
  p.max = d.reconnect_max;
  return p;
}

}  // namespace

upstream::upstream(asio::io_context& io, server_config cfg, const daemon_config& daemon,
                   upstream_observer& observer, channel_factory open)
    : io_(io),
      open_(std::move(open)),
      cfg_(std::move(cfg)),
      daemon_(daemon),
      observer_(observer),
      log_("upstream " + cfg_.name),
      timeout_(effective_timeout(cfg_, daemon_)),
      lc_(policy_for(daemon_), random01),
      timers_(std::make_unique<timer_holder>(io)),
      lists_version_(new_lists_version()) {
  if (!cfg_.enabled) return;
  std::string warning;
  if (auto cached = load_cached_tools(cache_dir(), cfg_, &warning)) {
    lists_[0] = std::move(*cached);
    tools_from_cache_ = true;
    log_.info("serving {} cached tools until connected", tools().size());
  } else if (!warning.empty()) {
    log_.warn("{}", warning);
  }
}

upstream::~upstream() {
  queue_.clear();  // nobody is left to tell
  if (peer_) peer_->close();
}

std::optional<std::chrono::milliseconds> upstream::timeout_opt() const {
  if (timeout_.count() == 0) return std::nullopt;
  return timeout_;
}

void upstream::start() {
  started_ = true;
  perform(lc_.start(steady_clock::now(), cfg_.enabled));
}

bool upstream::settled() const {
  if (!started_) return !cfg_.enabled || tools_from_cache_;  // its start is still to come
  return state() != upstream_state::connecting || ever_ready_ || tools_from_cache_;
}

void upstream::perform(lifecycle::step st) {
  observer_.on_upstream_changed(cfg_.name);
  switch (st.what) {
    case lifecycle::action::none:
      return;
    case lifecycle::action::connect:
      return connect();
    case lifecycle::action::wait:
      note("reconnecting in " + std::to_string(st.delay.count()) + "ms (attempt " +
           std::to_string(lc_.attempt()) + ")");
      timers_->backoff.expires_after(st.delay);
      timers_->backoff.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        if (auto self = weak.lock(); self && !ec)
          self->perform(self->lc_.on_timer(steady_clock::now()));
      });
      return;
  }
}

void upstream::stop() {
  if (state() == upstream_state::stopped) return;
  ++generation_;
  timers_->handshake.cancel();
  timers_->backoff.cancel();
  timers_->ping.cancel();
  timers_->queue.cancel();
  // The state moves first: calls failing as the connection closes must see it.
  const auto step = lc_.stop();
  if (auto p = std::exchange(peer_, nullptr)) p->close();
  pid_ = -1;
  ready_since_.reset();
  note("stopped");
  perform(step);
  auto q = std::move(queue_);
  queue_.clear();
  for (auto& [token, c] : q)
    c->done(
        error_reply(rpc_code::connection_closed, "MCP server \"" + cfg_.name + "\" was stopped"));
}

void upstream::restart() {
  if (!cfg_.enabled || state() == upstream_state::stopped) return;
  ++generation_;  // the old connection's close is expected, not a failure
  timers_->handshake.cancel();
  timers_->backoff.cancel();
  timers_->ping.cancel();
  // The state moves first: calls failing as the connection closes wait for the new one.
  const auto step = lc_.restart(steady_clock::now());
  if (auto p = std::exchange(peer_, nullptr)) p->close();
  pid_ = -1;
  ready_since_.reset();
  note("restart requested");
  log_.info("restarting");
  perform(step);
}

void upstream::set_daemon_config(const daemon_config& d) {
  daemon_ = d;
  timeout_ = effective_timeout(cfg_, daemon_);
  lc_.set_policy(policy_for(daemon_));
}

void upstream::note(std::string line) {
  if (log_ring_.size() >= log_ring_size) log_ring_.pop_front();
  log_ring_.push_back(std::move(line));
  observer_.on_upstream_log(cfg_.name, log_ring_.back());
}

std::vector<std::string> upstream::log_lines(std::size_t n) const {
  n = std::min(n, log_ring_.size());
  return {log_ring_.end() - static_cast<std::ptrdiff_t>(n), log_ring_.end()};
}

// A connection from the daemon's channel factory: a spawned child, or an HTTP endpoint.
std::shared_ptr<transport> upstream::open_channel() {
  channel_request req{cfg_, timeout_, {}, {}};
  req.limits.max_message_bytes = daemon_.max_message_bytes;
  req.limits.max_queue_bytes = daemon_.max_client_queue_bytes;
  if (cfg_.type == server_type::stdio) {
    req.on_stderr = [weak = weak_from_this()](std::string_view raw) {
      if (raw.find_first_not_of(" \t\r") == std::string_view::npos) return;  // explains nothing
      if (auto self = weak.lock()) {
        auto line = valid_utf8(raw);  // it ends up in status JSON
        self->log_.debug("stderr: {}", line);
        self->note("stderr: " + line);
      }
    };
  } else {
    // The URL is not logged: its query may carry a secret.
    note("connecting to the " + std::string(to_string(cfg_.type)) + " endpoint");
    log_.info("connecting ({})", to_string(cfg_.type));
  }
  auto opened = open_(req);
  if (!opened.channel) {
    fail(opened.error);
    return nullptr;
  }
  if (opened.pid > 0) {
    pid_ = opened.pid;
    note("started pid " + std::to_string(pid_));
    log_.info("started pid {}: {}", pid_, cfg_.command);
  }
  return opened.channel;
}

void upstream::connect() {
  const auto gen = ++generation_;
  if (ever_ready_ || lc_.attempt() > 0) ++stats_.restarts;
  auto channel = open_channel();
  if (!channel) return;  // fail() has said why

  rpc_peer_handlers h;
  h.on_request = [weak = weak_from_this()](message m) {
    if (auto self = weak.lock()) self->handle_request(m);
  };
  h.on_notification = [weak = weak_from_this()](message m) {
    if (auto self = weak.lock()) self->handle_notification(m);
  };
  h.on_closed = [weak = weak_from_this(), gen](std::error_code, std::string reason) {
    auto self = weak.lock();
    if (!self || self->generation_ != gen) return;
    std::string why = "Transport closed: " + reason;
    // The last stderr line is usually the one that explains the exit.
    if (auto last = self->stderr_tail(1); !last.empty()) why += "; last stderr: " + last.front();
    self->fail(std::move(why));
  };
  h.on_bad_message = [weak = weak_from_this()](std::string_view text, std::string_view why) {
    if (auto self = weak.lock()) {
      if (text.empty())
        self->log_.warn("{}", why);
      else
        self->log_.warn("skipped a line from the server ({}): {}", why, clip(text));
    }
  };
  h.on_late_answer = [weak = weak_from_this()](std::int64_t id) {
    if (auto self = weak.lock()) self->log_.debug("dropped the late answer to request {}", id);
  };
  peer_ = rpc_peer::create(io_, std::move(channel), std::move(h));
  peer_->start();

  // The handshake machine decides; this only performs its actions. Its deadline bounds spawn,
  // initialize and tools/list as a whole.
  handshake_ = std::make_unique<legacy_handshake>(timeout_, cfg_.name);
  const auto now = steady_clock::now();
  auto first = handshake_->start(now);
  if (auto deadline = handshake_->deadline()) {
    timers_->handshake.expires_at(*deadline);
    timers_->handshake.async_wait([weak = weak_from_this(), gen](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->generation_ != gen || !self->handshake_) return;
      self->step_handshake(self->handshake_->on_deadline(steady_clock::now()));
    });
  }
  step_handshake(std::move(first));
}

bool upstream::offers(collection c) const {
  return capabilities_.contains(info(c).capability);
}

void upstream::step_handshake(handshake_action a) {
  for (auto& w : handshake_->take_warnings()) log_.warn("{}", w);
  const auto gen = generation_;
  switch (a.what) {
    case handshake_action::send:
      peer_->request(a.method, a.params, a.timeout,
                     [weak = weak_from_this(), gen](rpc_outcome out) {
                       auto self = weak.lock();
                       if (!self || self->generation_ != gen || !self->handshake_) return;
                       const auto now = steady_clock::now();
                       if (out.ec == errc::timeout)
                         return self->step_handshake(self->handshake_->on_no_answer(now));
                       if (out.ec) return;  // closed or stopped: reported through on_closed / stop
                       self->step_handshake(self->handshake_->on_reply(std::move(*out.reply), now));
                     });
      return;
    case handshake_action::notify:
      peer_->notify(a.method, a.params);
      if (a.method == "notifications/initialized") send_log_level();
      return step_handshake(handshake_->on_done(steady_clock::now()));
    case handshake_action::open_listener: {
      const auto& name = handshake_->server_name();
      log_.info("initialized: {} protocol {}", name.empty() ? "(unnamed)" : name,
                a.protocol_version);
      capabilities_ = handshake_->capabilities();  // what setLevel and the lists go by
      instructions_ = handshake_->instructions();
      peer_->channel().on_initialized(
          a.protocol_version, a.max_wait, [weak = weak_from_this(), gen] {
            auto self = weak.lock();
            if (!self || self->generation_ != gen || !self->handshake_ || !self->peer_) return;
            self->step_handshake(self->handshake_->on_done(steady_clock::now()));
          });
      return;
    }
    case handshake_action::wait:
      return;
    case handshake_action::ready:
      return finish_handshake();
    case handshake_action::fail:
      handshake_.reset();
      return fail(std::move(a.error));
  }
}

// Takes the lists the handshake gathered: good ones are stored, failed ones noted.
void upstream::finish_handshake() {
  auto hs = std::move(handshake_);
  for (std::size_t i = 0; i < collection_count; ++i) {
    const auto c = static_cast<collection>(i);
    auto& got = hs->lists()[i];
    if (!got.error.empty()) {
      list_failed(c, std::move(got.error));
    } else {
      clear_note(info(c).method);
      if (c == collection::tools || got.asked)
        store_list(c, std::move(got.items));
      else
        set_list(c, {});
    }
  }
  become_ready();
}

void upstream::list_failed(collection c, std::string why) {
  const auto& ci = info(c);
  set_list(c, {});
  if (c == collection::tools) tools_from_cache_ = false;
  if (!offers(c)) {
    log_.debug("{} (the server does not declare \"{}\")", why, ci.capability);
    return;
  }
  // One warning per new failure: the same refusal after a reconnect is no news.
  if (has_note(ci.method, why))
    log_.debug("{} (again)", why);
  else
    log_.warn("{}; serving no {} from this server until it announces a change or reconnects", why,
              ci.key);
  if (c == collection::tools) last_error_ = why;  // kept after a recovery, like every last error
  set_note(ci.method, std::move(why));
}

void upstream::store_list(collection c, std::vector<json::object> items) {
  const bool changed = set_list(c, std::move(items));
  if (c != collection::tools) return;
  // The entry on disk already holds an unchanged list that came from it: rewriting it (a rename
  // over the old file, which the filesystem flushes) would cost each of a hundred starting servers.
  if (changed) store_cache();
  tools_from_cache_ = false;
}

bool upstream::set_list(collection c, std::vector<json::object> items) {
  auto& list = lists_[static_cast<std::size_t>(c)];
  if (list == items) return false;
  list = std::move(items);
  lists_version_ = new_lists_version();
  return true;
}

bool upstream::has_note(std::string_view about, std::string_view text) const {
  return std::any_of(notes_.begin(), notes_.end(),
                     [&](auto& n) { return n.first == about && n.second == text; });
}

void upstream::set_note(std::string_view about, std::string text) {
  auto it = std::find_if(notes_.begin(), notes_.end(), [&](auto& n) { return n.first == about; });
  if (it != notes_.end() && it->second == text) return;
  note("note: " + text);
  if (it != notes_.end())
    it->second = std::move(text);
  else
    notes_.emplace_back(std::string(about), std::move(text));
  observer_.on_upstream_changed(cfg_.name);
}

void upstream::clear_note(std::string_view about) {
  auto it = std::find_if(notes_.begin(), notes_.end(), [&](auto& n) { return n.first == about; });
  if (it == notes_.end()) return;
  notes_.erase(it);
  observer_.on_upstream_changed(cfg_.name);
}

std::vector<std::string> upstream::notes() const {
  std::vector<std::string> out;
  for (const auto& n : notes_) out.push_back(n.second);
  return out;
}

void upstream::become_ready() {
  timers_->handshake.cancel();
  ready_since_ = steady_clock::now();
  ever_ready_ = true;
  live_ = liveness(cfg_.ping_interval, timeout_);
  note("ready with " + std::to_string(tools().size()) + " tools");
  log_.info("ready with {} tools", tools().size());
  perform(lc_.on_ready(steady_clock::now()));
  observer_.on_upstream_ready(cfg_.name, *this);
  flush_queue();
  schedule_ping();
}

void upstream::store_cache() {
  std::string error;
  if (!store_cached_tools(cache_dir(), cfg_, tools(), &error)) log_.warn("tool cache: {}", error);
}

// Liveness: a server that misses two pings in a row is hung; reconnecting is the only cure.
void upstream::schedule_ping() {
  const auto due = live_.next_ping();
  if (!due) return;
  timers_->ping.expires_after(*due);
  timers_->ping.async_wait(
      [weak = weak_from_this(), gen = generation_](boost::system::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->generation_ != gen || !self->peer_) return;
        self->peer_->request(
            "ping", json::object{}, self->live_.ping_timeout(), [weak, gen](rpc_outcome out) {
              auto s = weak.lock();
              if (!s || s->generation_ != gen) return;
              if (out.ec && out.ec != errc::timeout) return;  // closed: the reconnect pings anew
              const auto verdict = out.ec ? s->live_.on_no_answer() : s->live_.on_answer();
              if (verdict == liveness::verdict::hung)
                return s->fail("no answer to " + std::to_string(liveness::allowed_misses) +
                               " pings in a row (server hung?)");
              if (verdict == liveness::verdict::missed)
                s->log_.warn("missed a ping ({} in a row)", s->live_.misses());
              s->schedule_ping();
            });
      });
}

void upstream::fail(std::string why) {
  if (state() != upstream_state::connecting && state() != upstream_state::ready) return;
  ++generation_;
  timers_->handshake.cancel();
  timers_->ping.cancel();
  last_error_ = why;
  log_.warn("{}", why);
  note("failed: " + why);
  ready_since_.reset();
  pid_ = -1;
  // The state moves first: calls failing as the connection closes wait for the reconnect.
  const auto step = lc_.on_closed(steady_clock::now(), std::move(why));
  if (auto p = std::exchange(peer_, nullptr)) p->close();
  // Queued calls keep waiting for the reconnect, each bounded by its own deadline.
  perform(step);
  if (crash_looping() && lc_.attempt() == crash_loop_attempts) {
    std::string tail;
    for (const auto& line : stderr_tail(5)) tail += "\n  " + line;
    log_.warn("crash-looping: {} failed attempts in a row, backing off; last: {}{}", lc_.attempt(),
              last_error_, tail.empty() ? "" : "; its last stderr lines:" + tail);
  }
}

std::vector<std::string> upstream::stderr_tail(std::size_t n) const {
  std::vector<std::string> out;
  for (auto it = log_ring_.rbegin(); it != log_ring_.rend() && out.size() < n; ++it) {
    if (it->rfind("started pid ", 0) == 0 && !out.empty()) break;  // an earlier run's lines
    if (it->rfind("stderr: ", 0) == 0) out.push_back(it->substr(8));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

void upstream::notify(std::string_view method, const json::value& params) {
  if (peer_ && state() == upstream_state::ready) peer_->notify(method, params);
}

void upstream::set_log_level(std::string level) {
  if (level == log_level_) return;
  log_level_ = std::move(level);
  if (state() == upstream_state::ready) send_log_level();
}

// Optional: a server that refuses or ignores it keeps working, with a note in its status.
void upstream::send_log_level() {
  if (log_level_.empty() || !peer_ || !capabilities_.contains("logging")) return;
  peer_->request("logging/setLevel", json::object{{"level", log_level_}}, timeout_opt(),
                 optional_call_handler("logging/setLevel"));
}

void upstream::call_optional(std::string_view method, json::value params) {
  call(method, std::move(params), optional_call_handler(std::string(method)));
}

response_handler upstream::optional_call_handler(std::string method) {
  return [weak = weak_from_this(), gen = generation_, method = std::move(method)](rpc_outcome out) {
    auto self = weak.lock();
    if (!self || self->generation_ != gen || out.ec == errc::transport_closed) return;
    if (!out.ec && out.reply->kind != message_kind::error_response) return self->clear_note(method);
    std::string why = out.ec ? method + ": " + out.ec.message()
                             : method + " failed: " + json::serialize(out.reply->body["error"]);
    if (self->has_note(method, why))
      self->log_.debug("{} (again)", why);
    else
      self->log_.warn("{} (optional; the server keeps working)", why);
    self->set_note(method, std::move(why));
  };
}

void upstream::handle_notification(const message& msg) {
  if (msg.method() == "notifications/progress") return on_progress(msg);
  if (msg.method() == "notifications/cancelled") return on_cancelled(msg);
  if (msg.method() == "notifications/tools/list_changed") {
    return relist(collection::tools);
  }
  if (msg.method() == "notifications/resources/list_changed") {
    relist(collection::resources);
    return relist(collection::resource_templates);
  }
  if (msg.method() == "notifications/prompts/list_changed") return relist(collection::prompts);
  observer_.on_upstream_notification(cfg_.name, msg);
}

// A list_changed is reason enough to ask, even for a list the server did not declare.
void upstream::relist(collection c) {
  if (state() != upstream_state::ready || !peer_) return;
  request_page(std::make_shared<list_pager>(c));
}

void upstream::request_page(std::shared_ptr<list_pager> pager) {
  const auto c = pager->which();
  const auto params = pager->next_params();
  peer_->request(info(c).method, params, timeout_opt(),
                 [weak = weak_from_this(), gen = generation_, pager](rpc_outcome out) {
                   auto self = weak.lock();
                   if (!self || self->generation_ != gen || !self->peer_) return;
                   const auto c = pager->which();
                   std::vector<std::string> warnings;
                   auto st = list_pager::status::failed;
                   if (out.ec == errc::timeout)
                     self->list_failed(c, std::string(info(c).method) + ": no answer in time");
                   else if (out.ec)
                     return;  // closed: the reconnect lists again
                   else
                     st = pager->on_page(*out.reply, warnings);
                   for (auto& w : warnings) self->log_.warn("{}", w);
                   if (st == list_pager::status::more) return self->request_page(pager);
                   if (st == list_pager::status::done) {
                     self->clear_note(info(c).method);
                     self->store_list(c, pager->take());
                     self->log_.info("{} list now has {} items", to_string(c),
                                     self->list(c).size());
                   } else if (!out.ec) {
                     self->list_failed(c, pager->error());
                   }
                   self->observer_.on_upstream_changed(self->cfg_.name);
                 });
}

}  // namespace mcpmux
