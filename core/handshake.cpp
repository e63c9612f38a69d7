#include "core/handshake.hpp"

#include <algorithm>
#include <boost/json/serialize.hpp>

#include "protocol/modern.hpp"
#include "protocol/versions.hpp"

namespace mcpmux {

using namespace std::chrono_literals;

namespace {

// A JSON-RPC error of the modern era: the server speaks 2026-07-28 even if it refused this.
bool modern_error(const message& reply) {
  const auto* e = reply.body.if_contains("error");
  const auto* code = e && e->is_object() ? e->get_object().if_contains("code") : nullptr;
  if (!code || !code->is_int64()) return false;
  const auto c = code->get_int64();
  return c == rpc_code::header_mismatch || c == rpc_code::missing_capability ||
         c == rpc_code::unsupported_version;
}

// The versions a -32022 error lists as supported.
std::vector<std::string> supported_in(const message& reply) {
  std::vector<std::string> out;
  const auto* e = reply.body.if_contains("error");
  const auto* data = e && e->is_object() ? e->get_object().if_contains("data") : nullptr;
  const auto* list =
      data && data->is_object() ? data->get_object().if_contains("supported") : nullptr;
  if (list && list->is_array())
    for (const auto& v : list->get_array())
      if (v.is_string()) out.emplace_back(v.get_string());
  return out;
}

}  // namespace

json::object modern_request_meta(json::object capabilities) {
  return json::object{{"io.modelcontextprotocol/protocolVersion", mcp::latest_version},
                      {"io.modelcontextprotocol/clientCapabilities", std::move(capabilities)},
                      {"io.modelcontextprotocol/clientInfo", mcp::implementation()}};
}

handshake::handshake(std::chrono::milliseconds timeout, std::string server, era_policy policy)
    : timeout_(timeout), server_(std::move(server)), policy_(policy) {}

std::optional<handshake::clock::time_point> handshake::deadline() const {
  if (timeout_.count() == 0) return std::nullopt;
  return started_ + timeout_;
}

bool handshake::offers(collection c) const {
  return capabilities_.contains(info(c).capability);
}

handshake::action handshake::failed(std::string why) {
  phase_ = phase::done;
  action a;
  a.what = action::fail;
  a.error = std::move(why);
  return a;
}

handshake::action handshake::start(clock::time_point now) {
  started_ = now;
  return policy_ == era_policy::legacy || policy_ == era_policy::legacy_first ? send_initialize()
                                                                              : send_discover();
}

handshake::action handshake::send_discover() {
  tried_discover_ = true;
  phase_ = phase::discover;
  action a;
  a.what = action::send;
  a.method = "server/discover";
  a.params["_meta"] = modern_request_meta();
  // Detecting, a server that says nothing is legacy after the probe's time, not the handshake's.
  if (policy_ != era_policy::modern)
    a.timeout = timeout_.count() == 0 ? probe_timeout : std::min(timeout_, probe_timeout);
  return a;
}

handshake::action handshake::send_initialize() {
  tried_initialize_ = true;
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
  a.params["clientInfo"] = mcp::implementation();
  return a;  // bounded by the handshake's deadline
}

// The answer to server/discover: the server is modern, or (detecting) legacy.
handshake::action handshake::discovered(message& reply, clock::time_point now) {
  const bool detecting = policy_ != era_policy::modern;
  if (reply.kind == message_kind::error_response) {
    if (modern_error(reply)) {
      // A modern server that does not speak our revision: a dual-era one may still initialize.
      // One that refused a version it lists as supported is asked once more (the spec's
      // client retries with a version from `supported`, which is the one mcpmux sent).
      for (const auto& v : supported_in(reply)) {
        if (mcp::is_modern_version(v) && !discover_retried_) {
          discover_retried_ = true;
          return send_discover();
        }
        if (mcp::is_legacy_version(v) && detecting && !tried_initialize_) return send_initialize();
      }
      return failed("server/discover failed: " + json::serialize(reply.body["error"]) +
                    " (mcpmux speaks " + std::string(mcp::latest_version) + ")");
    }
    if (detecting && !tried_initialize_) return send_initialize();
    return failed("server/discover failed: " + json::serialize(reply.body["error"]));
  }
  auto* result = reply.body["result"].if_object();
  const auto* versions = result ? result->if_contains("supportedVersions") : nullptr;
  if (!versions || !versions->is_array()) {
    if (detecting && !tried_initialize_) return send_initialize();
    return failed("server/discover result has no supportedVersions");
  }
  for (const auto& v : versions->get_array())
    if (v.is_string() && mcp::is_modern_version(v.get_string())) version_ = v.get_string();
  if (version_.empty()) {
    for (const auto& v : versions->get_array())
      if (v.is_string() && mcp::is_legacy_version(v.get_string()) && detecting &&
          !tried_initialize_)
        return send_initialize();
    return failed("the server speaks none of mcpmux's revisions: " + json::serialize(*versions));
  }
  era_ = mcp::era::modern;
  const auto* caps = result->if_contains("capabilities");
  capabilities_ = caps && caps->is_object() ? caps->get_object() : json::object{};
  if (const auto* ins = result->if_contains("instructions"); ins && ins->is_string())
    instructions_ = ins->get_string();
  if (const auto* ttl = result->if_contains("ttlMs"); ttl && ttl->is_int64())
    cache_ttl_ms_ = std::max<std::int64_t>(0, ttl->get_int64());
  if (const auto* scope = result->if_contains("cacheScope"); scope && scope->is_string())
    cache_private_ = scope->get_string() == "private";
  if (const auto* meta = result->if_contains("_meta"); meta && meta->is_object())
    if (const auto* info = meta->get_object().if_contains("io.modelcontextprotocol/serverInfo");
        info && info->is_object())
      if (const auto* n = info->get_object().if_contains("name"); n && n->is_string())
        server_name_ = n->get_string();
  return start_lists(now);
}

handshake::action handshake::on_reply(message reply, clock::time_point now) {
  if (phase_ == phase::discover) return discovered(reply, now);
  if (phase_ == phase::initialize) return initialized(reply, now);
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

handshake::action handshake::initialized(message& reply, clock::time_point) {
  if (reply.kind == message_kind::error_response) {
    // A cached legacy verdict may be out of date: a modern-only server refuses initialize.
    if (policy_ == era_policy::legacy_first && !tried_discover_) return send_discover();
    return failed("initialize failed: " + json::serialize(reply.body["error"]));
  }
  auto* result = reply.body["result"].if_object();
  const auto* version = result ? result->if_contains("protocolVersion") : nullptr;
  if (!version || !version->is_string()) return failed("initialize result has no protocolVersion");
  version_ = version->get_string();
  if (version_ < mcp::oldest_version)
    return failed("unsupported protocol version \"" + version_ + "\"");
  era_ = mcp::era::legacy;
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

handshake::action handshake::on_done(clock::time_point now) {
  if (phase_ == phase::listener) {
    phase_ = phase::initialized;
    action a;
    a.what = action::notify;
    a.method = "notifications/initialized";
    return a;
  }
  if (phase_ != phase::initialized) return {};
  return start_lists(now);
}

handshake::action handshake::start_lists(clock::time_point now) {
  // tools/list is asked even when the server declares no tools capability (many do not).
  phase_ = phase::listing;
  current_ = 0;
  lists_[0].asked = true;
  pager_.emplace(collection::tools);
  return ask_page(now);
}

handshake::action handshake::ask_page(clock::time_point now) {
  const auto c = static_cast<collection>(current_);
  action a;
  a.what = action::send;
  a.method = info(c).method;
  a.params = pager_->next_params();
  if (era_ == mcp::era::modern) a.params["_meta"] = modern_request_meta();
  if (timeout_.count() > 0) {
    if (c == collection::tools) {
      a.timeout = timeout_;
    } else {
      // The optional lists share the time left until lists_deadline_, a page an equal part
      // of it for each list still to go, so a silent list leaves the lists after it their part.
      long lists_to_go = 0;
      for (auto i = current_; i < collection_count; ++i)
        lists_to_go += i == current_ || offers(static_cast<collection>(i));
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(lists_deadline_ - now);
      a.timeout = std::clamp(left / lists_to_go, std::chrono::milliseconds(1), timeout_);
    }
  }
  return a;
}

handshake::action handshake::on_no_answer(clock::time_point now) {
  if (phase_ == phase::discover) {
    if (policy_ != era_policy::modern && !tried_initialize_) return send_initialize();
    return failed(
        "server/discover: no answer within " +
        std::to_string(policy_ == era_policy::modern ? timeout_.count() : probe_timeout.count()) +
        "ms");
  }
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
handshake::action handshake::list_ended(clock::time_point now) {
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

handshake::action handshake::on_deadline(clock::time_point) {
  const bool handshaking = phase_ == phase::discover || phase_ == phase::initialize ||
                           phase_ == phase::listener || phase_ == phase::initialized ||
                           (phase_ == phase::listing && current_ == 0);
  if (!handshaking) return {};
  return failed("Connection to MCP server \"" + server_ + "\" timed out after " +
                std::to_string(timeout_.count()) + "ms");
}

}  // namespace mcpmux
