// rpc_peer: the one place where requests meet their answers, for every transport.
#include "core/rpc_peer.hpp"

#include <boost/asio/io_context.hpp>

#include "core/timer.hpp"
#include "protocol/error.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {

outgoing_info describe_request(std::int64_t id, std::string_view method, const json::value& params,
                               std::vector<std::pair<std::string, std::string>> headers) {
  outgoing_info info;
  info.what = outgoing_info::kind::request;
  info.method = method;
  info.id = id;
  const auto* p = params.if_object();
  if (!p || !mcp::has_modern_meta(*p)) return info;
  const auto& version = p->at("_meta").as_object().at(mcp::meta_key::protocol_version);
  if (!version.is_string() || version.get_string().empty()) return info;
  info.version = version.get_string();
  info.name = mcp::named_target(method, *p);
  info.params = std::move(headers);
  return info;
}

outgoing_info describe_notification(std::string_view method) {
  outgoing_info info;
  info.what = outgoing_info::kind::notification;
  info.method = method;
  return info;
}

namespace {

namespace asio = boost::asio;

class rpc_peer_impl final : public rpc_peer, public transport_events {
 public:
  rpc_peer_impl(asio::io_context& io, std::shared_ptr<transport> t, rpc_peer_handlers h)
      : transport_(std::move(t)), handlers_(std::move(h)), timer_(io) {}

  ~rpc_peer_impl() override {
    if (transport_) transport_->close();
  }

  void start() override { transport_->start(*this); }

  std::optional<std::int64_t> request(
      std::string_view method, request_params params,
      std::optional<std::chrono::milliseconds> timeout, response_handler done, reply_form form,
      std::shared_ptr<request_tag> tag,
      std::vector<std::pair<std::string, std::string>> headers) override {
    if (closed_) {
      done({errc::transport_closed, std::nullopt, true});
      return std::nullopt;
    }
    const auto now = steady_clock::now();
    std::optional<steady_clock::duration> t;
    if (timeout) t = *timeout;
    const auto id = pending_.add(std::string(method), now, t, std::move(done),
                                 form == reply_form::raw, std::move(tag));
    const auto sent = send_request(id, method, params, std::move(headers));
    if (auto ec = sent) {
      if (auto e = pending_.take(id)) e->handler({ec, std::nullopt, true});
      return std::nullopt;
    }
    if (t) arm_timer(now + *t);
    return id;
  }

  // The request's text to the transport. A call's params as text to a transport told nothing of
  // them (the usual request) are written in a buffer kept from one request to the next, which
  // the transport copies only when the request has to wait.
  std::error_code send_request(std::int64_t id, std::string_view method,
                               const request_params& params,
                               std::vector<std::pair<std::string, std::string>> headers) {
    static const json::value no_params;
    const json::value wire_id(id);
    if (transport_->reads_descriptions())
      return transport_->send_described(
          params.dom ? make_request(wire_id, method, *params.dom)
                     : make_request_text(wire_id, method, params.text),
          describe_request(id, method, params.dom ? *params.dom : no_params, std::move(headers)));
    if (params.dom) return transport_->send(make_request(wire_id, method, *params.dom));
    request_text_.clear();
    append_request_text(request_text_, wire_id, method, params.text);
    const auto sent = transport_->send_copy(request_text_);
    if (request_text_.capacity() > kept_request_text) std::string().swap(request_text_);
    return sent;
  }

  std::int64_t next_id() const override { return pending_.next_id(); }
  request_tag* tag_of(std::int64_t id) const override { return pending_.tag(id); }
  std::vector<request_tag*> tags() const override { return pending_.tags(); }

  bool notify(std::string_view method, const json::value& params) override {
    return notify_described(method, params, describe_notification(method));
  }

  bool notify_described(std::string_view method, const json::value& params, outgoing_info info) {
    return !closed_ &&
           !transport_->send_described(make_notification(method, params), std::move(info));
  }

  bool send_raw(std::string text) override {
    return !closed_ && !transport_->send(std::move(text));
  }

  void cancel(std::int64_t id, std::string_view reason) override {
    if (!pending_.take(id)) return;
    send_cancelled(id, reason);
  }

  void extend(std::int64_t id, std::chrono::milliseconds timeout) override {
    if (pending_.set_deadline(id, steady_clock::now() + timeout)) arm_timer();
  }

  void close() override {
    if (closed_) return;
    closed_ = true;
    transport_->close();
    fail_all(errc::transport_closed);
  }

  std::size_t pending() const override { return pending_.size(); }
  transport& channel() override { return *transport_; }

  // transport_events
  void on_message(std::string_view text) override { handle(text, nullptr); }
  void on_message_buffer(std::string&& text) override { handle(text, &text); }

  void on_oversize(std::size_t bytes) override {
    if (handlers_.on_bad_message)
      handlers_.on_bad_message({}, "message of " + std::to_string(bytes) +
                                       " bytes exceeds max_message_bytes; discarded");
  }

  // A line over the cap is discarded, and with it the answer it may have been: the request
  // waiting for it fails now, saying why, instead of at its deadline. Whose answer it was, its
  // first bytes may tell (the id comes first from most servers). When they cannot (the
  // TypeScript SDK writes the id after a result of megabytes), every request pending now fails:
  // one answered later pays a retry, which costs less than a silent wait for the timeout. A line
  // that is no answer to us (a notification, a request, not JSON-RPC) fails nothing.
  void on_oversize_head(std::size_t bytes, std::string_view head) override {
    on_oversize(bytes);
    const auto line = read_line_head(head);
    if (line.what == line_head::kind::other) return;
    const std::string why = "the server sent a message of at least " + std::to_string(bytes) +
                            " bytes, over max_message_bytes; it was discarded";
    auto fail = [&](std::int64_t id, pending_table::entry& e) {
      message msg{message_kind::error_response, {}};
      msg.body = json::object{{"jsonrpc", "2.0"},
                              {"id", id},
                              {"error", {{"code", rpc_code::internal_error}, {"message", why}}}};
      e.handler({{}, std::move(msg)});
    };
    auto self = shared_from_this();  // a handler may drop the owner's last reference
    if (line.what == line_head::kind::answer) {
      if (auto e = pending_.take(*line.id)) fail(*line.id, *e);
      return;
    }
    for (auto& [id, e] : pending_.take_all()) fail(id, e);
  }

