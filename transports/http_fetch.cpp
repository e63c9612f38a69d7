// A one-shot HTTP client: resolve, connect, TLS, write, read the whole answer — all under one
// deadline — for the OAuth requests mcpmux makes to authorization servers.
#include "transports/http_fetch.hpp"

#include <openssl/ssl.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <memory>

#include "transports/http_asio.hpp"
#include "transports/http_client_detail.hpp"
#include "transports/http_text.hpp"

namespace mcpmux {
namespace {

using namespace http_asio;
namespace ssl = asio::ssl;

using response = http::response<http::string_body>;

// Writes the request and reads the answer on `stream` (plain or TLS).
template <class Stream>
awaitable<error_code> exchange(Stream& stream, http::request<http::string_body>& req,
                               http::response_parser<http::string_body>& parser) {
  beast::flat_buffer buf;
  auto [wec, wn] = co_await http::async_write(stream, req, use_tuple);
  (void)wn;
  if (wec) co_return wec;
  auto [rec, rn] = co_await http::async_read(stream, buf, parser, use_tuple);
  (void)rn;
  co_return rec;
}

awaitable<fetch_response> run(asio::io_context& io, fetch_request r) {
  fetch_response out;
  auto parsed = http_client::parse_origin(r.url);
  if (!parsed) {
    out.error = std::move(parsed.error().message);
    co_return out;
  }
  const http_client::origin& o = *parsed;
  std::unique_ptr<ssl::context> tls;
  if (o.tls) {
    auto made = http_client::client_tls_context(r.ca_file);
    if (!made) {
      out.error = std::move(made.error().message);
      co_return out;
    }
    tls = std::move(*made);
  }
  // One deadline for the whole exchange: the resolver and the stream both give up at it.
  const auto deadline = std::chrono::steady_clock::now() + r.timeout;
  tcp::resolver resolver(io);
  asio::steady_timer timer(io);
  timer.expires_at(deadline);
  timer.async_wait([&resolver](error_code ec) {
    if (!ec) resolver.cancel();
  });
  auto [rec, results] = co_await resolver.async_resolve(o.host, o.port, use_tuple);
  timer.cancel();
  if (rec) {
    out.error = "cannot resolve " + o.host + ": " +
                (rec == asio::error::operation_aborted ? std::string("timed out") : rec.message());
    co_return out;
  }
  beast::tcp_stream plain(io);
  plain.expires_at(deadline);
  auto [cec, ep] = co_await plain.async_connect(results, use_tuple);
  (void)ep;
  if (cec) {
    out.error = "cannot connect to " + o.host + ":" + o.port + ": " +
                (cec == beast::error::timeout ? std::string("timed out") : cec.message());
    co_return out;
  }
  http::request<http::string_body> req{r.method == "POST" ? http::verb::post : http::verb::get,
                                       o.target, 11};
  req.set(http::field::host, o.host_header);
  req.set(http::field::user_agent, "mcpmux/" MCPMUX_VERSION);
  req.set(http::field::accept, r.accept);
  for (const auto& [k, v] : r.headers)
    if (safe_header_value(k) && safe_header_value(v)) req.set(k, v);
  if (!r.content_type.empty()) req.set(http::field::content_type, r.content_type);
  req.keep_alive(false);
  req.body() = std::move(r.body);
  req.prepare_payload();
  http::response_parser<http::string_body> parser;
  parser.body_limit(r.max_body);
  error_code ec;
  if (tls) {
    beast::ssl_stream<beast::tcp_stream> stream(std::move(plain), *tls);
    if (!http_client::is_ip_literal(o.host))
      SSL_set_tlsext_host_name(stream.native_handle(), o.host.c_str());
    stream.set_verify_callback(ssl::host_name_verification(o.host));
    auto [hec] = co_await stream.async_handshake(ssl::stream_base::client, use_tuple);
    ec = hec ? hec : co_await exchange(stream, req, parser);
  } else {
    ec = co_await exchange(plain, req, parser);
  }
  if (ec == http::error::body_limit) {
    out.error = "the answer is longer than " + std::to_string(r.max_body) + " bytes";
    co_return out;
  }
  if (ec && !parser.is_header_done()) {
    out.error = std::string(r.method) + " " + o.host + ": " +
                (ec == beast::error::timeout ? std::string("timed out") : ec.message());
    co_return out;
  }
  auto& res = parser.get();
  out.status = res.result_int();
  out.content_type = media_type(res[http::field::content_type]);
  out.location = std::string(res[http::field::location]);
  out.www_authenticate = std::string(res[http::field::www_authenticate]);
  if (ec && !parser.is_done()) {
    out.error = "the answer was cut short: " + ec.message();
    co_return out;
  }
  out.body = std::move(res.body());
  co_return out;
}

}  // namespace

void http_fetch(boost::asio::io_context& io, fetch_request req,
                std::function<void(fetch_response)> done) {
  asio::co_spawn(io, run(io, std::move(req)),
                 [done = std::move(done)](std::exception_ptr e, fetch_response r) {
                   if (e) {
                     r = {};
                     r.error = "internal error in an HTTP request";
                   }
                   done(std::move(r));
                 });
}

}  // namespace mcpmux
