#include "tests/inproc/harness.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/post.hpp>
#include <filesystem>
#include <fstream>

#include "base/log.hpp"
#include "protocol/error.hpp"
#include "protocol/versions.hpp"
#include "tests/inproc/fake_clock.hpp"

namespace mcpmux::test {

namespace {

json::object request_of(json::value id, std::string_view method, json::object params) {
  return {{"jsonrpc", "2.0"}, {"id", std::move(id)}, {"method", method}, {"params", params}};
}

std::string make_temp_dir() {
  std::string path = (std::filesystem::temp_directory_path() / "mcpmux-inproc-XXXXXX").string();
  if (!::mkdtemp(path.data())) throw std::runtime_error("mkdtemp failed");
  return path;
}

// Log lines go nowhere: a failing test says what it saw in messages.
const std::string& quiet_logs() {
  static const std::string done = [] {
    set_log_sink([](log_level, std::string_view, std::string_view) {});
    return std::string();
  }();
  return done;
}

}  // namespace

// --- fake_channel

std::error_code fake_channel::send(std::string text) {
  if (closed_) return make_error_code(errc::transport_closed);
  sent.push_back(json::parse(text).as_object());
  if (on_sent) on_sent(sent.back());
  return {};
}

void fake_channel::close() {
  closed_ = true;
  events_ = nullptr;
}

void fake_channel::deliver(const json::object& msg) {
  boost::asio::post(io_, [self = shared_from_this(), text = json::serialize(msg)] {
    if (self->events_) self->events_->on_message(text);
  });
}

void fake_channel::hang_up(std::string why) {
  boost::asio::post(io_, [self = shared_from_this(), why = std::move(why)] {
    auto* events = std::exchange(self->events_, nullptr);
    self->closed_ = true;
    if (events) events->on_closed(make_error_code(errc::transport_closed), why);
  });
}

// --- fake_server

fake_server::fake_server(boost::asio::io_context& io, std::string name, bool modern)
    : tools{echo_tool()}, io_(io), name_(std::move(name)), modern_(modern) {}

json::object fake_server::echo_tool() {
  return json::parse(R"({"name":"echo","description":"Echo the text","inputSchema":{"type":"object",
      "properties":{"text":{"type":"string"}}}})")
      .as_object();
}

result<opened_channel> fake_server::open() {
  if (refuse) return failure("refused by the test");
  ++connections_;
  channel_ = std::make_shared<fake_channel>(io_);
  channel_->on_sent = [this](const json::object& msg) { handle(msg); };
  return opened_channel{channel_, 1000 + connections_, {}};
}

void fake_server::handle(const json::object& msg) {
  received_.push_back(msg);
  if (!msg.contains("method") || !msg.contains("id")) return;  // notifications, answers
  const auto method = std::string_view(msg.at("method").as_string());
  if (method == "initialize") {
    if (modern_) return fail(msg, -32601, "initialize is not a 2026-07-28 method");
    return answer(msg, {{"protocolVersion", msg.at("params").at("protocolVersion")},
                        {"capabilities", {{"tools", {{"listChanged", true}}}}},
                        {"serverInfo", {{"name", name_}, {"version", "1.0"}}}});
  }
  if (method == "server/discover") {
    if (!modern_) return fail(msg, -32601, "Method not found");
    return answer(msg, {{"supportedVersions", json::array{mcp::latest_version}},
                        {"capabilities", {{"tools", {{"listChanged", true}}}}}});
  }
  if (method == "tools/list") {
    json::array list;
    for (const auto& t : tools) list.push_back(t);
    json::object result{{"tools", std::move(list)}};
    if (modern_) result["resultType"] = "complete";
    return answer(msg, std::move(result));
  }
  if (method == "ping") return answer(msg, json::object{});
  if (method == "tools/call") {
    if (on_call) return on_call(*this, msg);
    const auto* args = msg.at("params").as_object().if_contains("arguments");
    const auto* text = args && args->is_object() ? args->as_object().if_contains("text") : nullptr;
    json::object content{{"type", "text"}, {"text", text ? *text : json::value("")}};
    json::object result{{"content", json::array{content}}};
    if (modern_) result["resultType"] = "complete";
    return answer(msg, std::move(result));
  }
  fail(msg, -32601, "Method not found");
}

void fake_server::answer(const json::object& request, json::value result) {
  say({{"jsonrpc", "2.0"}, {"id", request.at("id")}, {"result", std::move(result)}});
}

void fake_server::fail(const json::object& request, int code, std::string_view text) {
  say({{"jsonrpc", "2.0"},
       {"id", request.at("id")},
       {"error", {{"code", code}, {"message", text}}}});
}

void fake_server::say(json::object msg) {
  ASSERT_TRUE(channel_) << name_ << " has no connection";
  channel_->deliver(msg);
}