  void on_closed(std::error_code ec, std::string reason) override {
    if (closed_) return;
    closed_ = true;
    // Keep ourselves alive through the callbacks: an owner may drop its last reference in them.
    auto self = shared_from_this();
    // The owner records why first, so that the failed requests can say it.
    if (handlers_.on_closed) handlers_.on_closed(ec, std::move(reason));
    fail_all(errc::transport_closed);
  }

 private:
  // One message; `owned`, when given, holds `text` and may be taken.
  void handle(std::string_view text, std::string* owned) {
    // Most traffic is answers: a success response is matched without building it, and handed
    // on as text (the transport's own buffer when it offers one) when its request asked so.
    if (auto span = parser_.scan_response(text); span && pending_.wants_raw(span->id)) {
      std::string raw;
      if (owned) {
        raw = std::move(*owned);
      } else {
        raw.reserve(text.size() + 24);  // room for a longer client id, rewritten in place
        raw.assign(text);
      }
      return deliver_raw(*span, std::move(raw));
    }
    auto parsed = parser_.parse(text);
    if (const auto* err = parsed.if_error()) {
      if (handlers_.on_bad_message) handlers_.on_bad_message(text, err->message);
      return;
    }
    auto& msg = parsed.value();
    switch (msg.kind) {
      case message_kind::response:
      case message_kind::error_response: {
        // Our ids are integers; anything else (or unknown) is a stray answer: ignored.
        const auto* n = msg.id().if_int64();
        if (!n) {
          if (handlers_.on_bad_message)
            handlers_.on_bad_message(text, "response to an unknown request id");
          return;
        }
        if (auto e = take_answered(*n, text)) e->handler({{}, std::move(msg)});
        return;
      }
      case message_kind::request:
        if (handlers_.on_request) handlers_.on_request(std::move(msg));
        return;
      case message_kind::notification:
        if (handlers_.on_notification) handlers_.on_notification(std::move(msg));
        return;
    }
  }

  void deliver_raw(const response_span& span, std::string text) {
    auto e = pending_.take(span.id);
    rpc_outcome out;  // (made where it is handed on: a message is not moved)
    auto& msg = out.reply.emplace(message_kind::response, json::object());
    msg.raw = std::move(text);
    msg.raw_id_pos = span.id_pos;
    msg.raw_id_len = span.id_len;
    msg.raw_is_error = span.is_error;
    e->handler(std::move(out));
  }

  // The request an answer with `id` belongs to; a late or stray answer is reported and dropped.
  std::optional<pending_table::entry> take_answered(std::int64_t id, std::string_view text) {
    auto e = pending_.take(id);
    if (!e) {
      if (pending_.issued(id)) {
        if (handlers_.on_late_answer) handlers_.on_late_answer(id);
      } else if (handlers_.on_bad_message) {
        handlers_.on_bad_message(text, "response to an unknown request id");
      }
    }
    return e;
  }

  void fail_all(errc why) {
    timer_.cancel();
    armed_.reset();
    for (auto& [id, e] : pending_.take_all()) e.handler({why, std::nullopt});
  }

  void send_cancelled(std::int64_t id, std::string_view reason) {
    json::object p;
    p["requestId"] = id;
    if (!reason.empty()) p["reason"] = reason;
    auto info = describe_notification("notifications/cancelled");
    info.cancels = id;
    notify_described("notifications/cancelled", p, std::move(info));
  }

  // One timer per connection, armed at the earliest deadline.
  // For a new deadline: one no earlier than the armed one changes nothing (the table's
  // answered deadlines are dropped when the timer fires, not at every request).
  void arm_timer(steady_clock::time_point deadline) {
    if (armed_ && *armed_ <= deadline) return;
    arm_timer();
  }

  void arm_timer() {
    auto next = pending_.next_deadline();
    if (!next || (armed_ && *armed_ <= *next)) return;
    armed_ = *next;
    timer_.expires_at(*next);
    timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) static_cast<rpc_peer_impl&>(*self).on_timer();
    });
  }

  void on_timer() {
    armed_.reset();
    auto self = shared_from_this();
    for (auto& [id, e] : pending_.take_expired(steady_clock::now())) {
      send_cancelled(id, "timed out");
      e.handler({errc::timeout, std::nullopt});
    }
    arm_timer();
  }

  std::shared_ptr<transport> transport_;
  rpc_peer_handlers handlers_;
  steady_timer timer_;
  std::optional<steady_clock::time_point> armed_;
  pending_table pending_;
  message_parser parser_;
  std::string request_text_;  ///< see send_request (let go when a request made it large)
  static constexpr std::size_t kept_request_text = 64 * 1024;
  bool closed_ = false;
};

}  // namespace

std::shared_ptr<rpc_peer> rpc_peer::create(asio::io_context& io, std::shared_ptr<transport> t,
                                           rpc_peer_handlers handlers) {
  return std::make_shared<rpc_peer_impl>(io, std::move(t), std::move(handlers));
}

}  // namespace mcpmux
