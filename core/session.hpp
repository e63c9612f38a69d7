// A session: one downstream client, served in the MCP server role (plus mcpmux/* control methods).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/manager.hpp"
#include "core/protocol/json_rpc.hpp"
#include "core/protocol/log.hpp"
#include "core/protocol/pending_table.hpp"
#include "core/protocol/versions.hpp"
#include "transports/transport.hpp"

namespace mcpmux {

class session : public transport_events,
                public catalogue_listener,
                public call_owner,
                public std::enable_shared_from_this<session> {
 public:
  /// Creates and starts a session over `t`; it removes itself from the manager when it ends.
  static std::shared_ptr<session> start(manager& m, std::shared_ptr<transport> t, std::uint64_t id);
  session(manager& m, std::shared_ptr<transport> t, std::uint64_t id);
  ~session() override;

  /// Ends the session (daemon shutdown): cancels its calls upstream and closes the connection.
  void close();
  /// Sends a serialized notification (log lines, resource updates).
  void notify(const std::string& text) { send(text); }
  std::uint64_t id() const { return id_; }

  // transport_events
  void on_message(std::string_view text) override;
  void on_message_buffer(std::string&& text) override;
  void on_message_parsed(message&& msg, std::string_view text) override;
  void on_oversize(std::size_t bytes) override;
  void on_closed(std::error_code ec, std::string reason) override;
  // catalogue_listener
  void on_list_changed(collection c) override;
  // call_owner
  void on_progress(const json::object& params) override;
  bool client_supports(std::string_view capability) const override;
  std::int64_t ask_client(std::string_view method, const json::value& params,
                          response_handler done) override;
  void cancel_ask(std::int64_t id, std::string_view reason) override;

 private:
  /// A parsed client message (`text` for the log when it was refused).
  void handle(std::variant<message, rpc_error> parsed, std::string_view text);
  void handle_request(message& msg);
  void handle_notification(const message& msg);
  void handle_response(message& msg);
  void initialize(const message& msg);
  void serve_list(const json::value& id, collection c, const json::object& params);
  /// `rewrite` (optional) adjusts a successful result before it is relayed.
  void forward(message& msg, const std::shared_ptr<upstream>& up,
               std::function<void(json::object&)> rewrite = {});
  void subscription(message& msg, bool subscribe);
  void set_level(const message& msg);
  void send(std::string text);
  void reply_error(const json::value& id, int code, std::string_view text);
  void end(std::string_view why);

  manager& manager_;
  std::shared_ptr<transport> transport_;
  std::uint64_t id_;
  logger log_;
  message_parser parser_;
  bool initialized_ = false;  ///< initialize answered
  bool ended_ = false;
  std::string protocol_version_;
  json::object client_capabilities_;
  struct in_flight {
    std::weak_ptr<upstream> up;
    std::uint64_t token;
  };
  /// Requests forwarded upstream, keyed by the client's id (serialized).
  std::unordered_map<std::string, in_flight> calls_;
  /// Servers this client has sent requests to (they hear of its roots/list_changed).
  std::set<std::string> servers_used_;
  /// Requests mcpmux sent the client on a server's behalf (sampling, elicitation, roots).
  pending_table asked_;
};

}  // namespace mcpmux
