// Streamable HTTP endpoint (server side, Beast): MCP sessions on /mcp, GET /status and /metrics.
#include "transports/http_endpoint.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/range/iterator_range.hpp>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <variant>
#include <vector>

#include "config/files.hpp"
#include "core/protocol/error.hpp"
#include "core/protocol/json_rpc.hpp"
#include "core/protocol/log.hpp"
#include "core/protocol/versions.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using asio::awaitable;
using error_code = boost::system::error_code;
using steady_clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// Clients of this revision on expect an id-only "priming" event when an SSE stream opens; older
// SDKs would try to parse its empty data as JSON.
constexpr std::string_view priming_version = "2025-11-25";
constexpr std::size_t max_token_bytes = 4096;

std::string supported_versions() {
  std::string out;
  for (auto v : mcp::legacy_versions) out += std::string(out.empty() ? "" : ", ") + std::string(v);
  return out;
}
constexpr auto refuse_budget = 1s;

using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

std::string_view sv(beast::string_view s) {
  return {s.data(), s.size()};
}

// True when an Accept header admits `type` ("text/event-stream"), wildcards included.
bool accepts(std::string_view accept, std::string_view type) {
  const std::string family = std::string(type.substr(0, type.find('/'))) + "/*";
  std::size_t pos = 0;
  while (pos <= accept.size()) {
    auto comma = accept.find(',', pos);
    if (comma == std::string_view::npos) comma = accept.size();
    auto item = accept.substr(pos, comma - pos);
    const auto t = lower(trim(item.substr(0, item.find(';'))));
    if (t == type || t == "*/*" || t == family) return true;
    pos = comma + 1;
  }
  return false;
}

std::string media_type(std::string_view content_type) {
  return lower(trim(content_type.substr(0, content_type.find(';'))));
}

// 128 bits from the kernel's CSPRNG, hex: a session id nobody can guess.
std::string random_id() {
  unsigned char b[16];
  ssize_t n;
  do {
    n = ::getrandom(b, sizeof b, 0);  // 16 bytes: never partial once the pool is initialised
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof b)) throw std::runtime_error("getrandom failed");
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += hex[c >> 4];
    out += hex[c & 15];
  }
  return out;
}

