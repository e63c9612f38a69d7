// Upstream: spawn, MCP handshake, tool listing, call forwarding and failure reporting for one server.
#include "core/upstream.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/serialize.hpp>
#include <random>
#include <set>

#include "core/error.hpp"
#include "core/rpc_peer.hpp"
#include "core/tool_cache.hpp"
#include "transports/stdio_transport.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;

constexpr std::string_view client_protocol_version = "2025-11-25";
constexpr std::string_view oldest_protocol_version = "2024-11-05";
constexpr std::size_t log_ring_size = 1000;
constexpr std::size_t latency_ring_size = 1024;
constexpr std::size_t max_tool_pages = 1000;

// A synthesized error reply, so that callers see every failure the same way.
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

std::string file_uri(const std::string& path) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::string_view("/-._~").find(static_cast<char>(c)) != std::string_view::npos)
      out += static_cast<char>(c);
    else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}


}  // namespace

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

struct upstream::timer_holder {
  explicit timer_holder(asio::io_context& io) : handshake(io), queue(io), backoff(io), ping(io) {}
  asio::steady_timer handshake;  ///< bounds spawn + initialize + tools/list
  asio::steady_timer queue;      ///< deadline of the oldest call waiting for ready
  asio::steady_timer backoff;    ///< next reconnect attempt
  asio::steady_timer ping;       ///< next liveness ping
};

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
                   upstream_observer& observer)
    : io_(io),
      cfg_(std::move(cfg)),
      daemon_(daemon),
      observer_(observer),
      log_("upstream " + cfg_.name),
      timeout_(effective_timeout(cfg_, daemon_)),
      lc_(policy_for(daemon_), random01),
      timers_(std::make_unique<timer_holder>(io)) {
  if (!cfg_.enabled) return;
  std::string warning;
  if (auto cached = load_cached_tools(cache_dir(), cfg_, &warning)) {
    tools_ = std::move(*cached);
    tools_from_cache_ = true;
    log_.info("serving {} cached tools until connected", tools_.size());
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

void upstream::start() { perform(lc_.start(steady_clock::now(), cfg_.enabled)); }

bool upstream::settled() const {
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
      note("reconnecting in " + std::to_string(st.delay.count()) + "ms (attempt " + std::to_string(lc_.attempt()) + ")");
      timers_->backoff.expires_after(st.delay);
      timers_->backoff.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        if (auto self = weak.lock(); self && !ec) self->perform(self->lc_.on_timer(steady_clock::now()));
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
  if (auto p = std::exchange(peer_, nullptr)) p->close();
  pid_ = -1;
  ready_since_.reset();
  note("stopped");
  perform(lc_.stop());
  auto q = std::move(queue_);
  queue_.clear();
  for (auto& [token, c] : q)
    c->done(error_reply(rpc_code::connection_closed, "MCP server \"" + cfg_.name + "\" was stopped"));
}

void upstream::restart() {
  if (!cfg_.enabled || state() == upstream_state::stopped) return;
  ++generation_;  // the old connection's close is expected, not a failure
  timers_->handshake.cancel();
  timers_->backoff.cancel();
  timers_->ping.cancel();
  if (auto p = std::exchange(peer_, nullptr)) p->close();
  pid_ = -1;
  ready_since_.reset();
  note("restart requested");
  log_.info("restarting");
  perform(lc_.restart(steady_clock::now()));
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

void upstream::connect() {
  const auto gen = ++generation_;
  if (ever_ready_ || lc_.attempt() > 0) ++stats_.restarts;
  if (cfg_.type != server_type::stdio)
    return fail("server type \"" + std::string(to_string(cfg_.type)) + "\" is not supported by this build");

  stdio_options opt;
  opt.command = cfg_.command;
  opt.args = cfg_.args;
  opt.env = cfg_.env;
  opt.cwd = cfg_.cwd;
  opt.limits.max_message_bytes = daemon_.max_message_bytes;
  opt.limits.max_queue_bytes = daemon_.max_client_queue_bytes;
  opt.on_stderr = [weak = weak_from_this()](std::string_view raw) {
    if (auto self = weak.lock()) {
      auto line = valid_utf8(raw);  // it ends up in status JSON
      self->log_.debug("stderr: {}", line);
      self->note("stderr: " + line);
    }
  };
  auto spawned = spawn_stdio(io_, opt);
  if (!spawned.channel) return fail(spawned.error);
  pid_ = spawned.pid;
  note("started pid " + std::to_string(pid_));
  log_.info("started pid {}: {}", pid_, cfg_.command);

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
    auto lines = self->log_lines(log_ring_size);
    // The last stderr line is usually the one that explains the exit.
    for (auto it = lines.rbegin(); it != lines.rend(); ++it)
      if (it->rfind("stderr: ", 0) == 0) {
        why += "; last stderr: " + it->substr(8);
        break;
      }
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
  peer_ = rpc_peer::create(io_, spawned.channel, std::move(h));
  peer_->start();

  // Spawn + initialize + tools/list, bounded as a whole.
  if (timeout_.count() > 0) {
    timers_->handshake.expires_after(timeout_);
    timers_->handshake.async_wait([weak = weak_from_this(), gen](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->generation_ != gen || self->state() != upstream_state::connecting) return;
      self->fail("Connection to MCP server \"" + self->cfg_.name + "\" timed out after " +
                 std::to_string(self->timeout_.count()) + "ms");
    });
  }

  json::object params;
  params["protocolVersion"] = client_protocol_version;
  json::object caps;
  caps["roots"] = json::object{{"listChanged", true}};
  params["capabilities"] = std::move(caps);
  params["clientInfo"] = json::object{{"name", "mcpmux"}, {"version", MCPMUX_VERSION}};
  peer_->request("initialize", params, std::nullopt, [weak = weak_from_this(), gen](rpc_outcome out) {
    auto self = weak.lock();
    if (!self || self->generation_ != gen) return;
    if (out.ec) return;  // closed or stopped: reported through on_closed / stop
    if (out.reply->kind == message_kind::error_response)
      return self->fail("initialize failed: " + json::serialize(out.reply->body["error"]));
    self->on_initialized(std::move(*out.reply));
  });
}

void upstream::on_initialized(message reply) {
  auto* result = reply.body["result"].if_object();
  const auto* version = result ? result->if_contains("protocolVersion") : nullptr;
  if (!version || !version->is_string())
    return fail("initialize result has no protocolVersion");
  const std::string_view v = version->get_string();
  if (v < oldest_protocol_version)
    return fail("unsupported protocol version \"" + std::string(v) + "\"");
  const auto* caps = result->if_contains("capabilities");
  tools_capability_ = caps && caps->is_object() && caps->get_object().contains("tools");
  instructions_.clear();
  if (const auto* ins = result->if_contains("instructions"); ins && ins->is_string())
    instructions_ = ins->get_string();
  std::string server_name;
  if (const auto* info = result->if_contains("serverInfo"); info && info->is_object())
    if (const auto* n = info->get_object().if_contains("name"); n && n->is_string()) server_name = n->get_string();
  log_.info("initialized: {} protocol {}", server_name.empty() ? "(unnamed)" : server_name, v);
  // The seeds' order: a transport's background listener starts between the initialize answer
  // and notifications/initialized, waiting at most 1 s (less for small timeouts).
  auto wait = std::chrono::milliseconds(1000);
  if (timeout_.count() > 0) wait = std::min(wait, timeout_ / 2);
  if (timeout_.count() == 0) wait = std::chrono::milliseconds(0);
  peer_->channel().on_initialized(std::string(v), wait, [weak = weak_from_this(), gen = generation_] {
    auto self = weak.lock();
    if (!self || self->generation_ != gen || !self->peer_) return;
    self->peer_->notify("notifications/initialized", json::object{});
    if (!self->tools_capability_) {
      self->tools_.clear();
      return self->become_ready();
    }
    self->list_tools(std::nullopt, {});
  });
}

void upstream::list_tools(std::optional<std::string> cursor, std::vector<json::object> acc) {
  json::object params;
  if (cursor) params["cursor"] = *cursor;
  const auto gen = generation_;
  // Pages seen so far; shared along the chain to catch a server that repeats a cursor.
  auto seen = std::make_shared<std::set<std::string>>();
  if (cursor) seen->insert(*cursor);
  struct step {
    std::weak_ptr<upstream> weak;
    std::uint64_t gen;
    std::shared_ptr<std::set<std::string>> seen;
    std::shared_ptr<std::set<std::string>> names;
    std::vector<json::object> acc;
    void operator()(rpc_outcome out) {
      auto self = weak.lock();
      if (!self || self->generation_ != gen || out.ec) return;
      if (out.reply->kind == message_kind::error_response)
        return self->fail("tools/list failed: " + json::serialize(out.reply->body["error"]));
      auto* result = out.reply->body["result"].if_object();
      auto* tools = result ? result->if_contains("tools") : nullptr;
      if (!tools || !tools->is_array()) return self->fail("tools/list result has no tools array");
      for (auto& t : tools->get_array()) {
        auto* obj = t.if_object();
        const auto* n = obj ? obj->if_contains("name") : nullptr;
        if (!n || !n->is_string() || n->get_string().empty()) {
          self->log_.warn("skipped a tool without a name: {}", clip(json::serialize(t)));
          continue;
        }
        // A server that lists a name twice (a broken paginator) gets its first definition kept.
        if (!names->insert(std::string(n->get_string())).second) {
          self->log_.warn("skipped a second tool named \"{}\"", clip(n->get_string(), 64));
          continue;
        }
        acc.push_back(std::move(*obj));
      }
      const auto* next = result->if_contains("nextCursor");
      if (next && next->is_string() && !next->get_string().empty()) {
        std::string c(next->get_string());
        if (seen->count(c) || seen->size() >= max_tool_pages) {
          self->log_.warn("tools/list repeated cursor \"{}\"; stopping after {} tools", clip(c, 64), acc.size());
        } else {
          seen->insert(c);
          json::object p;
          p["cursor"] = c;
          self->peer_->request("tools/list", p, self->timeout_opt(),
                               step{weak, gen, seen, names, std::move(acc)});
          return;
        }
      }
      const bool changed = self->tools_ != acc;
      self->tools_ = std::move(acc);
      if (changed || self->tools_from_cache_) self->store_cache();
      self->tools_from_cache_ = false;
      if (self->state() == upstream_state::ready) {
        self->log_.info("tool list changed: {} tools", self->tools_.size());
        self->observer_.on_upstream_changed(self->cfg_.name);
      } else {
        self->become_ready();
      }
    }
  };
  auto names = std::make_shared<std::set<std::string>>();
  peer_->request("tools/list", params, timeout_opt(), step{weak_from_this(), gen, seen, names, std::move(acc)});
}

void upstream::become_ready() {
  timers_->handshake.cancel();
  ready_since_ = steady_clock::now();
  ever_ready_ = true;
  missed_pings_ = 0;
  note("ready with " + std::to_string(tools_.size()) + " tools");
  log_.info("ready with {} tools", tools_.size());
  perform(lc_.on_ready(steady_clock::now()));
  flush_queue();
  schedule_ping();
}

void upstream::store_cache() {
  std::string error;
  if (!store_cached_tools(cache_dir(), cfg_, tools_, &error)) log_.warn("tool cache: {}", error);
}

// Liveness: a server that misses two pings in a row is hung; reconnecting is the only cure.
void upstream::schedule_ping() {
  if (cfg_.ping_interval.count() == 0) return;
  timers_->ping.expires_after(cfg_.ping_interval);
  timers_->ping.async_wait([weak = weak_from_this(), gen = generation_](boost::system::error_code ec) {
    auto self = weak.lock();
    if (ec || !self || self->generation_ != gen || !self->peer_) return;
    auto wait = self->timeout_.count() > 0 ? std::min(self->timeout_, self->cfg_.ping_interval) : self->cfg_.ping_interval;
    self->peer_->request("ping", json::object{}, wait, [weak, gen](rpc_outcome out) {
      auto s = weak.lock();
      if (!s || s->generation_ != gen) return;
      if (out.ec == errc::timeout) {
        if (++s->missed_pings_ >= 2) return s->fail("no answer to 2 pings in a row (server hung?)");
        s->log_.warn("missed a ping ({} in a row)", s->missed_pings_);
      } else if (!out.ec) {
        s->missed_pings_ = 0;
      } else {
        return;
      }
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
  if (auto p = std::exchange(peer_, nullptr)) p->close();
  // Queued calls keep waiting for the reconnect, each bounded by its own deadline.
  perform(lc_.on_closed(steady_clock::now(), std::move(why)));
}

void upstream::handle_request(const message& msg) {
  if (!peer_) return;
  const auto method = msg.method();
  if (method == "ping") {
    peer_->send_raw(make_result(msg.id(), json::object{}));
  } else if (method == "roots/list") {
    // Configured roots, else the configured cwd, else none: servers such as server-filesystem
    // narrow their access to the roots they get, so an unasked-for root must not widen it.
    json::array roots;
    if (cfg_.roots.empty()) {
      if (!cfg_.cwd.empty()) roots.push_back(json::object{{"uri", file_uri(cfg_.cwd)}, {"name", cfg_.cwd}});
    } else {
      for (const auto& r : cfg_.roots) roots.push_back(json::object{{"uri", r}});
    }
    peer_->send_raw(make_result(msg.id(), json::object{{"roots", std::move(roots)}}));
  } else {
    log_.debug("answered unsupported server request {} with -32601", method);
    peer_->send_raw(make_error(msg.id(), rpc_code::method_not_found,
                               "Method not found: mcpmux does not handle \"" + std::string(method) + "\""));
  }
}

void upstream::handle_notification(const message& msg) {
  if (msg.method() == "notifications/tools/list_changed") {
    if (state() == upstream_state::ready && tools_capability_) list_tools(std::nullopt, {});
    return;
  }
  observer_.on_upstream_notification(cfg_.name, msg);
}

std::uint64_t upstream::call(std::string_view method, json::value params, response_handler done) {
  const auto token = next_token_++;
  auto c = std::make_shared<queued_call>(
      queued_call{std::string(method), std::move(params), std::move(done), steady_clock::now()});
  switch (state()) {
    case upstream_state::ready:
      send_call(token, std::move(c));
      break;
    case upstream_state::connecting:
    case upstream_state::backoff:
      queue_.emplace_back(token, std::move(c));
      expire_queue();
      break;
    case upstream_state::stopped:
    case upstream_state::disabled:
      stats_.record(std::chrono::microseconds(0), true);
      c->done(error_reply(rpc_code::connection_closed,
                          "MCP server \"" + cfg_.name + "\" is " + std::string(to_string(state()))));
  }
  return token;
}

void upstream::send_call(std::uint64_t token, std::shared_ptr<queued_call> c) {
  auto remaining = timeout_opt();
  if (remaining) {
    auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(steady_clock::now() - c->started);
    remaining = std::max(std::chrono::milliseconds(1), *remaining - spent);
  }
  auto wrapped = [weak = weak_from_this(), token, c](rpc_outcome out) {
    auto self = weak.lock();
    if (!self) return c->done(error_reply(rpc_code::connection_closed, "mcpmux is shutting down"));
    self->sent_.erase(token);
    // A dropped connection is worth one more try on the next one (unless the tool must not
    // run twice); the call waits in the queue, still bounded by its original deadline.
    if (out.ec == errc::transport_closed && self->cfg_.retry_calls && !c->retried &&
        self->state() != upstream_state::stopped) {
      c->retried = true;
      self->log_.info("{} failed with a dropped connection; resending once after the reconnect", c->method);
      self->queue_.emplace_front(token, c);  // the oldest call: first to send, first to expire
      if (self->state() == upstream_state::ready)
        self->flush_queue();
      else
        self->expire_queue();
      return;
    }
    const auto elapsed = std::chrono::duration_cast<std::chrono::microseconds>(steady_clock::now() - c->started);
    self->stats_.record(elapsed, out.ec || out.reply->kind == message_kind::error_response);
    if (!out.ec) return c->done(std::move(out));
    const auto& server = self->cfg_.name;
    if (out.ec == errc::timeout)
      return c->done(error_reply(rpc_code::request_timeout, "MCP server \"" + server + "\" did not answer " +
                                                                 c->method + " within " +
                                                                 std::to_string(self->timeout_.count()) + "ms"));
    std::string why = self->last_error_.empty() ? out.ec.message() : self->last_error_;
    c->done(error_reply(rpc_code::connection_closed, "MCP server \"" + server + "\": " + why));
  };
  auto id = peer_->request(c->method, c->params, remaining, std::move(wrapped));
  if (id) sent_[token] = *id;
}

void upstream::cancel(std::uint64_t token, std::string_view reason) {
  if (auto it = sent_.find(token); it != sent_.end()) {
    if (peer_) peer_->cancel(it->second, reason);
    sent_.erase(it);
    return;
  }
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const auto& q) { return q.first == token; });
  if (it != queue_.end()) queue_.erase(it);
}

void upstream::flush_queue() {
  while (!queue_.empty() && state() == upstream_state::ready) {
    auto [token, c] = std::move(queue_.front());
    queue_.pop_front();
    send_call(token, std::move(c));
  }
}

// Fails queued calls whose deadline passed while the server was still connecting.
void upstream::expire_queue() {
  if (queue_.empty() || timeout_.count() == 0) return;
  const auto now = steady_clock::now();
  while (!queue_.empty() && queue_.front().second->started + timeout_ <= now) {
    auto c = std::move(queue_.front().second);
    queue_.pop_front();
    stats_.record(std::chrono::duration_cast<std::chrono::microseconds>(now - c->started), true);
    std::string why = "MCP server \"" + cfg_.name + "\" is not ready after " + std::to_string(timeout_.count()) +
                      "ms (" + std::string(to_string(state()));
    if (state() == upstream_state::backoff) why += ", attempt " + std::to_string(lc_.attempt());
    why += ")";
    if (!last_error_.empty()) why += ": " + last_error_;
    c->done(error_reply(rpc_code::request_timeout, std::move(why)));
  }
  if (queue_.empty()) return;
  timers_->queue.expires_at(queue_.front().second->started + timeout_);
  timers_->queue.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    if (auto self = weak.lock(); self && !ec) self->expire_queue();
  });
}

}  // namespace mcpmux