void fake_server::notify(std::string_view method, json::object params) {
  say({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

void fake_server::hang_up(std::string why) {
  ASSERT_TRUE(channel_) << name_ << " has no connection";
  channel_->hang_up(std::move(why));
}

std::vector<json::object> fake_server::got(std::string_view method) const {
  std::vector<json::object> out;
  for (const auto& m : received_)
    if (const auto* mm = m.if_contains("method"); mm && mm->as_string() == method) out.push_back(m);
  return out;
}

// --- fake_client

fake_client::fake_client(mux& m, bool modern, json::object capabilities)
    : mux_(m),
      modern_(modern),
      capabilities_(std::move(capabilities)),
      channel_(std::make_shared<fake_channel>(m.io())) {
  session_ = session::start(m.mgr(), channel_, m.next_session_id());
  if (!modern_) {
    request("initialize", {{"protocolVersion", mcp::latest_legacy_version},
                           {"capabilities", capabilities_},
                           {"clientInfo", {{"name", "inproc-test"}, {"version", "1"}}}});
    notify("notifications/initialized");
  }
  m.run();
}

fake_client::~fake_client() {
  if (!channel_->closed()) session_->close();
  mux_.run();
}

json::value fake_client::request(std::string_view method, json::object params,
                                 std::optional<json::value> id) {
  if (modern_) {
    auto& meta = params["_meta"];
    if (!meta.is_object()) meta = json::object{};
    meta.as_object()["io.modelcontextprotocol/protocolVersion"] = mcp::latest_version;
    meta.as_object()["io.modelcontextprotocol/clientCapabilities"] = capabilities_;
  }
  json::value the_id = id ? *id : json::value(next_id_++);
  channel_->deliver(request_of(the_id, method, std::move(params)));
  return the_id;
}

std::optional<json::object> fake_client::ask(std::string_view method, json::object params,
                                             std::optional<json::value> id) {
  const auto sent = request(method, std::move(params), std::move(id));
  mux_.run();
  return answer(sent);
}

void fake_client::notify(std::string_view method, json::object params) {
  channel_->deliver({{"jsonrpc", "2.0"}, {"method", method}, {"params", std::move(params)}});
}

std::optional<json::object> fake_client::answer(const json::value& id) const {
  std::optional<json::object> out;
  for (const auto& m : received())
    if (!m.contains("method") && m.contains("id") && m.at("id") == id) {
      EXPECT_FALSE(out) << "request " << json::serialize(id) << " answered twice";
      out = m;
    }
  return out;
}

std::vector<json::object> fake_client::got(std::string_view method) const {
  std::vector<json::object> out;
  for (const auto& m : received())
    if (const auto* mm = m.if_contains("method"); mm && mm->as_string() == method) out.push_back(m);
  return out;
}

// --- mux

mux::mux(std::string_view toml, std::function<void(mux&)> script)
    : dir_((quiet_logs(), make_temp_dir())),
      // Under a file, so that the state store cannot be made there: it is kept in memory (a
      // file's fsyncs would cost each test tens of milliseconds).
      state_("XDG_STATE_HOME", (dir_ + "/not-a-dir/state").c_str()),
      cache_("XDG_CACHE_HOME", (dir_ + "/cache").c_str()),
      config_("XDG_CONFIG_HOME", (dir_ + "/config").c_str()),
      runtime_("XDG_RUNTIME_DIR", dir_.c_str()),
      next_toml_(toml) {
  std::ofstream(dir_ + "/not-a-dir").put('\n');
  auto cfg = load(toml);
  for (const auto& s : cfg.servers)
    servers_.emplace(s.name,
                     std::make_unique<fake_server>(io_, s.name, s.era == era_setting::modern));
  daemon_info info;
  info.reload_config = [this] { return parse_config(next_toml_, "<inproc>"); };
  mgr_ = std::make_unique<manager>(
      io_, std::move(cfg), std::move(info), [this](const channel_request& r) {
        auto it = servers_.find(r.server.name);
        if (it == servers_.end())
          servers_.emplace(r.server.name,
                           std::make_unique<fake_server>(io_, r.server.name,
                                                         r.server.era == era_setting::modern));
        return servers_.at(r.server.name)->open();
      });
  if (script) script(*this);
  mgr_->start();
  while (mgr_->start_next()) run();
  run();
}

mux::~mux() {
  mgr_->close_sessions();
  mgr_->stop();
  run();
  mgr_.reset();
  run();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

config mux::load(std::string_view toml) {
  auto loaded = parse_config(toml, "<inproc>");
  if (!loaded.value) {
    ADD_FAILURE() << "the test's configuration does not load: " << loaded.errors.at(0).message;
    return {};
  }
  return std::move(*loaded.value);
}

void mux::run() {
  for (int i = 0; i < 10000; ++i) {
    io_.restart();
    if (io_.poll() == 0) return;
  }
  ADD_FAILURE() << "the loop never went idle";
}

void mux::advance(std::chrono::steady_clock::duration d) {
  test::advance(io_, d);
  run();
}

bool mux::advance_until(const std::function<bool()>& done, std::chrono::steady_clock::duration step,
                        std::chrono::steady_clock::duration limit) {
  for (auto spent = std::chrono::steady_clock::duration(0); !done(); spent += step) {
    if (spent >= limit) return false;
    advance(step);
  }
  return true;
}

json::value mux::reload(std::string_view toml) {
  next_toml_ = toml;
  auto out = mgr_->reload();
  while (mgr_->start_next()) run();
  run();
  if (auto* err = out.if_error()) {
    ADD_FAILURE() << "reload failed: " << err->message;
    return nullptr;
  }
  return out.value();
}

json::object call_params(std::string_view tool, std::string_view text) {
  return {{"name", tool}, {"arguments", {{"text", text}}}};
}

std::string result_text(const json::object& response) {
  const auto* result = response.if_contains("result");
  if (!result || !result->is_object()) return "";
  const auto* content = result->as_object().if_contains("content");
  if (!content || !content->is_array() || content->as_array().empty()) return "";
  const auto* text = content->as_array()[0].as_object().if_contains("text");
  return text && text->is_string() ? std::string(text->as_string()) : "";
}

}  // namespace mcpmux::test
