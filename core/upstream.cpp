// Upstream: one server's lifecycle — connect, the handshake, liveness and failure reporting.
// Its lists, notes and optional calls are in upstream_lists.cpp; calls through it, both ways,
// in upstream_calls.cpp.
#include "core/upstream.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <random>

#include "base/clock.hpp"
#include "base/redact.hpp"
#include "core/rpc_peer.hpp"
#include "core/tool_cache.hpp"
#include "core/upstream_detail.hpp"
#include "protocol/error.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;

constexpr std::size_t log_ring_size = 1000;
constexpr std::size_t latency_ring_size = 1024;

}  // namespace

// Versions are unique across upstream objects, so a server replaced by reload never looks
// unchanged to the manager.
std::uint64_t new_lists_version() {
  static std::uint64_t last = 0;
  return ++last;
}

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

void upstream_stats::record(std::chrono::microseconds d, bool error, std::string_view tool) {
  ++calls;
  if (error) ++errors;
  const auto micros = static_cast<std::uint64_t>(std::max<std::int64_t>(0, d.count()));
  latency.record(micros);
  if (!tool.empty()) {
    auto it = by_tool.find(tool);
    if (it == by_tool.end() && by_tool.size() < max_tools)
      it = by_tool.emplace(std::string(tool), latency_histogram{}).first;
    if (it != by_tool.end()) it->second.record(micros);
  }
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
                   upstream_observer& observer, channel_factory open, cache_entry* cached)
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
  if (!cfg_.enabled || !cached) return;
  take_era(cached->era);
  if (cached->pending) {
    tools_from_cache_ = true;  // listed by the catalogue's snapshot until they are read
    cache_pending_ = true;
  } else if (cached->tools) {
    lists_[0] = std::move(*cached->tools);
    tools_from_cache_ = true;
    log_.info("serving {} cached tools until connected", tools().size());
  } else if (!cached->warning.empty()) {
    log_.warn("{}", cached->warning);
  }
}

void upstream::take_era(std::string_view era) {
  if (era == "modern") era_ = mcp::era::modern;
  if (era == "legacy") era_ = mcp::era::legacy;
}

bool upstream::take_cached(cache_entry entry) {
  if (!std::exchange(cache_pending_, false) || !tools_from_cache_) return false;  // live now
  if (entry.tools) {
    set_list(collection::tools, std::move(*entry.tools));
    log_.info("serving {} cached tools until connected", tools().size());
  } else {
    tools_from_cache_ = false;
    if (!entry.warning.empty()) log_.warn("{}", entry.warning);
  }
  return true;
}

upstream::~upstream() {
  queue_.take_all();  // nobody is left to tell
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
  timers_->listen.cancel();
  timers_->queue.cancel();
  // The state moves first: calls failing as the connection closes must see it.
  const auto step = lc_.stop();
  if (auto p = std::exchange(peer_, nullptr)) p->close();
  pid_ = -1;
  ready_since_.reset();
  note("stopped");
  perform(step);
  for (auto& e : queue_.take_all()) {
    e.call->finish(
        error_reply(rpc_code::connection_closed, "MCP server \"" + cfg_.name + "\" was stopped"));
  }
}

