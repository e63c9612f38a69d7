#include "core/handshake.hpp"

#include <algorithm>
#include <boost/json/serialize.hpp>

#include "core/protocol/versions.hpp"

namespace mcpmux {

using namespace std::chrono_literals;

legacy_handshake::legacy_handshake(std::chrono::milliseconds timeout, std::string server)
    : timeout_(timeout), server_(std::move(server)) {}

std::optional<legacy_handshake::clock::time_point> legacy_handshake::deadline() const {
  if (timeout_.count() == 0) return std::nullopt;
  return started_ + timeout_;
}

bool legacy_handshake::offers(collection c) const {
  return capabilities_.contains(info(c).capability);
}

legacy_handshake::action legacy_handshake::failed(std::string why) {
  phase_ = phase::done;
  action a;
  a.what = action::fail;
  a.error = std::move(why);
  return a;
}

legacy_handshake::action legacy_handshake::start(clock::time_point now) {
  started_ = now;
  phase_ = phase::initialize;
  json::object caps;
  caps["roots"] = json::object{{"listChanged", true}};
  // Answered by the client whose call the server is serving (or -32601 when none can).
  caps["sampling"] = json::object{};
  caps["elicitation"] = json::object{};
  action a;
  a.what = action::send;
  a.method = "initialize";
  a.params["protocolVersion"] = mcp::latest_legacy_version;
  a.params["capabilities"] = std::move(caps);
  a.params["clientInfo"] = json::object{{"name", "mcpmux"}, {"version", MCPMUX_VERSION}};
  return a;  // bounded by the handshake's deadline
}

legacy_handshake::action legacy_handshake::on_reply(message reply, clock::time_point now) {
  if (phase_ == phase::initialize) return initialized(reply);
  if (phase_ != phase::listing || !pager_) return {};
  switch (pager_->on_page(reply, warnings_)) {
    case list_pager::status::more:
      return ask_page(now);
    case list_pager::status::done:
      lists_[current_].items = pager_->take();
      return list_ended(now);
    case list_pager::status::failed:
      lists_[current_].error = pager_->error();
      return list_ended(now);
  }
  return {};
}

legacy_handshake::action legacy_handshake::initialized(message& reply) {
  if (reply.kind == message_kind::error_response)
    return failed("initialize failed: " + json::serialize(reply.body["error"]));
  auto* result = reply.body["result"].if_object();
  const auto* version = result ? result->if_contains("protocolVersion") : nullptr;
  if (!version || !version->is_string()) return failed("initialize result has no protocolVersion");
  version_ = version->get_string();
  if (version_ < mcp::oldest_version)
    return failed("unsupported protocol version \"" + version_ + "\"");
  const auto* caps = result->if_contains("capabilities");
  capabilities_ = caps && caps->is_object() ? caps->get_object() : json::object{};
  if (const auto* ins = result->if_contains("instructions"); ins && ins->is_string())
    instructions_ = ins->get_string();
  if (const auto* info = result->if_contains("serverInfo"); info && info->is_object())
    if (const auto* n = info->get_object().if_contains("name"); n && n->is_string())
      server_name_ = n->get_string();
  // The seeds' order: a transport's background listener starts between the initialize answer
  // and notifications/initialized, waiting at most 1 s (less for small timeouts).
  phase_ = phase::listener;
  action a;
  a.what = action::open_listener;
  a.protocol_version = version_;
  a.max_wait =
      timeout_.count() == 0 ? 0ms : std::min<std::chrono::milliseconds>(1000ms, timeout_ / 2);
  return a;
}

legacy_handshake::action legacy_handshake::on_done(clock::time_point now) {
  if (phase_ == phase::listener) {
    phase_ = phase::initialized;
    action a;
    a.what = action::notify;
    a.method = "notifications/initialized";
    return a;
  }
  if (phase_ != phase::initialized) return {};
  // tools/list is asked even when the server declares no tools capability (many do not).
  phase_ = phase::listing;
  current_ = 0;
  lists_[0].asked = true;
  pager_.emplace(collection::tools);
  return ask_page(now);
}

legacy_handshake::action legacy_handshake::ask_page(clock::time_point now) {
  const auto c = static_cast<collection>(current_);
  action a;
  a.what = action::send;
  a.method = info(c).method;
  a.params = pager_->next_params();
  if (timeout_.count() > 0) {
    if (c == collection::tools) {
      a.timeout = timeout_;
    } else {
      // The optional lists share the time left until lists_deadline_.
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(lists_deadline_ - now);
      a.timeout = std::clamp(left, std::chrono::milliseconds(1), timeout_);
    }
  }
  return a;
}

legacy_handshake::action legacy_handshake::on_no_answer(clock::time_point now) {
  if (phase_ == phase::initialize)
    return failed("initialize: no answer within " + std::to_string(timeout_.count()) + "ms");
  if (phase_ != phase::listing) return {};
  const auto c = static_cast<collection>(current_);
  if (c == collection::tools)
    return failed("tools/list: no answer within " + std::to_string(timeout_.count()) + "ms");
  lists_[current_].error = std::string(info(c).method) + ": no answer in time";
  return list_ended(now);
}

// The current list is over (complete or failed): on to the next one the server declared.
legacy_handshake::action legacy_handshake::list_ended(clock::time_point now) {
  if (current_ == 0) lists_deadline_ = now + timeout_;
  pager_.reset();
  while (++current_ < collection_count) {
    const auto c = static_cast<collection>(current_);
    if (!offers(c)) continue;
    lists_[current_].asked = true;
    pager_.emplace(c);
    return ask_page(now);
  }
  phase_ = phase::done;
  action a;
  a.what = action::ready;
  return a;
}

legacy_handshake::action legacy_handshake::on_deadline(clock::time_point) {
  const bool handshaking = phase_ == phase::initialize || phase_ == phase::listener ||
                           phase_ == phase::initialized ||
                           (phase_ == phase::listing && current_ == 0);
  if (!handshaking) return {};
  return failed("Connection to MCP server \"" + server_ + "\" timed out after " +
                std::to_string(timeout_.count()) + "ms");
}

}  // namespace mcpmux
