// One MCP session of the HTTP endpoint, as the transport its core session talks through: routes
// each message to the client's open streams (a POST awaiting its answer, the GET stream), frames
// SSE events, keeps the replay ring that Last-Event-ID resumes from, and holds messages for the
// next GET while no stream is open.
#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <charconv>

#include "protocol/error.hpp"
#include "transports/http_endpoint_detail.hpp"

namespace mcpmux::http_server {
namespace {

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

}  // namespace

http_session::http_session(asio::io_context& io, std::string id, const http_endpoint_options& opt,
                           std::function<void(const std::string&)> forget)
    : io_(io),
      id_(std::move(id)),
      opt_(opt),
      log_("http session " + id_.substr(0, 8)),
      forget_(std::move(forget)) {}

std::error_code http_session::send(std::string text) {
  if (closed_) return errc::transport_closed;
  // The common case, a success response with an integer id, is routed without building it.
  if (auto span = scanner_.scan_response(text))
    return respond(json::value(span->id), std::move(text));
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

void http_session::close() {
  if (closed_) return;
  events_ = nullptr;
  shutdown("closed by mcpmux");
}

std::size_t http_session::queued_bytes() const {
  std::size_t n = backlog_bytes_ + (get_ ? get_->frame_bytes : 0);
  for (const auto& st : order_) n += st->frame_bytes;
  return n;
}

std::optional<std::string> http_session::receive(message&& msg, std::string_view body,
                                                 stream_ptr for_request) {
  if (closed_ || !events_) return make_error(nullptr, http_error_code, "Session closed");
  auto self = shared_from_this();
  capturing_ = true;
  capture_stream_ = std::move(for_request);
  captured_.reset();
  events_->on_message_parsed(std::move(msg), body);
  capturing_ = false;
  capture_stream_.reset();
  return std::exchange(captured_, std::nullopt);
}

stream_ptr http_session::open_post(const message& msg, std::string key, bool priming,
                                   std::uint64_t owner) {
  auto st = std::make_shared<stream>(io_.get_executor());
  st->no = next_stream_++;
  st->id = msg.id();
  st->id_key = key;
  if (const auto* meta = msg.params().if_contains("_meta"); meta && meta->is_object())
    if (const auto* t = meta->get_object().if_contains("progressToken"))
      st->progress_key = json::serialize(*t);
  st->priming = priming;
  st->owner = owner;
  posts_.emplace(std::move(key), st);
  order_.push_back(st);
  return st;
}

stream_ptr http_session::open_get(std::uint64_t owner, bool priming) {
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

stream_ptr http_session::resume(std::string_view last_event_id, std::uint64_t owner) {
  auto parsed = parse_event_id(last_event_id);
  if (!parsed) return nullptr;
  const auto [no, after] = *parsed;
  stream_ptr st;
  if (get_ && get_->no == no) st = get_;
  for (const auto& p : order_)
    if (p->no == no) st = p;
  const bool known = st || std::any_of(ring_.begin(), ring_.end(),
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

void http_session::detach(const stream_ptr& st, std::uint64_t owner) {
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

void http_session::terminate(std::string reason) {
  if (closed_) return;
  auto self = shared_from_this();
  auto* ev = std::exchange(events_, nullptr);
  shutdown(reason);
  if (ev) ev->on_closed(errc::transport_closed, std::move(reason));
}

stream_ptr http_session::latest_post() const {
  for (auto it = order_.rbegin(); it != order_.rend(); ++it)
    if ((*it)->owner && !(*it)->finished) return *it;
  return nullptr;
}

stream_ptr http_session::progress_owner(const json::object& msg) const {
  const auto* p = msg.if_contains("params");
  const auto* t = p && p->is_object() ? p->get_object().if_contains("progressToken") : nullptr;
  if (!t) return nullptr;
  const auto key = json::serialize(*t);
  for (const auto& st : order_)
    if (st->progress_key == key && st->owner && !st->finished) return st;
  return nullptr;
}

std::error_code http_session::respond(const json::value& id, std::string text) {
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
    log_.debug("dropped a response to {} that no request waits for", clip(json::serialize(id), 60));
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

void http_session::start_sse(stream& st) {
  st.sse = true;
  if (!st.priming || !st.owner) return;
  auto frame =
      "id: " + std::to_string(st.no) + "-" + std::to_string(st.next_seq++) + "\ndata: \n\n";
  st.frame_bytes += frame.size();
  st.frames.push_back(std::move(frame));
}

std::error_code http_session::push_event(stream& st, std::string_view text) {
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

void http_session::remember(std::uint64_t no, std::uint64_t seq, const std::string& frame) {
  if (opt_.replay_events == 0 || frame.size() > opt_.replay_bytes) return;
  ring_.push_back({no, seq, frame});
  ring_bytes_ += frame.size();
  while (ring_.size() > opt_.replay_events || ring_bytes_ > opt_.replay_bytes) {
    ring_bytes_ -= ring_.front().frame.size();
    ring_.pop_front();
  }
}

std::error_code http_session::hold(std::string text) {
  backlog_bytes_ += text.size();
  backlog_.push_back(std::move(text));
  while (backlog_.size() > opt_.backlog_messages || backlog_bytes_ > opt_.limits.max_queue_bytes) {
    backlog_bytes_ -= backlog_.front().size();
    backlog_.pop_front();
    if (!backlog_warned_) log_.warn("no GET stream open: dropping the oldest held messages");
    backlog_warned_ = true;
  }
  return {};
}

void http_session::flush_backlog() {
  auto held = std::exchange(backlog_, {});
  backlog_bytes_ = 0;
  for (auto& m : held) push_event(*get_, m);
}

void http_session::shutdown(std::string_view reason) {
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

}  // namespace mcpmux::http_server
