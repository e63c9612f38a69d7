// The authorization redirect's loopback listener: a tiny HTTP/1.1 server for one path.
#include "transports/oauth_redirect.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <set>

#include "transports/http_asio.hpp"

namespace mcpmux {
namespace {

using namespace http_asio;
using namespace std::chrono_literals;

std::string html_escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

class listener_impl final : public redirect_listener,
                            public std::enable_shared_from_this<listener_impl> {
 public:
  listener_impl(asio::io_context& io, std::string path, redirect_handler on_redirect)
      : io_(io), acceptor_(io), path_(std::move(path)), on_redirect_(std::move(on_redirect)) {}

  result<> open(unsigned short port) {
    error_code ec;
    const tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
    acceptor_.open(ep.protocol(), ec);
    if (!ec) acceptor_.bind(ep, ec);
    if (!ec) acceptor_.listen(8, ec);
    if (ec)
      return failure("cannot listen on 127.0.0.1 for the authorization redirect: " + ec.message());
    port_ = acceptor_.local_endpoint().port();
    uri_ = "http://127.0.0.1:" + std::to_string(port_) + path_;
    asio::co_spawn(io_, accept_loop(), asio::detached);
    return {};
  }

  const std::string& redirect_uri() const override { return uri_; }

  void close() override {
    error_code ignored;
    acceptor_.close(ignored);
    for (auto* s : open_) s->close();
  }

 private:
  awaitable<void> accept_loop() {
    auto self = shared_from_this();
    for (;;) {
      auto [ec, sock] = co_await acceptor_.async_accept(use_tuple);
      if (ec) co_return;  // closed
      asio::co_spawn(io_, serve(beast::tcp_stream(std::move(sock))), asio::detached);
    }
  }

  awaitable<void> serve(beast::tcp_stream stream) {
    auto self = shared_from_this();
    open_.insert(&stream);
    stream.expires_after(10s);  // a browser sends at once; anything slower is not one
    beast::flat_buffer buf;
    http::request_parser<http::empty_body> p;
    p.header_limit(8192);
    auto [ec, n] = co_await http::async_read(stream, buf, p, use_tuple);
    (void)n;
    if (!ec) {
      const auto& req = p.get();
      const std::string target(req.target());
      const auto q = target.find('?');
      const std::string host(req[http::field::host]);
      const auto port = std::to_string(port_);
      http::status status = http::status::not_found;
      std::string text = "Not found.";
      if (!repeated_header(req).empty() ||
          (host != "127.0.0.1:" + port && host != "localhost:" + port)) {
        status = http::status::bad_request;
        text = "Bad request.";
      } else if (req.method() != http::verb::get) {
        status = http::status::method_not_allowed;
        text = "Method not allowed.";
      } else if (target.substr(0, q) == path_) {
        status = http::status::ok;
        text = on_redirect_(q == std::string::npos ? std::string_view()
                                                   : std::string_view(target).substr(q + 1));
      }
      http::response<http::string_body> res{status, 11};
      res.set(http::field::content_type, "text/html; charset=utf-8");
      res.set(http::field::cache_control, "no-store");
      res.set("Referrer-Policy", "no-referrer");
      res.set("Content-Security-Policy", "default-src 'none'");
      res.keep_alive(false);
      res.body() = "<!doctype html><meta charset=\"utf-8\"><title>mcpmux</title><p>" +
                   html_escaped(text) + "</p>\n";
      res.prepare_payload();
      co_await http::async_write(stream, res, use_tuple);
    }
    error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    open_.erase(&stream);
  }

  asio::io_context& io_;
  tcp::acceptor acceptor_;
  std::string path_;
  redirect_handler on_redirect_;
  unsigned short port_ = 0;
  std::string uri_;
  std::set<beast::tcp_stream*> open_;
};

}  // namespace

result<std::shared_ptr<redirect_listener>> start_redirect_listener(boost::asio::io_context& io,
                                                                   std::string path,
                                                                   redirect_handler on_redirect,
                                                                   unsigned short port) {
  if (path.empty() || path.front() != '/') path.insert(0, 1, '/');
  auto l = std::make_shared<listener_impl>(io, std::move(path), std::move(on_redirect));
  if (auto opened = l->open(port); !opened) return std::move(opened.error());
  return std::shared_ptr<redirect_listener>(std::move(l));
}

}  // namespace mcpmux