// One SSE event; a message containing raw newlines becomes several data: lines.
std::string sse_frame(std::uint64_t stream, std::uint64_t seq, std::string_view data) {
  std::string out = "id: " + std::to_string(stream) + "-" + std::to_string(seq) + "\n";
  std::size_t pos = 0;
  for (;;) {
    auto nl = data.find('\n', pos);
    auto line = data.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.append("data: ").append(line).append("\n");
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  out += "\n";
  return out;
}

// "S-N" → (stream, seq).
std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_event_id(std::string_view s) {
  const auto dash = s.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::uint64_t a = 0, b = 0;
  auto r1 = std::from_chars(s.data(), s.data() + dash, a);
  auto r2 = std::from_chars(s.data() + dash + 1, s.data() + s.size(), b);
  if (r1.ec != std::errc() || r1.ptr != s.data() + dash || r2.ec != std::errc() ||
      r2.ptr != s.data() + s.size())
    return std::nullopt;
  return std::pair{a, b};
}

response make_response(http::status s, bool keep_alive, std::string body = {},
                       std::string_view content_type = "application/json") {
  response res{s, 11};
  if (!body.empty()) res.set(http::field::content_type, content_type);
  res.set(http::field::cache_control, "no-store");
  res.body() = std::move(body);
  res.keep_alive(keep_alive);
  res.prepare_payload();
  return res;
}

// An HTTP error whose body is a JSON-RPC error without id, as the spec suggests.
response error_response(http::status s, bool keep_alive, int code, std::string_view text) {
  return make_response(s, keep_alive, make_error(nullptr, code, text));
}

constexpr int http_error_code = -32000;  // the SDKs' generic "server error" for HTTP-level refusals

/// One SSE stream of a session: a POST awaiting its answer (JSON until something else has to go
/// there first), or the GET stream. Written by at most one connection (`owner`) at a time.
struct stream {
  explicit stream(asio::any_io_executor ex) : wake(std::move(ex)) {}
  std::uint64_t no = 0;
  bool is_get = false;
  json::value id;            // POST: the request id it answers
  std::string id_key;        // POST: serialized id
  std::string progress_key;  // POST: serialized _meta.progressToken; "" = none
  bool priming = false;      // send an id-only event when the stream opens
  std::optional<std::string> json_reply;
  bool sse = false;                // the response is text/event-stream
  std::deque<std::string> frames;  // SSE frames not yet written
  std::size_t frame_bytes = 0;
  std::uint64_t next_seq = 1;
  bool finished = false;    // nothing more comes after the queued frames
  std::uint64_t owner = 0;  // connection writing it; 0 = nobody (client gone)
  asio::steady_timer wake;  // cancelled to wake the writer
  void notify() { wake.cancel(); }
};
using stream_ptr = std::shared_ptr<stream>;

/// The transport of one MCP session: routes mcpmux's messages to the client's open streams.
class http_session final : public transport, public std::enable_shared_from_this<http_session> {
 public:
  http_session(asio::io_context& io, std::string id, const http_endpoint_options& opt,
               std::function<void(const std::string&)> forget)
      : io_(io),
        id_(std::move(id)),
        opt_(opt),
        log_("http session " + id_.substr(0, 8)),
        forget_(std::move(forget)) {}

  // ---- transport (the core session's side) --------------------------------------------------

  void start(transport_events& events) override { events_ = &events; }

  std::error_code send(std::string text) override {
    if (closed_) return errc::transport_closed;
    error_code jec;
    auto v = json::parse(text, jec);
    const json::object* o = !jec && v.is_object() ? &v.get_object() : nullptr;
    const json::value* id = o ? o->if_contains("id") : nullptr;
    const json::value* m = o ? o->if_contains("method") : nullptr;
    if (o && !m && id) return respond(*id, std::move(text));
    if (m && m->is_string() && m->get_string() == "notifications/progress") {
      if (auto st = progress_owner(*o)) return push_event(*st, text);
    }
    // A server→client request is nearly always part of a tool call: it goes with the newest
    // request; notifications unrelated to a request prefer the GET stream, as the spec says.
    const bool request = m && id;
    stream_ptr target = request ? latest_post() : live_get();
    if (!target) target = request ? live_get() : latest_post();
    if (!target) return hold(std::move(text));
    return push_event(*target, text);
  }

  void close() override {
    if (closed_) return;
    events_ = nullptr;
    shutdown("closed by mcpmux");
  }

  std::size_t queued_bytes() const override {
    std::size_t n = backlog_bytes_ + (get_ ? get_->frame_bytes : 0);
    for (const auto& st : order_) n += st->frame_bytes;
    return n;
  }

  // ---- the endpoint's side ------------------------------------------------------------------

  const std::string& id() const { return id_; }
  bool started() const { return events_ != nullptr; }
  void touch() { last_active_ = steady_clock::now(); }
  steady_clock::time_point last_active() const { return last_active_; }

  /// Requests awaiting an answer plus an attached GET stream.
  std::size_t open_streams() const { return order_.size() + (live_get() ? 1 : 0); }
  bool get_attached() const { return live_get() != nullptr; }
  bool pending(const std::string& key) const { return posts_.count(key) != 0; }

  /// Hands a client message to the core session. Returns the id-less error it answered at once,
  /// if any (a message it could not accept); an error for `for_request` is its answer instead.
  std::optional<std::string> receive(std::string_view body, stream_ptr for_request) {
    if (closed_ || !events_) return make_error(nullptr, http_error_code, "Session closed");
    auto self = shared_from_this();
    capturing_ = true;
    capture_stream_ = std::move(for_request);
    captured_.reset();
    events_->on_message(body);
    capturing_ = false;
    capture_stream_.reset();
    return std::exchange(captured_, std::nullopt);
  }

  /// Registers a POSTed request whose answer `owner` will write.
  stream_ptr open_post(const json::value& id, std::string key, std::string progress_key,
                       bool priming, std::uint64_t owner) {
    auto st = std::make_shared<stream>(io_.get_executor());
    st->no = next_stream_++;
    st->id = id;
    st->id_key = key;
    st->progress_key = std::move(progress_key);
    st->priming = priming;
    st->owner = owner;
    posts_.emplace(std::move(key), st);
    order_.push_back(st);
    return st;
  }

  /// A new GET stream; messages held for it are queued at once.
  stream_ptr open_get(std::uint64_t owner, bool priming) {
    if (get_) get_->notify();
    get_ = std::make_shared<stream>(io_.get_executor());
    get_->no = next_stream_++;
    get_->is_get = true;
    get_->priming = priming;
    get_->owner = owner;
    start_sse(*get_);
    flush_backlog();
    return get_;
  }

  /// Resumes the stream named by a Last-Event-ID: replays what followed that event and
  /// continues the stream if it is still open. Null when the id names no stream we know.
  stream_ptr resume(std::string_view last_event_id, std::uint64_t owner) {
    auto parsed = parse_event_id(last_event_id);
    if (!parsed) return nullptr;
    const auto [no, after] = *parsed;
    stream_ptr st;
    if (get_ && get_->no == no) st = get_;
    for (const auto& p : order_)
      if (p->no == no) st = p;
    const bool known =
        st || std::any_of(ring_.begin(), ring_.end(),
                          [no = no](const replay_event& e) { return e.stream == no; });
    if (!known) return nullptr;
    if (!st) {  // a stream already finished: replay its tail, then end
      st = std::make_shared<stream>(io_.get_executor());
      st->no = no;
      st->finished = true;
    }
    if (st->owner && st->owner != owner) st->notify();  // the old connection yields
    st->owner = owner;
    st->sse = true;
    st->frames.clear();
    st->frame_bytes = 0;
    std::size_t replayed = 0;
    for (const auto& e : ring_) {
      if (e.stream != no || e.seq <= after) continue;
      st->frames.push_back(e.frame);
      st->frame_bytes += e.frame.size();
      ++replayed;
    }
    log_.debug("stream {} resumed after event {}: {} events replayed", no, after, replayed);
    if (st == get_) flush_backlog();
    return st;
  }

  /// The writer of `st` went away (client gone, stream done): later events of a still open
  /// stream are kept for replay only.
  void detach(const stream_ptr& st, std::uint64_t owner) {
    touch();
    if (st->owner != owner) return;
    st->owner = 0;
    st->frames.clear();
    st->frame_bytes = 0;
    if (!st->finished && !st->is_get && !st->sse) {
      // Nothing identifies this POST to the client any more: its answer has nowhere to go.
      log_.debug("client left before the answer to {}", clip(st->id_key, 60));
    }
  }

  /// Ends the session from the HTTP side (DELETE, idle, shutdown): the core session hears
  /// on_closed.
  void terminate(std::string reason) {
    if (closed_) return;
    auto self = shared_from_this();
    auto* ev = std::exchange(events_, nullptr);
    shutdown(reason);
    if (ev) ev->on_closed(errc::transport_closed, std::move(reason));
  }

 private:
  struct replay_event {
    std::uint64_t stream;
    std::uint64_t seq;
    std::string frame;
  };

  stream_ptr live_get() const { return get_ && get_->owner && !get_->finished ? get_ : nullptr; }

  stream_ptr latest_post() const {
    for (auto it = order_.rbegin(); it != order_.rend(); ++it)
      if ((*it)->owner && !(*it)->finished) return *it;
    return nullptr;
  }

  stream_ptr progress_owner(const json::object& msg) const {
    const auto* p = msg.if_contains("params");
    const auto* t = p && p->is_object() ? p->get_object().if_contains("progressToken") : nullptr;
    if (!t) return nullptr;
    const auto key = json::serialize(*t);
    for (const auto& st : order_)
      if (st->progress_key == key && st->owner && !st->finished) return st;
    return nullptr;
  }

  std::error_code respond(const json::value& id, std::string text) {
    stream_ptr st;
    if (id.is_null() && capturing_) {
      if (!capture_stream_) {
        captured_ = std::move(text);
        return {};
      }
      st = capture_stream_;
    } else if (auto it = posts_.find(json::serialize(id)); it != posts_.end()) {
      st = it->second;
    }
    if (!st) {
      log_.debug("dropped a response to {} that no request waits for",
                 clip(json::serialize(id), 60));
      return {};
    }
    posts_.erase(st->id_key);
    order_.erase(std::remove(order_.begin(), order_.end(), st), order_.end());
    st->finished = true;
    if (!st->sse) {
      if (!st->owner) {
        log_.debug("answer to {} dropped: the client left", clip(st->id_key, 60));
        return {};
      }
      st->json_reply = std::move(text);
      st->notify();
      return {};
    }
    return push_event(*st, text);
  }

  void start_sse(stream& st) {
    st.sse = true;
    if (!st.priming || !st.owner) return;
    auto frame =
        "id: " + std::to_string(st.no) + "-" + std::to_string(st.next_seq++) + "\ndata: \n\n";
    st.frame_bytes += frame.size();
    st.frames.push_back(std::move(frame));
  }

  std::error_code push_event(stream& st, std::string_view text) {
    if (!st.sse) start_sse(st);
    const auto seq = st.next_seq++;
    auto frame = sse_frame(st.no, seq, text);
    remember(st.no, seq, frame);
    if (!st.owner) return {};
    if (st.frame_bytes + frame.size() > opt_.limits.max_queue_bytes) return errc::queue_full;
    st.frame_bytes += frame.size();
    st.frames.push_back(std::move(frame));
    st.notify();
    return {};
  }

  void remember(std::uint64_t no, std::uint64_t seq, const std::string& frame) {
    if (opt_.replay_events == 0 || frame.size() > opt_.replay_bytes) return;
    ring_.push_back({no, seq, frame});
    ring_bytes_ += frame.size();
    while (ring_.size() > opt_.replay_events || ring_bytes_ > opt_.replay_bytes) {
      ring_bytes_ -= ring_.front().frame.size();
      ring_.pop_front();
    }
  }

  std::error_code hold(std::string text) {
    backlog_bytes_ += text.size();
    backlog_.push_back(std::move(text));
    while (backlog_.size() > opt_.backlog_messages ||
           backlog_bytes_ > opt_.limits.max_queue_bytes) {
      backlog_bytes_ -= backlog_.front().size();
      backlog_.pop_front();
      if (!backlog_warned_) log_.warn("no GET stream open: dropping the oldest held messages");
      backlog_warned_ = true;
    }
    return {};
  }

  void flush_backlog() {
    auto held = std::exchange(backlog_, {});
    backlog_bytes_ = 0;
    for (auto& m : held) push_event(*get_, m);
  }

  void shutdown(std::string_view reason) {
    closed_ = true;
    auto self = shared_from_this();
    for (auto& st : order_) {
      auto error = make_error(st->id, rpc_code::connection_closed, "Session terminated");
      if (st->sse)
        push_event(*st, error);
      else if (!st->json_reply)
        st->json_reply = std::move(error);
      st->finished = true;
      st->notify();
    }
    if (get_) {
      get_->finished = true;
      get_->notify();
    }
    posts_.clear();
    order_.clear();
    get_.reset();
    backlog_.clear();
    ring_.clear();
    log_.debug("ended: {}", reason);
    if (auto f = std::exchange(forget_, nullptr)) f(id_);
  }

  asio::io_context& io_;
  std::string id_;
  http_endpoint_options opt_;
  logger log_;
  std::function<void(const std::string&)> forget_;
  transport_events* events_ = nullptr;
  bool closed_ = false;
  steady_clock::time_point last_active_ = steady_clock::now();
  std::uint64_t next_stream_ = 1;
  std::unordered_map<std::string, stream_ptr> posts_;  // by serialized request id
  std::vector<stream_ptr> order_;                      // the same, oldest first
  stream_ptr get_;
  std::deque<std::string> backlog_;  // for the next GET
  std::size_t backlog_bytes_ = 0;
  bool backlog_warned_ = false;
  std::deque<replay_event> ring_;
  std::size_t ring_bytes_ = 0;
  bool capturing_ = false;
  stream_ptr capture_stream_;
  std::optional<std::string> captured_;
};

/// One accepted TCP connection.
struct connection {
  explicit connection(tcp::socket s) : stream(std::move(s)) {}
  beast::tcp_stream stream;
  beast::flat_buffer buf;
  std::uint64_t id = 0;
  bool peer_gone = false;
  bool idle = false;  // waiting for the next request
  bool watching = false;
  std::uint64_t watch_gen = 0;  // tells a stale watcher's completion from the current one
  stream_ptr current;           // the SSE/JSON stream being written
};
using conn_ptr = std::shared_ptr<connection>;

class endpoint_impl final : public http_endpoint,
                            public std::enable_shared_from_this<endpoint_impl> {
 public:
  endpoint_impl(asio::io_context& io, http_endpoint_options opt, http_session_handler on_session,
                http_text_source status, http_text_source metrics)
      : io_(io),
        opt_(std::move(opt)),
        on_session_(std::move(on_session)),
        status_(std::move(status)),
        metrics_(std::move(metrics)),
        acceptor_(io),
        sweep_(io),
        grace_(io) {}

  // Validates the settings, reads the token and binds; "" on success.
  std::string open() {
    const auto& a = opt_.address;
    const auto split = split_host_port(a);
    if (!split) return "daemon.http \"" + a + "\": expected HOST:PORT";
    const auto& host = split->host;
    const auto port = split->port;
    error_code ec;
    const auto addr = asio::ip::make_address(host == "localhost" ? "127.0.0.1" : host, ec);
    if (ec) return "daemon.http \"" + a + "\": host must be localhost or an IP address";
    if (!addr.is_loopback()) {
      if (!opt_.allow_remote)
        return "daemon.http \"" + a +
               "\" is not a loopback address; refusing to serve MCP to other machines (set "
               "daemon.http_allow_remote = true to allow it, with http_token_file)";
      log_.warn("HTTP endpoint on the non-loopback address {}: REACHABLE FROM OTHER MACHINES", a);
      if (opt_.token_file.empty())
        log_.warn("HTTP endpoint on {} has NO TOKEN: anyone who can reach it can call every tool",
                  a);
    }
    if (!opt_.token_file.empty()) {
      if (auto err = read_token(); !err.empty()) return err;
    }
    const tcp::endpoint ep(addr, static_cast<unsigned short>(port));
    acceptor_.open(ep.protocol(), ec);
    if (!ec) ::fcntl(acceptor_.native_handle(), F_SETFD, FD_CLOEXEC);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec && addr.is_v6()) acceptor_.set_option(asio::ip::v6_only(true), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return "cannot listen on " + a + " (daemon.http): " + ec.message();
    port_ = acceptor_.local_endpoint().port();
    const std::string p = std::to_string(port_);
    for (std::string name : {"localhost", "127.0.0.1", "[::1]"}) {
      allowed_hosts_.push_back(name + ":" + p);
      if (port_ == 80) allowed_hosts_.push_back(name);
    }
    if (addr.is_loopback() && addr.is_v4() && addr.to_string() != "127.0.0.1")
      allowed_hosts_.push_back(addr.to_string() + ":" + p);
    log_.info("Streamable HTTP endpoint on http://{}:{}/mcp{}",
              addr.is_v6() ? "[" + addr.to_string() + "]" : addr.to_string(), port_,
              token_.empty() ? "" : " (bearer token required)");
    return {};
  }

  void run() {
    spawn(accept_loop());
    schedule_sweep();
  }

  void close() override {
    if (closed_) return;
    closed_ = true;
    auto self = shared_from_this();
    error_code ignored;
    acceptor_.close(ignored);
    sweep_.cancel();
    auto sessions = std::move(sessions_);
    sessions_.clear();
    for (auto& [id, s] : sessions) s->terminate("daemon stopping");
    // Every stream now holds its last message (an error answer to a request in flight) and is
    // finished: their writers send it and close. Idle connections close now.
    for (auto& [id, c] : conns_)
      if (c->idle) abort(*c);
    if (conns_.empty()) return;
    grace_.expires_after(opt_.shutdown_grace);
    grace_.async_wait([weak = weak_from_this()](error_code ec) {
      auto self = weak.lock();
      if (ec || !self) return;
      self->grace_over_ = true;
      if (!self->conns_.empty())
        self->log_.debug("closing {} connections still busy at shutdown", self->conns_.size());
      for (auto& [id, c] : self->conns_) abort(*c);
    });
  }

  bool draining() const override { return closed_ && !grace_over_ && !conns_.empty(); }

  unsigned short port() const override { return port_; }

 private:
  template <class Awaitable>
  void spawn(Awaitable&& a) {
    asio::co_spawn(io_, std::forward<Awaitable>(a), [](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        logger("http").error("internal error: {}", x.what());
      }
    });
  }

  static void abort(connection& c) {
    c.peer_gone = true;
    if (c.current) c.current->notify();
    error_code ignored;
    c.stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    c.stream.close();
  }

  std::string read_token() {
    struct stat st {};
    if (::stat(opt_.token_file.c_str(), &st) == 0 && (st.st_mode & 077))
      log_.warn("http_token_file {} is readable by other users (chmod 600 it)", opt_.token_file);
    std::string error;
    auto text = read_text_file(opt_.token_file, max_token_bytes, error);
    if (!text) return "cannot read http_token_file \"" + opt_.token_file + "\": " + error;
    token_ = trim(*text);
    if (token_.empty()) return "http_token_file \"" + opt_.token_file + "\" is empty";
    if (token_.find_first_of("\r\n") != std::string::npos || token_.find('\0') != std::string::npos)
      return "http_token_file \"" + opt_.token_file + "\" must hold one line";
    return {};
  }

  // ---- accepting ----------------------------------------------------------------------------

  awaitable<void> accept_loop() {
    auto self = shared_from_this();
    for (;;) {
      auto [ec, sock] = co_await acceptor_.async_accept(use_tuple);
      if (closed_ || ec == asio::error::operation_aborted) co_return;
      if (ec) {
        log_.warn("accept failed: {}", ec.message());
        asio::steady_timer pause(io_);  // out of descriptors: do not spin
        pause.expires_after(100ms);
        co_await pause.async_wait(use_tuple);
        continue;
      }
      ::fcntl(sock.native_handle(), F_SETFD, FD_CLOEXEC);
      if (conns_.size() >= opt_.max_connections) {
        spawn(refuse(std::move(sock)));
        continue;
      }
      auto c = std::make_shared<connection>(std::move(sock));
      c->id = next_conn_++;
      conns_.emplace(c->id, c);
      spawn(serve(c));
    }
  }

  awaitable<void> refuse(tcp::socket sock) {
    auto self = shared_from_this();
    beast::tcp_stream s(std::move(sock));
    s.expires_after(refuse_budget);
    auto res = error_response(http::status::service_unavailable, false, http_error_code,
                              "Service Unavailable: too many connections");
    res.set(http::field::retry_after, "1");
    co_await http::async_write(s, res, use_tuple);
    error_code ignored;
    s.socket().shutdown(tcp::socket::shutdown_both, ignored);
    s.close();
  }

  // ---- one connection -----------------------------------------------------------------------

  awaitable<void> serve(conn_ptr c) {
    auto self = shared_from_this();
    bool linger = false;  // refused before its body was read: let the client see the answer
    for (;;) {
      if (closed_) break;
      http::request_parser<http::string_body> p;
      p.header_limit(static_cast<std::uint32_t>(
          std::min<std::size_t>(opt_.max_header_bytes, std::numeric_limits<std::uint32_t>::max())));
      p.body_limit(opt_.limits.max_message_bytes);
      c->stream.expires_after(opt_.idle_timeout);
      c->idle = true;
      auto [ec, n] = co_await http::async_read_header(c->stream, c->buf, p, use_tuple);
      (void)n;
      c->idle = false;
      if (ec) {
        linger = true;
        if (ec == http::error::header_limit)
          co_await reply(*c, error_response(http::status::request_header_fields_too_large, false,
                                            http_error_code, "Request Header Fields Too Large"));
        else if (ec == http::error::body_limit)
          co_await reply(*c, too_large());
        else if (ec.category() ==
                     beast::http::make_error_code(http::error::bad_target).category() &&
                 ec != http::error::end_of_stream && ec != http::error::partial_message)
          co_await reply(*c, error_response(http::status::bad_request, false, http_error_code,
                                            "Bad Request: malformed HTTP"));
        break;
      }
      c->stream.expires_after(opt_.request_timeout);
      if (auto refusal = check_access(p.get())) {
        co_await reply(*c, std::move(*refusal));
        linger = true;
        break;
      }
      if (!p.is_done()) {
        if (lower(sv(p.get()[http::field::expect])) == "100-continue") {
          static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
          auto [wec, wn] = co_await asio::async_write(c->stream, asio::buffer(cont), use_tuple);
          (void)wn;
          if (wec) break;
        }
        auto [bec, bn] = co_await http::async_read(c->stream, c->buf, p, use_tuple);
        (void)bn;
        if (bec == http::error::body_limit) {
          co_await reply(*c, too_large());
          linger = true;
          break;
        }
        if (bec) break;
      }
      auto req = p.release();
      const bool again = co_await dispatch(c, req);
      if (!again || closed_) break;
    }
    c->watching = false;
    error_code ignored;
    c->stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (linger && !closed_ && c->stream.socket().is_open()) co_await drain(*c);
    c->stream.close();
    conns_.erase(c->id);
    if (closed_ && conns_.empty()) grace_.cancel();
  }

  // Reads and discards what the client still sends (bounded in time and bytes), so that closing
  // with unread data does not reset the connection before the client reads our answer.
  awaitable<void> drain(connection& c) {
    std::array<char, 16384> buf;
    std::size_t total = 0;
    c.stream.expires_after(refuse_budget);
    for (;;) {
      auto [ec, n] = co_await c.stream.async_read_some(asio::buffer(buf), use_tuple);
      total += n;
      if (ec || total > opt_.limits.max_message_bytes + buf.size()) break;
    }
  }

  response too_large() const {
    return error_response(http::status::payload_too_large, false, http_error_code,
                          "Payload Too Large: a message may have at most " +
                              std::to_string(opt_.limits.max_message_bytes) + " bytes");
  }

  // Writes a whole response; true when it went out and the connection may serve another.
  awaitable<bool> reply(connection& c, response res) {
    c.stream.expires_after(opt_.request_timeout);
    const bool keep = res.keep_alive();
    auto [ec, n] = co_await http::async_write(c.stream, res, use_tuple);
    (void)n;
    co_return !ec && keep;
  }

  // DNS-rebinding protection (Host, Origin) and the optional bearer token.
  std::optional<response> check_access(const http::request_header<>& h) const {
    if (!opt_.allow_remote) {
      const auto host = lower(sv(h[http::field::host]));
      if (std::find(allowed_hosts_.begin(), allowed_hosts_.end(), host) == allowed_hosts_.end())
        return error_response(http::status::forbidden, false, http_error_code,
                              "Forbidden: Host must be localhost, 127.0.0.1 or [::1] with port " +
                                  std::to_string(port_));
    }
    if (auto it = h.find(http::field::origin); it != h.end() && !origin_ok(sv(it->value())))
      return error_response(http::status::forbidden, false, http_error_code,
                            "Forbidden: Origin is not a loopback origin");
    if (!token_.empty() && !token_ok(sv(h[http::field::authorization]))) {
      auto res = error_response(http::status::unauthorized, false, http_error_code,
                                "Unauthorized: a valid bearer token is required");
      res.set(http::field::www_authenticate, "Bearer realm=\"mcpmux\"");
      return res;
    }
    return std::nullopt;
  }

  static bool origin_ok(std::string_view origin) {
    const auto o = lower(trim(origin));
    std::string_view rest = o;
    if (rest.substr(0, 7) == "http://")
      rest.remove_prefix(7);
    else if (rest.substr(0, 8) == "https://")
      rest.remove_prefix(8);
    else
      return false;  // "null", file:, chrome-extension:, ...
    for (std::string_view name : {"localhost", "127.0.0.1", "[::1]"}) {
      if (rest.substr(0, name.size()) != name) continue;
      auto port = rest.substr(name.size());
      if (port.empty()) return true;
      if (port.front() != ':' || port.size() < 2 || port.size() > 6) return false;
      return std::all_of(port.begin() + 1, port.end(),
                         [](char ch) { return ch >= '0' && ch <= '9'; });
    }
    return false;
  }

  bool token_ok(std::string_view header) const {
    const auto v = trim(header);
    if (v.size() < 7 || lower(v.substr(0, 7)) != "bearer ") return false;
    const auto given = trim(std::string_view(v).substr(7));
    // Constant time in the token's content; its length is not a secret worth hiding.
    if (given.size() != token_.size()) return false;
    unsigned char diff = 0;  // no early exit: no timing hint about where they differ
    for (std::size_t i = 0; i < token_.size(); ++i)
      diff |= static_cast<unsigned char>(given[i] ^ token_[i]);
    return diff == 0;
  }

  // ---- routing ------------------------------------------------------------------------------

  awaitable<bool> dispatch(conn_ptr c, request& req) {
    if (closed_)  // its body came in after close()
      co_return co_await reply(
          *c, error_response(http::status::service_unavailable, false, http_error_code,
                             "Service Unavailable: mcpmuxd is stopping"));
    const bool ka = req.keep_alive();
    const auto target = sv(req.target());
    const auto path = target.substr(0, target.find('?'));
    const auto method = req.method();
    if (path == "/mcp") {
      if (method == http::verb::post) co_return co_await handle_post(c, req);
      if (method == http::verb::get) co_return co_await handle_get(c, req);
      if (method == http::verb::delete_) co_return co_await handle_delete(c, req);
      auto res = error_response(http::status::method_not_allowed, ka, http_error_code,
                                "Method Not Allowed");
      res.set(http::field::allow, "GET, POST, DELETE");
      co_return co_await reply(*c, std::move(res));
    }
    if (path == "/status" || path == "/metrics") {
      if (method != http::verb::get) {
        auto res = error_response(http::status::method_not_allowed, ka, http_error_code,
                                  "Method Not Allowed");
        res.set(http::field::allow, "GET");
        co_return co_await reply(*c, std::move(res));
      }
      if (path == "/status")
        co_return co_await reply(*c, make_response(http::status::ok, ka, status_()));
      std::string text;
      if (metrics_)
        text = metrics_();
      else
        text = metrics_from_status(status_());
      co_return co_await reply(*c, make_response(http::status::ok, ka, std::move(text),
                                                 "text/plain; version=0.0.4; charset=utf-8"));
    }
    co_return co_await reply(
        *c, error_response(http::status::not_found, ka, http_error_code, "Not Found"));
  }

  // The session named by Mcp-Session-Id, or the refusal (400 missing, 404 unknown).
  std::variant<std::shared_ptr<http_session>, response> find_session(const request& req) const {
    const auto sid = sv(req["Mcp-Session-Id"]);
    if (sid.empty())
      return error_response(http::status::bad_request, req.keep_alive(), http_error_code,
                            "Bad Request: Mcp-Session-Id header is required");
    auto it = sessions_.find(std::string(sid));
    if (it == sessions_.end())
      return error_response(http::status::not_found, req.keep_alive(), http_error_code,
                            "Session not found");
    return it->second;
  }

  // 400 when MCP-Protocol-Version names a version we do not speak.
  std::optional<response> check_version(const request& req) const {
    for (const auto& field : boost::make_iterator_range(req.equal_range("MCP-Protocol-Version"))) {
      const auto v = sv(field.value());
      if (mcp::is_legacy_version(v)) continue;
      return error_response(http::status::bad_request, req.keep_alive(), http_error_code,
                            "Bad Request: unsupported MCP-Protocol-Version \"" + clip(v, 40) +
                                "\" (supported: " + supported_versions() + ")");
    }
    return std::nullopt;
  }

  static bool wants_priming(const request& req) {
    const auto v = sv(req["MCP-Protocol-Version"]);
    return !v.empty() && v >= priming_version;
  }

  awaitable<bool> handle_post(conn_ptr c, request& req) {
    const bool ka = req.keep_alive();
    const auto accept = sv(req[http::field::accept]);
    if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream"))
      co_return co_await reply(
          *c, error_response(http::status::not_acceptable, ka, http_error_code,
                             "Not Acceptable: Accept must list application/json and "
                             "text/event-stream"));
    if (media_type(sv(req[http::field::content_type])) != "application/json")
      co_return co_await reply(
          *c, error_response(http::status::unsupported_media_type, ka, http_error_code,
                             "Unsupported Media Type: Content-Type must be application/json"));
    if (auto bad = check_version(req)) co_return co_await reply(*c, std::move(*bad));
    error_code jec;
    auto v = json::parse(req.body(), jec);
    if (jec)
      co_return co_await reply(*c,
                               error_response(http::status::bad_request, ka, rpc_code::parse_error,
                                              "Parse error: the body is not valid JSON"));
    if (v.is_array())
      co_return co_await reply(
          *c, error_response(http::status::bad_request, ka, rpc_code::invalid_request,
                             "Invalid Request: batches are not supported; POST one message"));
    const json::object* o = v.if_object();
    const json::value* m = o ? o->if_contains("method") : nullptr;
    const json::value* id = o ? o->if_contains("id") : nullptr;
    const bool is_request = m && m->is_string() && id && valid_id(*id);
    const bool is_notification = m && m->is_string() && !id;
    const bool is_response = o && !m && id && (o->contains("result") || o->contains("error"));
    if (!is_request && !is_notification && !is_response)
      co_return co_await reply(
          *c, error_response(http::status::bad_request, ka, rpc_code::invalid_request,
                             "Invalid Request: not a JSON-RPC request, notification or response"));

    std::shared_ptr<http_session> s;
    bool created = false;
    if (req["Mcp-Session-Id"].empty() && is_request && m->get_string() == "initialize") {
      if (sessions_.size() >= opt_.max_sessions)
        co_return co_await reply(
            *c, error_response(http::status::service_unavailable, ka, http_error_code,
                               "Service Unavailable: too many sessions"));
      s = create_session();
      if (!s)
        co_return co_await reply(
            *c, error_response(http::status::service_unavailable, ka, http_error_code,
                               "Service Unavailable: cannot start a session"));
      created = true;
    } else {
      auto found = find_session(req);
      if (auto* r = std::get_if<response>(&found)) co_return co_await reply(*c, std::move(*r));
      s = std::get<std::shared_ptr<http_session>>(found);
    }
    s->touch();

    if (!is_request) {
      if (auto err = s->receive(req.body(), nullptr))
        co_return co_await reply(*c, make_response(http::status::bad_request, ka, std::move(*err)));
      co_return co_await reply(*c, make_response(http::status::accepted, ka));
    }
    if (s->open_streams() >= opt_.max_streams_per_session)
      co_return co_await reply(
          *c, error_response(http::status::too_many_requests, ka, http_error_code,
                             "Too Many Requests: too many requests in flight in this session"));
    auto key = json::serialize(*id);
    if (s->pending(key))
      co_return co_await reply(
          *c, error_response(http::status::bad_request, ka, rpc_code::invalid_request,
                             "Invalid Request: a request with this id is already in flight"));
    std::string progress_key;
    if (const auto* p = o->if_contains("params"); p && p->is_object())
      if (const auto* meta = p->get_object().if_contains("_meta"); meta && meta->is_object())
        if (const auto* t = meta->get_object().if_contains("progressToken"))
          progress_key = json::serialize(*t);
    auto st = s->open_post(*id, std::move(key), std::move(progress_key), wants_priming(req), c->id);
    s->receive(req.body(), st);
    // (No conditional expression inside co_await: GCC 12 destroys its temporary twice.)
    std::string header;
    if (created) header = s->id();
    co_return co_await run_stream(c, s, st, std::move(header), ka);
  }

  awaitable<bool> handle_get(conn_ptr c, request& req) {
    const bool ka = req.keep_alive();
    if (!accepts(sv(req[http::field::accept]), "text/event-stream"))
      co_return co_await reply(
          *c, error_response(http::status::not_acceptable, ka, http_error_code,
                             "Not Acceptable: Accept must list text/event-stream"));
    if (auto bad = check_version(req)) co_return co_await reply(*c, std::move(*bad));
    auto found = find_session(req);
    if (auto* r = std::get_if<response>(&found)) co_return co_await reply(*c, std::move(*r));
    auto s = std::get<std::shared_ptr<http_session>>(found);
    s->touch();
    stream_ptr st;
    if (const auto last = sv(req["Last-Event-ID"]); !last.empty()) st = s->resume(last, c->id);
    if (!st) {
      if (s->get_attached())
        co_return co_await reply(
            *c, error_response(http::status::conflict, ka, http_error_code,
                               "Conflict: this session already has a GET stream open"));
      if (s->open_streams() >= opt_.max_streams_per_session)
        co_return co_await reply(
            *c, error_response(http::status::too_many_requests, ka, http_error_code,
                               "Too Many Requests: too many open streams in this session"));
      st = s->open_get(c->id, wants_priming(req));
    }
    co_return co_await run_stream(c, s, st, {}, ka);
  }

  awaitable<bool> handle_delete(conn_ptr c, request& req) {
    auto found = find_session(req);
    if (auto* r = std::get_if<response>(&found)) co_return co_await reply(*c, std::move(*r));
    std::get<std::shared_ptr<http_session>>(found)->terminate("the client ended the session");
    co_return co_await reply(*c, make_response(http::status::ok, req.keep_alive()));
  }

  std::shared_ptr<http_session> create_session() {
    auto id = random_id();
    auto s = std::make_shared<http_session>(io_, id, opt_,
                                            [weak = weak_from_this()](const std::string& sid) {
                                              if (auto self = weak.lock())
                                                self->sessions_.erase(sid);
                                            });
    sessions_.emplace(id, s);
    on_session_(s);
    if (!s->started()) {
      s->terminate("not started");
      return nullptr;
    }
    log_.debug("session {} created", id.substr(0, 8));
    return s;
  }

  // ---- writing a stream ---------------------------------------------------------------------

  // Notices a client that hangs up while its request is pending (no read is in flight then).
  static void watch_peer(const conn_ptr& c) {
    c->watching = true;
    c->stream.socket().async_wait(tcp::socket::wait_read, [c, gen = ++c->watch_gen](error_code ec) {
      if (!c->watching || gen != c->watch_gen || ec == asio::error::operation_aborted) return;
      if (!ec) {
        char b;
        const auto n = ::recv(c->stream.socket().native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0) {
          c->watching = false;  // a pipelined request: the client is still there
          return;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
          return watch_peer(c);
      }
      c->watching = false;
      c->peer_gone = true;
      if (c->current) c->current->notify();
    });
  }

  awaitable<bool> write_chunk(connection& c, std::string_view data) {
    c.stream.expires_after(opt_.request_timeout);
    auto [ec, n] =
        co_await asio::async_write(c.stream, http::make_chunk(asio::buffer(data)), use_tuple);
    (void)n;
    co_return !ec;
  }

  // Writes `st` to the client: one JSON body, or an SSE stream until the answer (POST) or the
  // session's end (GET). True when the connection can serve another request afterwards.
  awaitable<bool> run_stream(conn_ptr c, std::shared_ptr<http_session> s, stream_ptr st,
                             std::string session_header, bool ka) {
    c->current = st;
    watch_peer(c);
    bool headers = false;
    bool clean = false;
    for (;;) {
      // After close() the stream is finished: what it holds still goes out, then the connection
      // closes (or the grace period runs out and cuts it).
      if (c->peer_gone) break;
      if (st->owner != c->id) {  // a resumed connection took the stream over
        if (headers) {
          c->stream.expires_after(opt_.request_timeout);
          co_await asio::async_write(c->stream, http::make_chunk_last(), use_tuple);
        }
        break;
      }
      if (!st->sse && st->json_reply) {
        auto res = make_response(http::status::ok, ka && !closed_, std::move(*st->json_reply));
        st->json_reply.reset();
        if (!session_header.empty()) res.set("Mcp-Session-Id", session_header);
        clean = co_await reply(*c, std::move(res));
        break;
      }
      if (st->sse) {
        if (!headers) {
          http::response<http::empty_body> res{http::status::ok, 11};
          res.set(http::field::content_type, "text/event-stream");
          res.set(http::field::cache_control, "no-cache");
          if (!session_header.empty()) res.set("Mcp-Session-Id", session_header);
          res.keep_alive(ka && !closed_);
          res.chunked(true);
          http::response_serializer<http::empty_body> sr{res};
          c->stream.expires_after(opt_.request_timeout);
          auto [ec, n] = co_await http::async_write_header(c->stream, sr, use_tuple);
          (void)n;
          if (ec) break;
          headers = true;
          continue;
        }
        if (!st->frames.empty()) {
          std::string chunk;
          for (auto& f : st->frames) chunk += f;
          st->frames.clear();
          st->frame_bytes = 0;
          if (!co_await write_chunk(*c, chunk)) break;
          continue;
        }
        if (st->finished) {
          c->stream.expires_after(opt_.request_timeout);
          auto [ec, n] = co_await asio::async_write(c->stream, http::make_chunk_last(), use_tuple);
          (void)n;
          clean = !ec && ka;
          break;
        }
      } else if (st->finished) {
        break;  // answered elsewhere (cannot happen) or abandoned
      }
      c->stream.expires_never();
      st->wake.expires_after(headers ? opt_.keepalive_interval : std::chrono::hours(24));
      auto [wec] = co_await st->wake.async_wait(use_tuple);
      if (!wec && headers && !c->peer_gone && !closed_ && st->owner == c->id &&
          st->frames.empty() && !st->finished) {
        if (!co_await write_chunk(*c, ": keepalive\n\n")) break;
      }
    }
    c->watching = false;
    error_code ignored;
    c->stream.socket().cancel(ignored);
    c->current.reset();
    s->detach(st, c->id);
    co_return clean && !c->peer_gone;
  }

  // ---- idle sessions ------------------------------------------------------------------------

  void schedule_sweep() {
    if (opt_.session_idle_timeout.count() <= 0 || closed_) return;
    sweep_.expires_after(std::min<std::chrono::milliseconds>(opt_.session_idle_timeout, 60s));
    sweep_.async_wait([weak = weak_from_this()](error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->closed_) return;
      const auto now = steady_clock::now();
      std::vector<std::shared_ptr<http_session>> idle;
      for (auto& [id, s] : self->sessions_)
        if (s->open_streams() == 0 && now - s->last_active() >= self->opt_.session_idle_timeout)
          idle.push_back(s);
      for (auto& s : idle) s->terminate("idle");
      self->schedule_sweep();
    });
  }

  asio::io_context& io_;
  http_endpoint_options opt_;
  http_session_handler on_session_;
  http_text_source status_;
  http_text_source metrics_;
  logger log_{"http"};
  tcp::acceptor acceptor_;
  asio::steady_timer sweep_;
  asio::steady_timer grace_;  // close(): ends the wait for busy connections
  unsigned short port_ = 0;
  std::string token_;
  std::vector<std::string> allowed_hosts_;
  std::unordered_map<std::string, std::shared_ptr<http_session>> sessions_;
  std::unordered_map<std::uint64_t, conn_ptr> conns_;
  std::uint64_t next_conn_ = 1;
  bool closed_ = false;
  bool grace_over_ = false;
};

