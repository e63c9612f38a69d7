// What rpc_peer tells a transport of each message it sends (outgoing_info), so that no transport
// parses what it sends: kind, id and method; a cancellation's request; a 2026-07-28 request's
// version, target and the Mcp-Param-* fields its caller hands over (only for such a request).
#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/json/parse.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/rpc_peer.hpp"
#include "protocol/modern.hpp"

namespace mcpmux {
namespace {

namespace json = boost::json;

struct recording_transport : transport {
  std::vector<std::pair<std::string, outgoing_info>> sent;
  bool described = true;  ///< false: as a stdio or socket transport, which writes text alone
  void start(transport_events&) override {}
  std::error_code send(std::string m) override { return send_described(std::move(m), {}); }
  bool reads_descriptions() const override { return described; }
  std::error_code send_described(std::string m, outgoing_info info) override {
    sent.emplace_back(std::move(m), std::move(info));
    return {};
  }
  void close() override {}
  std::size_t queued_bytes() const override { return 0; }
};

const std::vector<std::pair<std::string, std::string>> fields = {{"Mcp-Param-Region", "eu"}};

class rpc_peer_outgoing : public ::testing::Test {
 protected:
  void SetUp() override {
    wire_ = std::make_shared<recording_transport>();
    peer_ = rpc_peer::create(io_, wire_, {});
    peer_->start();
  }
  const outgoing_info& last() const { return wire_->sent.back().second; }
  /// A 2026-07-28 tools/call of "search" with the fields.
  std::optional<std::int64_t> modern_search() {
    json::object params{{"name", "search"}, {"arguments", json::object{{"region", "eu"}}}};
    params["_meta"] = json::object{{mcp::meta_key::protocol_version, "2026-07-28"}};
    return peer_->request(
        "tools/call", json::value(params), std::nullopt, [](rpc_outcome) {}, reply_form::parsed,
        nullptr, fields);
  }

  boost::asio::io_context io_;
  std::shared_ptr<recording_transport> wire_;
  std::shared_ptr<rpc_peer> peer_;
};

TEST_F(rpc_peer_outgoing, ALegacyRequestIsARequestWithoutTheErasHeaders) {
  const auto id = peer_->request(
      "tools/call", json::value(json::object{{"name", "t"}}), std::nullopt, [](rpc_outcome) {},
      reply_form::parsed, nullptr, fields);
  ASSERT_TRUE(id);
  EXPECT_EQ(last().what, outgoing_info::kind::request);
  EXPECT_EQ(last().id, *id);
  EXPECT_EQ(last().method, "tools/call");
  EXPECT_EQ(last().version, "");
  EXPECT_FALSE(last().name);
  EXPECT_TRUE(last().params.empty());  // the fields go only with a 2026-07-28 request
}

TEST_F(rpc_peer_outgoing, AModernRequestCarriesItsVersionTargetAndFields) {
  const auto id = modern_search();
  ASSERT_TRUE(id);
  EXPECT_EQ(last().what, outgoing_info::kind::request);
  EXPECT_EQ(last().id, *id);
  EXPECT_EQ(last().version, "2026-07-28");
  EXPECT_EQ(last().name, "search");
  EXPECT_EQ(last().params, fields);
}

// A transport that does not read descriptions (stdio, sockets) is sent the text alone: a request
// is not described for it (its target, its fields), and its text is the same.
TEST_F(rpc_peer_outgoing, ATransportThatReadsNoDescriptionGetsTheTextAlone) {
  wire_->described = false;
  const auto id = modern_search();
  ASSERT_TRUE(id);
  ASSERT_EQ(wire_->sent.size(), 1u);
  EXPECT_EQ(last().method, "");  // (send(), as the transport's own default describes nothing)
  EXPECT_TRUE(last().params.empty());
  const auto sent = json::parse(wire_->sent.back().first).as_object();
  EXPECT_EQ(sent.at("id"), *id);
  EXPECT_EQ(sent.at("method"), "tools/call");
  EXPECT_EQ(sent.at("params").at("name"), "search");
}

TEST_F(rpc_peer_outgoing, NotificationsCancellationsAndResponsesSayWhatTheyAre) {
  EXPECT_TRUE(peer_->notify("notifications/initialized", json::object{}));
  EXPECT_EQ(last().what, outgoing_info::kind::notification);
  EXPECT_EQ(last().method, "notifications/initialized");
  EXPECT_FALSE(last().cancels);

  const auto id =
      peer_->request("tools/call", json::value(json::object{}), std::nullopt, [](rpc_outcome) {});
  ASSERT_TRUE(id);
  peer_->cancel(*id, "client gave up");
  EXPECT_EQ(last().what, outgoing_info::kind::notification);
  EXPECT_EQ(last().method, "notifications/cancelled");
  EXPECT_EQ(last().cancels, *id);

  EXPECT_TRUE(peer_->send_raw(R"({"jsonrpc":"2.0","id":"s1","result":{}})"));
  EXPECT_EQ(last().what, outgoing_info::kind::response);
  EXPECT_TRUE(last().method.empty());
}

}  // namespace
}  // namespace mcpmux
