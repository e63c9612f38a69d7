// A session: one downstream client, served in the MCP server role (plus mcpmux/* control methods).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/flat_table.hpp"
#include "base/log.hpp"
#include "core/call.hpp"
#include "core/code_run.hpp"
#include "core/manager.hpp"
#include "core/mrtr.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/modern.hpp"
#include "protocol/pending_table.hpp"
#include "protocol/versions.hpp"
#include "transports/transport.hpp"

namespace mcpmux {

/// The members a modern list result adds after its items: resultType, the cache hint and the
/// server's identity (starting with a comma).
std::string modern_list_members(const manager::cache_hint& hint);

/// A JSON array's text with one more item (serialized) at its end.
std::string with_item(std::string_view listing, std::string_view item);

class session : public transport_events,
                public catalogue_listener,
                public call_caller,
                public code_host,
                public std::enable_shared_from_this<session> {
 public:
  /// Creates and starts a session over `t` for the client `who`; it removes itself from the
  /// manager when it ends.
  static std::shared_ptr<session> start(manager& m, std::shared_ptr<transport> t, std::uint64_t id,
                                        client_identity who = {});
  session(manager& m, std::shared_ptr<transport> t, std::uint64_t id, client_identity who);
  ~session() override;

  /// Ends the session (daemon shutdown): cancels its calls upstream and closes the connection.
  void close();
  /// Sends a serialized notification (log lines, resource updates); a modern client gets
  /// resource updates through its subscriptions/listen streams.
  void notify(const std::string& text);
  std::uint64_t id() const { return id_; }
  const client_identity& identity() const { return who_; }
  /// What the client said it is (clientInfo.name), its era and protocol version, for status.
  const std::string& client_name() const { return client_name_; }
  mcp::era era() const { return era_; }
  const std::string& protocol_version() const { return protocol_version_; }

  // transport_events
  void on_message(std::string_view text) override;
  void on_message_buffer(std::string&& text) override;
  void on_message_parsed(message&& msg, std::string_view text) override;
  void on_oversize(std::size_t bytes) override;
  void on_closed(std::error_code ec, std::string reason) override;
  // catalogue_listener
  void on_list_changed(collection c) override;
  const std::string& profile() const override { return profile_; }
  void profile_removed() override;
  // call_caller (its calls' answers, progress, and a server's requests to a legacy client)
  void call_replied(call& c, std::string text) override;
  void call_audited(audit_fields& row) override { audit_write(row); }
  std::optional<rpc_error> page_result(call& c, json::object& result) override;
  void on_progress(const json::object& params) override;
  bool client_supports(std::string_view capability) const override;
  std::int64_t ask_client(std::string_view method, const json::value& params,
                          response_handler done) override;
  void cancel_ask(std::int64_t id, std::string_view reason) override;
  // code_host (session_code.cpp): its programs' tool calls and answers
  std::shared_ptr<call> start_inner_call(const std::shared_ptr<code_run>& run, json::value id,
                                         std::string_view name, json::value arguments) override;
  void run_answered(code_run& run, json::object result) override;
  call_caller& client() override { return *this; }

 private:
  /// A parsed client message (`text` for the log when it was refused).
  void handle(result<message> parsed, std::string_view text);
  void handle_request(message& msg);
  void handle_notification(const message& msg);
  void handle_response(message& msg);
  void initialize(const message& msg);
  /// mcpmux/profile: the client names its profile before its first MCP request.
  void choose_profile(const message& msg);
  /// tools/call of the search tool of a search profile: answered here. Of its call tool: the
  /// request is rewritten into a call of the tool it names. True when `msg` was answered.
  bool search_tool_call(message& msg, const mcp::request_meta* meta);
  /// tools/call of a code profile's mcpmux__run_code (session_code.cpp): the program starts in
  /// a fresh runner, answered when it ends. True when `msg` was taken.
  bool run_code_call(message& msg, const mcp::request_meta* meta);
  /// The search tool's answer in format "typescript": declarations of the tools `found`.
  json::object declarations_of(const json::array& found) const;
  /// A search profile's tools list with the tools this client's searches found (its
  /// `list_found_tools`) after the search and call tools; empty when there are none.
  std::string with_found_tools(std::string_view listing) const;
  // Big results paged (session_pages.cpp).
  /// Who a cut result belongs to: this session, or for a 2026-07-28 client (stateless, a
  /// connection per request over /mcp) its peer's uid, token and profile.
  std::string page_owner() const;
  /// The name mcpmux__read_result has under the configured separator.
  std::string read_tool() const;
  /// max_result_bytes for a call to `up` (null: none, as for code mode's own answer): the
  /// profile's, else the server's, else the daemon's.
  std::optional<std::size_t> result_cap(const upstream* up) const;
  /// Cuts `result` to `rules` (the rest kept for mcpmux__read_result); an error when it must
  /// be refused instead.
  std::optional<rpc_error> cut_answer(json::object& result, const page_rules& rules);
  /// Sets the page stage of a tools/call or resources/read to `up` (none when the cap is 0).
  void add_page_stage(call::request& r, const std::shared_ptr<upstream>& up);
  /// tools/call of mcpmux__read_result: answered here. True when `msg` was answered.
  bool read_result_call(message& msg, const mcp::request_meta* meta);
  /// The tools list with mcpmux__read_result added once a result was cut for this client;
  /// empty when it is not offered.
  std::string with_read_result(std::string_view listing) const;
  /// The methods that go to a server (tools/call, prompts/get, resources/read,
  /// completion/complete), in either era; false when `msg` is none of them.
  /// `meta`: a modern request's _meta, as handle_modern read it (null for a legacy client).
  bool route_call(message& msg, const mcp::request_meta* meta = nullptr);
  // The 2026-07-28 era (session_modern.cpp).
  void handle_modern(message& msg);
  void discover(const json::value& id);
  void resume_call(message& msg, const mcp::request_meta& meta);
  void listen(const message& msg, const mcp::request_meta& meta);
  void route_task(message& msg, const mcp::request_meta& meta);
  void end_listen(const std::string& key);
  /// A modern result's rules for `method` through `up`, composed onto `after`.
  static void modern_result_rules(std::string_view method, const upstream& up,
                                  const mcp::request_meta& meta,
                                  std::function<void(json::object&)>& after);
  void notify_listeners(std::string_view flag, std::string_view method, json::object params);
  void serve_list(const json::value& id, collection c, const json::object& params);
  /// Makes the request a call (core/call.hpp) and hands it to `up`. `after` (optional) adjusts
  /// a successful result before it is relayed; `exposed` is the name (or URI) the client
  /// called (audit; it binds a modern client's retry to the same request); `meta` is a modern
  /// request's _meta: the era's differences are the call's data.
  void forward(message& msg, const std::shared_ptr<upstream>& up,
               std::function<void(json::object&)> after = {}, std::string exposed = {},
               const mcp::request_meta* meta = nullptr);
  /// The confirmation stage (session_confirm.cpp): a tools/call that `confirm` names is asked
  /// about first and runs, or is refused, when the answer comes. False when `c` needs none.
  bool confirm_first(const std::shared_ptr<call>& c, const std::shared_ptr<upstream>& up);
  /// Tools this client allowed for the rest of the session (exposed names).
  std::set<std::string> allowed_;
  /// Its programs running (code mode), by the client's id of their mcpmux__run_code call.
  struct program {
    std::shared_ptr<code_run> run;
    json::value id;
    std::string exposed;  ///< mcpmux__run_code's name as the client called it
    bool modern = false;
    std::optional<audit_start> audit;
    steady_clock::time_point started;
  };
  std::map<std::string, program> programs_;
  /// A program's run ended without an answer (the client cancelled it, or left).
  void program_cancelled(const std::string& key, std::string_view why);
  /// Completes a program's audit row (its outcome and the answer's size) and hands it on.
  void end_program_audit(program& p, std::string_view outcome, std::size_t response_bytes);
  void subscription(message& msg, bool subscribe);
  void set_level(const message& msg);
  void send(std::string text);
  void send(spliced_text text);
  void sent(std::error_code ec);  ///< a failed send ends the session
  void reply_error(const json::value& id, int code, std::string_view text);
  void end(std::string_view why);

  /// Runs `answer` once the startup gate opens (at once when it is open). A connection that
  /// closes meanwhile (an agent that sends initialize and closes its input at once) still gets
  /// these answers: its end waits for them, at most the gate's startup_wait.
  void after_settled(std::function<void(session*)> answer);

  manager& manager_;
  std::shared_ptr<transport> transport_;
  std::uint64_t id_;
  client_identity who_;
  std::string profile_;          ///< what it sees ("" = everything)
  std::set<std::string> found_;  ///< tools its searches found (profiles with list_found_tools)
  std::string client_name_;
  logger log_;
  message_parser parser_;
  mcp::era era_ = mcp::era::unknown;  ///< decided by the client's first MCP request
  bool initialized_ = false;          ///< initialize answered
  bool ended_ = false;
  int settling_ = 0;                   ///< answers waiting for the startup gate (after_settled)
  std::optional<std::string> closed_;  ///< the connection closed while some were waiting: why
  std::string protocol_version_;
  json::object client_capabilities_;
  // The audit log (session_audit.cpp).
  /// Begins in `row` the audit row of a call of `method` to `server` (left empty when the audit
  /// is off or the method is not audited).
  void audit_begin(std::optional<audit_start>& row, std::string_view method,
                   const std::string& server, const json::object& params);
  void audit_begin(std::optional<audit_start>& row, std::string_view method,
                   const std::string& server, const unparsed_params& params);
  /// audit_begin's row without the arguments; true when they are to be audited too.
  bool audit_open(std::optional<audit_start>& row, std::string_view method,
                  const std::string& server);
  /// Writes `row` into the audit buffer, as this client's.
  void audit_write(audit_fields& row);
  /// Who, for the audit log.
  const std::string& client_label();
  /// A call refused before it reached a server (an unknown or hidden name): audited as
  /// `refused`, so that probing for hidden tools shows.
  void audit_refused(std::string_view method, std::string_view name, const json::object& params);
  void audit_refused(std::string_view method, std::string_view name, const unparsed_params& params);
  void audit_refused(const std::optional<audit_start>& row, std::string_view method,
                     std::string_view name);
  std::size_t message_bytes_ = 0;  ///< the size of the client message being handled
  std::string client_label_;       ///< who, for the audit log
  /// Its calls in flight, by the client's id (serialized). (A flat table: a client's calls
  /// made one at a time, or a few at once, allocate nothing each.)
  flat_table<std::string, std::shared_ptr<call>> calls_;
  /// Servers this client has sent requests to (they hear of its roots/list_changed).
  std::set<std::string> servers_used_;
  const std::string* last_used_ = nullptr;  ///< the last one added (most calls go to it again)
  void used(const std::string& server) {
    if (!last_used_ || *last_used_ != server) last_used_ = &*servers_used_.insert(server).first;
  }
  /// Requests mcpmux sent the client on a server's behalf (sampling, elicitation, roots).
  pending_table asked_;
  /// A modern client's open subscriptions/listen requests, by serialized id.
  struct listen_stream {
    json::value id;
    json::object agreed;  ///< the filter mcpmux honours (sent in the acknowledgement)
    std::vector<std::string> uris;
    std::vector<std::string> tasks;  ///< scoped task ids (the tasks extension)
  };
  std::map<std::string, listen_stream> listens_;
  /// A modern client's calls that asked for log messages (_meta logLevel), by serialized id:
  /// while any is in flight the session takes the servers' messages at the most verbose level.
  std::map<std::string, std::string> log_calls_;
  std::string log_level_;  ///< the level last given to the manager for this session
  /// A call is in flight (`log_level`: from a modern request's _meta) / is not.
  void call_entered(std::shared_ptr<call> c, const std::string& log_level);
  void call_left(const std::string& key);
  void update_log_level();
};

}  // namespace mcpmux