// ---- metrics ------------------------------------------------------------------------------

std::optional<double> number(const json::value* v) {
  if (!v) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  if (v->is_double()) return v->get_double();
  if (v->is_bool()) return v->get_bool() ? 1.0 : 0.0;
  return std::nullopt;
}

std::string label(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\' || ch == '"')
      out += '\\', out += ch;
    else if (ch == '\n')
      out += "\\n";
    else
      out += ch;
  }
  return out;
}

}  // namespace

std::string metrics_from_status(std::string_view status_json) {
  error_code ec;
  auto v = json::parse(status_json, ec);
  const json::object* o = !ec ? v.if_object() : nullptr;
  std::string out;
  const auto family = [&](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  const auto sample = [&](std::string_view name, std::optional<double> value,
                          std::string_view labels = {}) {
    if (!value) return;
    out += name;
    if (!labels.empty()) out.append("{").append(labels).append("}");
    // Integral values print as integers; others with 9 significant digits (no 0.1+0.2 noise).
    if (*value == std::floor(*value) && std::fabs(*value) < 1e15)
      out += fmt::format(" {}\n", static_cast<std::int64_t>(*value));
    else
      out += fmt::format(" {:.9g}\n", *value);
  };
  family("mcpmux_up", "gauge", "1 while mcpmuxd answers.");
  sample("mcpmux_up", 1.0);
  if (!o) return out;
  if (const auto* ver = o->if_contains("version"); ver && ver->is_string()) {
    family("mcpmux_build_info", "gauge", "Version of mcpmuxd (always 1).");
    sample("mcpmux_build_info", 1.0, fmt::format("version=\"{}\"", label(ver->get_string())));
  }
  family("mcpmux_clients", "gauge", "Connected clients (socket connections and HTTP sessions).");
  sample("mcpmux_clients", number(o->if_contains("clients")));
  family("mcpmux_uptime_seconds", "gauge", "Seconds since mcpmuxd started.");
  if (auto ms = number(o->if_contains("uptime_ms"))) sample("mcpmux_uptime_seconds", *ms / 1000.0);
  family("mcpmux_tools", "gauge", "Tools exposed to clients.");
  sample("mcpmux_tools", number(o->if_contains("tools")));

  const json::array* servers = nullptr;
  if (const auto* s = o->if_contains("servers")) servers = s->if_array();
  if (!servers) return out;
  struct metric {
    std::string_view name, type, help, key;
    double scale;
  };
  static constexpr metric per_server[] = {
      {"mcpmux_server_calls_total", "counter", "Requests sent to the server.", "calls", 1},
      {"mcpmux_server_errors_total", "counter", "Requests that failed (error or timeout).",
       "errors", 1},
      {"mcpmux_server_restarts_total", "counter", "Reconnects and restarts of the server.",
       "restarts", 1},
      {"mcpmux_server_tools", "gauge", "Tools the server lists.", "tools", 1},
      {"mcpmux_server_latency_p50_seconds", "gauge",
       "Median request latency over recent requests (a gauge, not a histogram).", "latency_p50_us",
       1e-6},
      {"mcpmux_server_latency_p99_seconds", "gauge",
       "99th percentile request latency over recent requests (a gauge, not a histogram).",
       "latency_p99_us", 1e-6},
  };
  const auto name_of = [](const json::value& s) -> std::string {
    const auto* n = s.is_object() ? s.get_object().if_contains("name") : nullptr;
    return n && n->is_string() ? label(n->get_string()) : std::string();
  };
  family("mcpmux_server_up", "gauge", "1 when the server is ready, else 0.");
  for (const auto& s : *servers) {
    const auto name = name_of(s);
    if (name.empty()) continue;
    const auto* st = s.get_object().if_contains("state");
    const bool up = st && st->is_string() && st->get_string() == "ready";
    sample("mcpmux_server_up", up ? 1.0 : 0.0, fmt::format("server=\"{}\"", name));
  }
  for (const auto& m : per_server) {
    family(m.name, m.type, m.help);
    for (const auto& s : *servers) {
      const auto name = name_of(s);
      if (name.empty()) continue;
      auto value = number(s.get_object().if_contains(m.key));
      if (value) *value *= m.scale;
      sample(m.name, value, fmt::format("server=\"{}\"", name));
    }
  }
  return out;
}

std::shared_ptr<http_endpoint> start_http_endpoint(
    asio::io_context& io, http_endpoint_options options, http_session_handler on_session,
    http_text_source status_json, http_text_source metrics_text, std::string* error) {
  auto ep = std::make_shared<endpoint_impl>(io, std::move(options), std::move(on_session),
                                            std::move(status_json), std::move(metrics_text));
  if (auto err = ep->open(); !err.empty()) {
    if (error) *error = std::move(err);
    return nullptr;
  }
  ep->run();
  return ep;
}

}  // namespace mcpmux
