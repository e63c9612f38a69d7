// The filtering proxy: one coroutine per client connection (head, checks, lookup, connect, then
// the relay both ways), a watchdog per connection for its deadlines, and the proxy's set of live
// connections so that stop() reaches every one.
#include "sandbox/net_proxy.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <unordered_set>

#include "base/clock.hpp"
#include "base/log.hpp"
#include "base/text.hpp"
#include "sandbox/net_rules.hpp"

namespace mcpmux {
namespace {

namespace asio = boost::asio;
using asio::awaitable;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using unix_stream = asio::local::stream_protocol;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t relay_chunk = 16 * 1024;  // per direction: the relay's whole buffer

std::string answer(std::string_view status, std::string_view body) {
  std::string out = "HTTP/1.1 ";
  out.append(status).append("\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ");
  out.append(std::to_string(body.size() + 1)).append("\r\nConnection: close\r\n\r\n");
  out.append(body).append("\n");
  return out;
}

std::string where(std::string_view host, unsigned port) {
  const bool v6 = host.find(':') != std::string_view::npos;
  return (v6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::to_string(port);
}

class proxy_connection;

// What the proxy's connections share with it; they hold it, so it outlives the net_proxy that
// made it until the last of them has ended.
struct proxy_state : std::enable_shared_from_this<proxy_state> {
  proxy_state(asio::io_context& io, net_proxy_options o)
      : io(io), opt(std::move(o)), acceptor(io), log("netproxy " + opt.server) {}

  awaitable<void> accept_loop();
  void refuse(const std::string& host, unsigned port, std::string reason);

  asio::io_context& io;
  net_proxy_options opt;
  net_allowlist list;
  unix_stream::acceptor acceptor;
  logger log;
  std::unordered_set<proxy_connection*> live;
  net_proxy_stats stats;
  bool stopped = false;
};

// One client of the proxy, from its request head to the end of its tunnel.
class proxy_connection : public std::enable_shared_from_this<proxy_connection> {
 public:
  proxy_connection(std::shared_ptr<proxy_state> owner, unix_stream::socket client)
      : owner_(std::move(owner)),
        client_(std::move(client)),
        upstream_(owner_->io),
        resolver_(owner_->io),
        timer_(owner_->io) {
    owner_->live.insert(this);
  }
  ~proxy_connection() { owner_->live.erase(this); }

  awaitable<void> run();
  awaitable<void> watch();
  /// Closes both sides and cancels what waits: every pending operation ends.
  void abort() {
    closed_ = true;
    error_code ignored;
    resolver_.cancel();
    timer_.cancel();
    client_.close(ignored);
    upstream_.close(ignored);
  }

 private:
  awaitable<bool> read_head(std::string& buffer, proxy_parse& parsed);
  awaitable<bool> open_upstream(const proxy_request& req, const net_rule& rule);
  awaitable<bool> pass_answer_head();
  template <class From, class To>
  awaitable<void> relay(From& from, To& to, bool end_all);
  awaitable<void> send_client(std::string text) {
    co_await asio::async_write(client_, asio::buffer(text), use_tuple);
  }
  /// Moves the deadline; the timer is re-armed only when it would now fire too late (a phase
  /// with a shorter limit), not for each read that pushes it on.
  void extend(std::chrono::milliseconds d) {
    deadline_ = std::chrono::steady_clock::now() + d;
    if (deadline_ < timer_.expiry()) timer_.expires_at(deadline_);
  }

  std::shared_ptr<proxy_state> owner_;
  unix_stream::socket client_;
  tcp::socket upstream_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::chrono::steady_clock::time_point deadline_;
  bool closed_ = false;
  /// Looking up and connecting: the deadline cancels that alone, so the client hears a 502.
  bool connecting_ = false;
  bool timed_out_ = false;
  int directions_ = 2;  // relays still running
};

// Ends the connection at its deadline; the deadline moves with each byte relayed, so the timer
// is re-armed only when it fires, not on every read.
awaitable<void> proxy_connection::watch() {
  auto self = shared_from_this();
  while (!closed_) {
    timer_.expires_at(deadline_);
    co_await timer_.async_wait(use_tuple);
    if (closed_) break;
    if (std::chrono::steady_clock::now() < deadline_) continue;
    if (connecting_) {
      error_code ignored;
      timed_out_ = true;
      connecting_ = false;
      resolver_.cancel();
      upstream_.close(ignored);
      extend(owner_->opt.connect_timeout);  // for the 502 to be written
      continue;
    }
    owner_->log.debug("a proxy connection timed out");
    abort();
  }
}

// Reads until the head is complete; false once the client has been answered or is gone.
awaitable<bool> proxy_connection::read_head(std::string& buffer, proxy_parse& parsed) {
  const auto max = owner_->opt.head_max;
  std::array<char, 4096> chunk;
  for (;;) {
    parsed = parse_proxy_request(buffer);
    const bool too_big =
        parsed.status == proxy_parse::state::done ? parsed.head_size > max : buffer.size() > max;
    if (too_big) {
      co_await send_client(
          answer("431 Request Header Fields Too Large",
                 "mcpmux: the request head is larger than " + std::to_string(max / 1024) + " KiB"));
      co_return false;
    }
    if (parsed.status == proxy_parse::state::done) co_return true;
    if (parsed.status == proxy_parse::state::bad) {
      co_await send_client(answer("400 Bad Request", "mcpmux: " + parsed.problem));
      co_return false;
    }
    auto [ec, n] = co_await client_.async_read_some(asio::buffer(chunk), use_tuple);
    if (ec || closed_) co_return false;
    buffer.append(chunk.data(), n);
  }
}

// Looks the host up, drops local addresses the rule does not name and connects; false once the
// client has been answered.
awaitable<bool> proxy_connection::open_upstream(const proxy_request& req, const net_rule& rule) {
  const auto target = where(req.host, req.port);
  connecting_ = true;
  auto flags = tcp::resolver::numeric_service;
  if (rule.what == net_rule::kind::address) flags |= tcp::resolver::numeric_host;
  auto [rec, found] =
      co_await resolver_.async_resolve(req.host, std::to_string(req.port), flags, use_tuple);
  if (closed_) co_return false;
  const auto fail = [&](std::string why) -> awaitable<bool> {
    ++owner_->stats.failed;
    owner_->log.info("{}: {}", target, why);
    co_await send_client(answer("502 Bad Gateway", "mcpmux: " + why));
    co_return false;
  };
  const auto timed_out = [&] {
    return fail("no connection to " + target + " within " +
                std::to_string(owner_->opt.connect_timeout.count() / 1000) + " s");
  };
  if (timed_out_) co_return co_await timed_out();
  if (rec) co_return co_await fail("cannot resolve " + req.host + ": " + rec.message());
  std::vector<tcp::endpoint> usable;
  std::string local;
  for (const auto& entry : found) {
    const auto address = entry.endpoint().address().to_string();
    if (!rule.local && is_local_address(address))
      local = address;
    else
      usable.push_back(entry.endpoint());
  }
  if (usable.empty()) {
    owner_->refuse(req.host, req.port,
                   "it resolves to " + local +
                       ", a local address that only an entry naming it "
                       "allows");
    co_await send_client(
        answer("403 Forbidden", "mcpmux refused " + target + ": it resolves to " + local +
                                    ", a local address, which `network` in [servers." +
                                    owner_->opt.server + "] allows only by naming it"));
    co_return false;
  }
  auto [cec, ep] = co_await asio::async_connect(upstream_, usable, use_tuple);
  (void)ep;
  if (closed_) co_return false;
  connecting_ = false;
  if (timed_out_) co_return co_await timed_out();
  if (cec) co_return co_await fail("cannot connect to " + target + ": " + cec.message());
  co_return true;
}

// Copies one way until the end; a clean end is passed on as a half-close (or, when `end_all`,
// closes the whole connection: the origin of a plain request has answered).
template <class From, class To>
awaitable<void> proxy_connection::relay(From& from, To& to, bool end_all) {
  auto self = shared_from_this();
  std::array<char, relay_chunk> buffer;
  for (;;) {
    auto [rec, n] = co_await from.async_read_some(asio::buffer(buffer), use_tuple);
    if (closed_) co_return;
    if (rec) {
      error_code ignored;
      if (rec != asio::error::eof || end_all || --directions_ == 0)
        abort();
      else
        to.shutdown(asio::socket_base::shutdown_send, ignored);
      co_return;
    }
    extend(owner_->opt.idle_timeout);
    auto [wec, written] = co_await asio::async_write(to, asio::buffer(buffer.data(), n), use_tuple);
    (void)written;
    if (closed_) co_return;
    if (wec) {
      abort();
      co_return;
    }
  }
}

awaitable<void> proxy_connection::run() {
  auto self = shared_from_this();
  auto& owner = *owner_;
  extend(owner.opt.connect_timeout);
  asio::co_spawn(owner.io, watch(), asio::detached);

  std::string buffer;
  proxy_parse parsed;
  if (!co_await read_head(buffer, parsed)) co_return abort();
  const auto& req = parsed.request;
  const net_rule* rule = owner.list.match(req.host, req.port);
  if (rule == nullptr) {
    owner.refuse(req.host, req.port, "not in the list");
    co_await send_client(answer("403 Forbidden", "mcpmux refused " + where(req.host, req.port) +
                                                     ": add it to `network` in [servers." +
                                                     owner.opt.server + "] to allow it"));
    co_return abort();
  }
  ++owner.stats.allowed;
  extend(owner.opt.connect_timeout);
  if (!co_await open_upstream(req, *rule)) co_return abort();
  owner.log.debug("{} {}", req.tunnel ? "tunnel to" : "request to", where(req.host, req.port));

  // What the client sent after the head (a TLS hello, a request body) goes first.
  std::string first = req.tunnel ? std::string() : req.origin_head;
  first.append(buffer, parsed.head_size);
  if (req.tunnel) {
    auto [ec, n] = co_await asio::async_write(
        client_, asio::buffer(std::string_view("HTTP/1.1 200 Connection established\r\n\r\n")),
        use_tuple);
    (void)n;
    if (ec || closed_) co_return abort();
  }
  if (!first.empty()) {
    auto [ec, n] = co_await asio::async_write(upstream_, asio::buffer(first), use_tuple);
    (void)n;
    if (ec || closed_) co_return abort();
  }
  extend(owner.opt.idle_timeout);
  asio::co_spawn(owner.io, relay(client_, upstream_, false), asio::detached);
  if (!req.tunnel && !co_await pass_answer_head()) co_return abort();
  co_await relay(upstream_, client_, !req.tunnel);
}

// A plain request's answer: its head says `Connection: close` (closing_response); a head larger
// than the limit goes on as it came.
awaitable<bool> proxy_connection::pass_answer_head() {
  std::string buffer;
  std::array<char, 4096> chunk;
  std::optional<std::string> head;
  while (!(head = closing_response(buffer)) && buffer.size() <= owner_->opt.head_max) {
    auto [ec, n] = co_await upstream_.async_read_some(asio::buffer(chunk), use_tuple);
    if (closed_) co_return false;
    if (ec) break;  // what came, if anything, goes on; the relay sees the end
    extend(owner_->opt.idle_timeout);
    buffer.append(chunk.data(), n);
  }
  const std::string& out = head ? *head : buffer;
  if (out.empty()) co_return true;
  auto [ec, n] = co_await asio::async_write(client_, asio::buffer(out), use_tuple);
  (void)n;
  co_return !ec && !closed_;
}

void proxy_state::refuse(const std::string& host, unsigned port, std::string reason) {
  if (stopped) return;
  ++stats.refused;
  stats.last_refused = where(host, port);
  stats.last_refused_ms = unix_now_ms();
  log.info("refused {}: {}", stats.last_refused, reason);
  if (opt.on_refused)
    opt.on_refused(net_refusal{host, port, std::move(reason), stats.last_refused_ms});
}

awaitable<void> proxy_state::accept_loop() {
  auto self = shared_from_this();
  asio::steady_timer pause(io);
  while (!stopped) {
    auto [ec, client] = co_await acceptor.async_accept(use_tuple);
    if (stopped) co_return;
    if (ec) {
      // Out of descriptors, most likely: wait a little instead of spinning.
      log.warn("accept failed: {}", ec.message());
      pause.expires_after(std::chrono::milliseconds(100));
      co_await pause.async_wait(use_tuple);
      continue;
    }
    if (live.size() >= opt.connections_max) {
      // One try, never a wait: a client that does not read gets nothing.
      const auto busy = answer("503 Service Unavailable",
                               "mcpmux: too many connections through the proxy at once");
      error_code ignored;
      client.non_blocking(true, ignored);
      client.write_some(asio::buffer(busy), ignored);
      continue;
    }
    auto c = std::make_shared<proxy_connection>(self, std::move(client));
    asio::co_spawn(io, c->run(), [log = log](std::exception_ptr e) {
      try {
        if (e) std::rethrow_exception(e);
      } catch (const std::exception& x) {
        log.error("a proxy connection failed: {}", x.what());
      }
    });
  }
}

}  // namespace

struct net_proxy::impl : proxy_state {
  using proxy_state::proxy_state;
};

net_proxy::net_proxy(asio::io_context& io, net_proxy_options options)
    : impl_(std::make_shared<impl>(io, std::move(options))) {}

net_proxy::~net_proxy() {
  stop();
}

result<void> net_proxy::start() {
  auto& m = *impl_;
  auto list = net_allowlist::parse(m.opt.network);
  if (!list) return list.error();
  m.list = std::move(*list);
  const auto& path = m.opt.socket_path;
  if (path.size() >= sizeof(sockaddr_un::sun_path))
    return failure("the proxy's socket path is too long: " + path);
  ::unlink(path.c_str());  // a stale socket of a daemon that died; the directory is ours
  error_code ec;
  m.acceptor.open(unix_stream(), ec);
  if (!ec) {
    const mode_t old = ::umask(0177);  // the socket file is born 0600
    m.acceptor.bind(unix_stream::endpoint(path), ec);
    ::umask(old);
  }
  if (!ec) m.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error_code ignored;
    m.acceptor.close(ignored);
    return failure("cannot listen on " + path + " for the network proxy of " + m.opt.server + ": " +
                   ec.message());
  }
  m.stopped = false;
  asio::co_spawn(m.io, m.accept_loop(), asio::detached);
  return {};
}

void net_proxy::stop() {
  auto& m = *impl_;
  if (m.stopped) return;
  m.stopped = true;
  error_code ignored;
  if (m.acceptor.is_open()) {
    m.acceptor.close(ignored);
    ::unlink(m.opt.socket_path.c_str());
  }
  // abort() only closes and cancels: no connection ends (and leaves `live`) before the loop
  // runs its handlers.
  for (auto* c : m.live) c->abort();
}

net_proxy_stats net_proxy::stats() const {
  return impl_->stats;
}

}  // namespace mcpmux