void upstream::restart() {
  if (!cfg_.enabled || state() == upstream_state::stopped) return;
  ++generation_;  // the old connection's close is expected, not a failure
  timers_->handshake.cancel();
  timers_->backoff.cancel();
  timers_->ping.cancel();
  timers_->listen.cancel();
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

void upstream::set_last_error(const std::string& why) {
  last_error_ = redact(why);
  last_error_at_ms_ = unix_now_ms();
}

void upstream::note(std::string line) {
  redact_in_place(line);  // a server may print a secret it was given
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
  // Called only by a connection that has a stderr (a child).
  req.on_stderr = [weak = weak_from_this()](std::string_view raw) {
    if (raw.find_first_not_of(" \t\r") == std::string_view::npos) return;  // explains nothing
    if (auto self = weak.lock()) {
      auto line = valid_utf8(raw);  // it ends up in status JSON
      self->log_.debug("stderr: {}", line);
      self->note("stderr: " + line);
    }
  };
  auto opened = open_(req);
  if (!opened) {
    fail(opened.error().message);
    return nullptr;
  }
  traits_ = std::move(opened->traits);
  if (!traits_.endpoint.empty()) {
    // The URL is not logged: its query may carry a secret.
    note("connecting to the " + traits_.endpoint + " endpoint");
    log_.info("connecting ({})", traits_.endpoint);
  }
  if (opened->pid > 0) {
    pid_ = opened->pid;
    note("started pid " + std::to_string(pid_));
    observer_.on_upstream_spawned(cfg_.name, pid_);
    log_.info("started pid {}: {}", pid_, cfg_.command);
  }
  return opened->channel;
}

void upstream::connect() {
  const auto gen = ++generation_;
  listen_id_.reset();  // it belonged to the old connection
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
  h.on_closed = [weak = weak_from_this(), gen](std::error_code ec, std::string reason) {
    auto self = weak.lock();
    if (!self || self->generation_ != gen) return;
    if (ec == errc::needs_login) return self->wait_for_login(std::move(reason));
    if (self->handshake_ && self->handshake_->probing() &&
        self->traits_.exit_on_probe_means_legacy) {
      // It did not survive a request before initialize: a legacy server. Start it again and
      // initialize at once, without counting the exit as a failure.
      self->log_.info("exited on the era probe (server/discover): speaking 2025-11-25 to it");
      self->era_ = mcp::era::legacy;
      return self->restart();
    }
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
  // The era: as configured; detected by default, starting from the last verdict. The legacy
  // HTTP+SSE transport has no modern form.
  auto policy = era_policy::detect;
  if (cfg_.era == era_setting::legacy || traits_.legacy_only)
    policy = era_policy::legacy;
  else if (cfg_.era == era_setting::modern)
    policy = era_policy::modern;
  else if (era_ == mcp::era::legacy)
    policy = era_policy::legacy_first;
  handshake_ = std::make_unique<handshake>(timeout_, cfg_.name, policy);
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
      peer_->request(a.method, json::value(a.params), a.timeout,
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

void upstream::become_ready() {
  timers_->handshake.cancel();
  ready_since_ = steady_clock::now();
  ever_ready_ = true;
  live_ = liveness(cfg_.ping_interval, timeout_);
  note("ready with " + std::to_string(tools().size()) + " tools");
  log_.info("ready with {} tools", tools().size());
  perform(lc_.on_ready(steady_clock::now()));
  observer_.on_upstream_ready(cfg_.name, *this);
  if (era_ == mcp::era::modern) open_listen();
  flush_queue();
  schedule_ping();
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
        // 2026-07-28 has no ping: server/discover is the cheapest request a server must answer.
        const bool modern = self->era_ == mcp::era::modern;
        self->peer_->request(
            modern ? "server/discover" : "ping",
            json::value(modern ? json::object{{"_meta", modern_request_meta()}} : json::object{}),
            self->live_.ping_timeout(), [weak, gen](rpc_outcome out) {
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
  lose_connection(std::move(why), false);
}

// The server will not serve without a person's login: no reconnects (each would be refused the
// same way) until the login arrives and restarts it. Waiting calls fail now, saying what to run.
void upstream::wait_for_login(std::string why) {
  lose_connection(std::move(why), true);
}

// The connection ended without the daemon asking: reconnect after the backoff, or (for a login
// only a person can give) wait without reconnecting.
void upstream::lose_connection(std::string why, bool needs_login) {
  if (state() != upstream_state::connecting && state() != upstream_state::ready) return;
  ++generation_;
  timers_->handshake.cancel();
  timers_->ping.cancel();
  set_last_error(why);
  if (needs_login) {
    timers_->listen.cancel();
    handshake_.reset();
    note(why);
  } else {
    log_.warn("{}", why);
    note("failed: " + why);
  }
  ready_since_.reset();
  pid_ = -1;
  // The state moves first: calls failing as the connection closes see it (and wait for the
  // reconnect, or are refused for the login).
  const auto step = needs_login ? lc_.on_needs_login(std::move(why))
                                : lc_.on_closed(steady_clock::now(), std::move(why));
  if (auto p = std::exchange(peer_, nullptr)) p->close();
  perform(step);
  if (needs_login) {
    for (auto& e : queue_.take_all()) refuse_for_login(*e.call);
    return;
  }
  // Queued calls keep waiting for the reconnect, each bounded by its own deadline.
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

}  // namespace mcpmux
