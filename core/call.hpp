// A call: one request a caller forwards to a server (tools/call, prompts/get, resources/read,
// completion/complete, the tasks extension's tasks/*), from the request to its one answer.
//
// The call is the one owner of everything about it: the caller's id, the server's name for what
// was asked, the deadline and the resend-once state, the caller's progress token, its era (what
// a modern caller's answer needs, and the bridge that turns a legacy server's questions into
// input_required), its audit row and the cancellation. Its caller holds it by the caller's id
// (the session's table: cancellation and the client's end find it there); while it is on the wire
// its connection's pending table holds it by wire id, which is also the progress token the server
// is given, so a progress notification finds it without a table of its own.
//
// Every end goes through finish() (an answer, a tool's or the server's error, a timeout, the
// connection closing, the server stopped or waiting for a login, the queue's deadline) or
// cancel() (the caller cancelled or left, a parked call expired): the stats and the audit row are
// recorded once, and the caller is answered once (never after a cancellation).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/state_store.hpp"
#include "protocol/json_rpc.hpp"
#include "protocol/pending_table.hpp"
#include "protocol/result_redaction.hpp"
#include "protocol/versions.hpp"

namespace mcpmux {

class call;
class upstream;
class mrtr_registry;

/// A call's audit row as it begins. The rest is the call's own when it ends (what was asked,
/// the outcome, the times, the answer's size) and its caller's (who asked); the row is then
/// written where the audit buffer keeps it (call_caller::call_audited), its words copied once.
struct audit_start {
  std::int64_t time_ms = 0;        ///< when it started, Unix milliseconds
  std::int64_t request_bytes = 0;  ///< the caller's message
  std::string profile, server;
  std::string detail;  ///< its arguments (audit_arguments), redacted
  std::string run;     ///< code mode: a program's own row, its run id
  /// The row's fields as this start gives them, for `kind` of `name`.
  audit_fields fields(std::string_view kind, std::string_view name) const {
    audit_fields f;
    f.time_ms = time_ms;
    f.kind = kind;
    f.profile = profile;
    f.server = server;
    f.name = name;
    f.request_bytes = request_bytes;
    f.detail = detail;
    f.run = run;
    return f;
  }
};

/// Whose call it is when a server asks something while serving it (sampling, elicitation,
/// roots), and where its progress goes. A call is one; a legacy client's session is the one a
/// call passes such requests on to.
class call_owner {
 public:
  virtual ~call_owner() = default;
  /// A notifications/progress of this call; `params` already carry the caller's own token.
  virtual void on_progress(const json::object& params) = 0;
  /// True when the client declared the capability ("sampling", "elicitation", "roots") or, for
  /// a modern client, the extension ("io.modelcontextprotocol/tasks").
  virtual bool client_supports(std::string_view capability) const = 0;
  /// True when the client takes a 2026-07-28 input_required result itself (it retries with the
  /// answers); false when mcpmux must ask it with real requests and retry for it.
  virtual bool takes_input_required() const { return false; }
  /// Sends a request to the client; `done` gets its answer exactly once, unless cancel_ask()
  /// comes first. Returns the request's id on the client connection (0 when it failed at once).
  virtual std::int64_t ask_client(std::string_view method, const json::value& params,
                                  response_handler done) = 0;
  /// The server gave up on a request it asked through ask_client: the client hears
  /// notifications/cancelled and `done` is dropped.
  virtual void cancel_ask(std::int64_t id, std::string_view reason) = 0;
};

/// Who a call answers: a client's session (later, a program in code mode).
class call_caller : public call_owner {
 public:
  /// The answer to the request `c.client_id()`, as the text to send: the final one, or (a modern
  /// caller) an input_required result, after which the call is parked until the retry. The
  /// caller's request is over either way.
  virtual void call_replied(call& c, std::string text) = 0;
  /// The call's audit row, complete but for who asked (`row.client`): the caller says who and
  /// writes the row (the views in it last until this returns).
  virtual void call_audited(audit_fields& row) = 0;
  /// The page stage of a call with a cap (call::request::page_above), on a success result
  /// longer than the cap as received: cuts `result` to a page; an error it gives is the
  /// answer instead. Runs after the other stages.
  virtual std::optional<rpc_error> page_result(call&, json::object&) { return std::nullopt; }
};

class call final : public call_owner,
                   public request_tag,
                   public std::enable_shared_from_this<call> {
 public:
  /// What a caller asks.
  struct request {
    request() = default;
    /// Moves `p` in whole: a move-constructed DOM keeps its parse's memory (an assignment
    /// between different storages would copy it).
    explicit request(json::value&& p) : params(std::move(p)) {}

    json::value client_id;  ///< the caller's id for it
    std::string key;        ///< the caller's key for it (its table's: the id serialized)
    std::string method;
    json::value params;  ///< as the server gets them (names already the server's own)
    /// Or, a call read unparsed (message::unparsed), their text: sent as it is unless a stage
    /// needs them parsed (call::params() parses them then).
    std::optional<unparsed_params> unparsed;
    std::string exposed;  ///< the name or URI the caller used (audit, a retry's binding)
    mcp::era era = mcp::era::legacy;  ///< the caller's
    json::object capabilities;        ///< a modern caller's, declared in the request's _meta
    /// Adjusts a successful result before it is relayed (an alias's URI, a task's scoped id,
    /// cache hints); without one the answer is relayed as text, unparsed.
    std::function<void(json::object&)> after;
    /// Replaces the secrets in its result and progress messages (`redact_results`; none: off).
    /// An answer is parsed only when its text may hold one (may_hold_secret).
    std::shared_ptr<const mcp::secret_detector> redact;
    /// Pages a long result (the caller's page_result), after `after`: only a result longer than
    /// `page_above` bytes as received (a shorter one, without `after`, is relayed as text,
    /// unparsed). None: not paged.
    std::optional<std::size_t> page_above;
    std::optional<audit_start> audit;  ///< its audit row, begun (none: not audited)
  };

  /// A caller's call; a modern caller's calls park in `mrtr` while they wait for input.
  call(request r, std::weak_ptr<call_caller> caller, mrtr_registry* mrtr = nullptr);
  /// The same, described in place: `describe(request&)` fills in what the caller asks, around
  /// `params` (moved in whole, see request), and nothing is moved after it.
  template <class Describe>
  call(json::value&& params, std::weak_ptr<call_caller> caller, mrtr_registry* mrtr,
       Describe&& describe)
      : caller_(std::move(caller)), r_(std::move(params)), mrtr_(mrtr) {
    describe(r_);
    begin();
  }
  /// A request made on the server's behalf (subscriptions): `done` gets its one outcome.
  call(std::string method, json::value params, response_handler done);

  const json::value& client_id() const { return r_.client_id; }
  const std::string& key() const { return r_.key; }
  const std::string& method() const { return r_.method; }
  /// The params as the server gets them (parsed now when they came unparsed).
  const json::value& params() const;
  /// The tool of a tools/call (the server's name for it); empty for other methods.
  std::string_view tool() const;
  /// The name or URI the caller used.
  const std::string& exposed() const { return r_.exposed; }
  /// The cap of its page stage (none: not paged).
  std::optional<std::size_t> page_above() const { return r_.page_above; }
  /// The server it went to (null before it was started, or when the server is gone).
  std::shared_ptr<upstream> server() const { return up_.lock(); }
  mcp::era era() const { return r_.era; }
  bool finished() const { return finished_; }
  /// What was replaced in its answer and progress messages, by kind.
  const mcp::redaction_counts& redacted() const { return redacted_; }
  /// The server to bind a retry to: `method` and `name` must be the request's own.
  bool same_request(std::string_view method, std::string_view name) const {
    return method == r_.method && name == r_.exposed;
  }

  // The ends.
  /// The server's part is over: answered, failed, timed out, refused. Answers the caller (a
  /// modern call parked for its retry keeps the answer until then).
  void finish(rpc_outcome&& out);
  /// The caller gave up (cancelled, left) or the call expired while parked: the server is told
  /// if it has the request, nobody is answered.
  void cancel(std::string_view why);
  /// A stage before forwarding refused the call (a person declined it, or could not be asked):
  /// the caller gets a tool error result with `text`, the audit row says `outcome`.
  void refuse(std::string text, std::string_view outcome);
  /// What a stage before forwarding must undo when the caller cancels while it waits (the
  /// question it asked); empty: nothing. Called once, from cancel().
  void on_cancel(std::function<void(call&)> undo) { on_cancel_ = std::move(undo); }
  /// The server's time starts now (a stage before forwarding waited for a person: that wait
  /// had a deadline of its own).
  void restart_clock() { started_ = steady_clock::now(); }
  /// A modern caller's retry takes the parked call: it answers `client_id` now.
  void attach(std::weak_ptr<call_caller> caller, json::value client_id, std::string key);
  /// The retry's answers (`responses`, may be null) to the server's questions: keys no question
  /// waits for, and answers that are not objects, are ignored (a question left open is asked
  /// again). Then the call goes on.
  void resume(const json::object* responses);

  /// Keeps `h` until the call ends (finish or cancel), then lets it go: a limit's place in
  /// flight (core/call_gate.hpp) is given back on every end this way.
  void hold(std::shared_ptr<void> h) { holds_.push_back(std::move(h)); }

  // call_owner: the server's requests while it serves this call.
  void on_progress(const json::object& params) override;
  bool client_supports(std::string_view capability) const override;
  bool takes_input_required() const override { return r_.era == mcp::era::modern; }
  std::int64_t ask_client(std::string_view method, const json::value& params,
                          response_handler done) override;
  void cancel_ask(std::int64_t id, std::string_view reason) override;
  /// A question of mcpmux's own before the call is forwarded (a confirmation): as ask_client,
  /// but a 2026-07-28 caller's audit row stays open, to say what the answer led to.
  std::int64_t ask_before_forwarding(std::string_view method, const json::value& params,
                                     response_handler done);

 private:
  friend class upstream;  // its side of the call: where it is, its wire id, resends
  struct question {
    std::string method;
    json::value params;
    response_handler done;
  };
  /// Sends input_required with every open question to the caller and parks.
  void ask_caller();
  /// The answer's text for the caller: the id its own, a modern result marked complete.
  std::string reply_text(rpc_outcome& out);
  /// The result stages on a success — redaction, `after`, `page` — parsing a raw one only
  /// when a stage needs it (it may hold a secret, or be over the page's cap); redaction of an
  /// error's message and data.
  void run_stages(message& reply);
  void drop_questions();
  void end_audit(std::string_view outcome, std::size_t response_bytes,
                 steady_clock::time_point now);
  /// The server's time starts, and the progress token is read from the params.
  void begin();
  /// The params to change (parsed first when they came unparsed).
  json::value& params_dom() {
    (void)params();
    return r_.params;
  }

  // Who and what.
  std::weak_ptr<call_caller> caller_;
  response_handler done_;  ///< a request on the server's behalf: no caller
  /// What the caller asked (its client_id null while a modern call is parked). The params are
  /// parsed on first use when they came unparsed (params()): a plain call is sent as its text.
  mutable request r_;
  mcp::redaction_counts redacted_;
  std::string_view refused_ = {};  ///< the audit's outcome of a call a stage refused
  std::function<void(call&)> on_cancel_;
  std::optional<json::value> progress_token_;  ///< the caller's own (the server gets the wire id)
  steady_clock::time_point started_;
  bool finished_ = false;
  // At the server (the upstream's side).
  std::weak_ptr<upstream> up_;
  std::uint64_t token_ = 0;              ///< its place in the upstream's queue
  std::optional<std::int64_t> wire_id_;  ///< on the wire: the request's id there
  bool retried_ = false;                 ///< already resent once after a dropped connection
  int input_rounds_ = 0;                 ///< a modern server's input_required rounds fulfilled
  // A modern caller's bridge (a legacy server's questions → input_required), made when first
  // needed: most calls ask nothing, and a call small enough comes from malloc's fast lists.
  struct bridge {
    std::map<std::int64_t, question> questions;  ///< by our key number ("q<N>")
    std::int64_t next_key = 1;
    bool asking_first = false;        ///< ask_before_forwarding is asking
    std::optional<rpc_outcome> held;  ///< the final answer, come while parked
  };
  bridge& modern_bridge() {
    if (!bridge_) bridge_ = std::make_unique<bridge>();
    return *bridge_;
  }
  mrtr_registry* mrtr_ = nullptr;
  std::unique_ptr<bridge> bridge_;
  std::vector<std::shared_ptr<void>> holds_;  ///< given back at the end (hold())
};

/// How a call ended, for the server's stats and its calls' error back-off.
enum class call_end {
  answered,      ///< a result (a tool's own isError included)
  caller_error,  ///< an error the request brought on itself (invalid params, unknown method)
  server_error,  ///< an error, a timeout, the connection lost
};

/// A call mcpmux will not send (a limit, the error back-off), as its answer: for tools/call a
/// tool error the model reads (isError), for other methods a JSON-RPC error.
rpc_outcome refusal(std::string_view method, std::string text);

/// The outcome word of an answer, for the audit log: ok, tool_error, error, timeout, cancelled.
std::string_view outcome_of(const rpc_outcome& out);

}  // namespace mcpmux
