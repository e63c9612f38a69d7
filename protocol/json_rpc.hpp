// JSON-RPC 2.0 message model: parse and classify one line, build replies. Sans-io.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "protocol/result.hpp"

namespace mcpmux {

enum class message_kind { request, notification, response, error_response };

/// The params of a tools/call read without parsing them (message_parser::parse_call): their text
/// as received, forwarded with only the tool's name changed, and where its parts are in it.
struct unparsed_params {
  std::string text;          ///< the params object's JSON text
  std::string tool;          ///< its "name" (written plain in the text: no escapes)
  std::size_t tool_pos = 0;  ///< where the name's string, quotes included, begins in `text`
  std::size_t tool_len = 0;  ///< its length there, quotes included
  std::size_t arguments_pos = 0, arguments_len = 0;  ///< its "arguments" value (len 0: none)

  std::string_view arguments() const { return {text.data() + arguments_pos, arguments_len}; }
  /// Names the tool `name` instead (the server's own name for it), escaped as JSON needs.
  void rename(std::string_view name);
};

/// A request's params as they are sent: a DOM, or JSON text as it came (unparsed_params).
struct request_params {
  request_params(const json::value& v) : dom(&v) {}  // a DOM: the usual case
  explicit request_params(std::string_view json_text) : text(json_text) {}
  const json::value* dom = nullptr;
  std::string_view text;
};

/// A well-formed JSON-RPC 2.0 message.
struct message {
  message_kind kind;
  json::object body;  ///< the whole message object (empty when `raw` holds it)
  /// A success response kept as received, not parsed into `body` (see rpc_peer's reply_form):
  /// its text and where its id is. Relaying it rewrites the id in place; the result is not
  /// touched, so a 10 MiB result costs one copy, not a DOM and a reserialization.
  std::string raw{};
  std::size_t raw_id_pos = 0, raw_id_len = 0;
  bool raw_is_error = false;  ///< the raw result's own "isError" is true (a tool's error)

  /// A tools/call whose params were not parsed (message_parser::parse_call): `body` has no
  /// "params" while this is set; parse_params() puts them there.
  std::optional<unparsed_params> unparsed{};
  /// A call read by parse_call: its id is `scanned_id` and its method tools/call, and `body`
  /// holds nothing but the params once parse_params() has put them there.
  bool scanned = false;
  json::value scanned_id{};

  const json::value& id() const;    ///< null value for notifications
  std::string_view method() const;  ///< "" for responses
  /// `params` as an object; an empty object when absent (or still `unparsed`).
  const json::object& params() const;
  /// Parses `unparsed` params into `body` (validated when read: only memory can fail).
  void parse_params();
  /// A raw response parsed into `body` (a stage that must change its result); true when the
  /// body holds it. The raw text was validated when it arrived, so only memory can fail.
  bool parse_raw();
};

/// How a request wants its answer: parsed into message::body, or, when it is a success
/// response, kept as received in message::raw (to be relayed without a DOM: relay_reply).
enum class reply_form { parsed, raw };

/// Where a success response ({"jsonrpc":"2.0","id":<integer>,"result":...}) keeps its id.
struct response_span {
  std::int64_t id;
  std::size_t id_pos, id_len;  ///< the id's bytes in the line
  bool is_error = false;       ///< the result is an object whose "isError" is true
};

/// Parses JSON text and checks the JSON-RPC 2.0 shape. Reuse one parser per connection: it keeps
/// its buffers between messages.
class message_parser {
 public:
  message_parser();
  ~message_parser();
  message_parser(const message_parser&) = delete;
  message_parser& operator=(const message_parser&) = delete;

  result<message> parse(std::string_view line);
  /// As parse(), but a plain tools/call — the keys jsonrpc, id, method and params only, params
  /// with a "name" written without escapes that does not begin with "mcpmux" (mcpmux's own
  /// tools read their arguments) and "arguments" only — keeps its params as text
  /// (message::unparsed): a call is forwarded without a DOM of its arguments.
  result<message> parse_call(std::string_view line);

  /// Validates `line` as JSON without building it and, when it is a success response with an
  /// integer id, says where the id is (and whether its result says isError). nullopt for anything
  /// else (parse() then tells what it is).
  std::optional<response_span> scan_response(std::string_view line);

 private:
  bool scan_call(std::string_view line, message& m);

  struct impl;
  std::unique_ptr<impl> impl_;
};

/// What the first bytes of a line too long to keep say it was.
struct line_head {
  enum class kind {
    answer,  ///< an answer to the request with integer id `id`
    other,   ///< not an answer to one of our requests: a request, a notification, a string id,
             ///< not JSON-RPC, not JSON
    unknown  ///< maybe an answer, to an id not among them (the TypeScript SDK writes it after the
             ///< result), or a batch, or too few bytes to tell
  } what = kind::unknown;
  std::optional<std::int64_t> id;  ///< the integer id, when one came before the verdict
};
/// Reads the top-level keys of a message's first bytes (`head`, cut anywhere) until they tell.
line_head read_line_head(std::string_view head);

/// Checks the JSON-RPC shape of an already parsed value (no JSON parsing).
result<message> classify(json::value v);

/// `o[key]` as a string, "" when absent or not a string.
std::string string_member(const json::object& o, std::string_view key);
/// `o[key]` as an integer, 0 when absent or not an integer.
std::int64_t int_member(const json::object& o, std::string_view key);

/// Serialized replies and messages (no trailing newline).
std::string make_result(const json::value& id, const json::value& result);
std::string make_error(const json::value& id, int code, std::string_view msg,
                       const json::value* data = nullptr);
std::string make_request(const json::value& id, std::string_view method, const json::value& params);
/// Appends `s` as a JSON string: as it is when nothing in it needs escaping, else escaped by the
/// serializer.
void append_json_string(std::string& out, std::string_view s);

/// A request whose params are JSON text already (unparsed_params::text).
std::string make_request_text(const json::value& id, std::string_view method,
                              std::string_view params_text);
/// The same, appended to `out` (a buffer its caller reuses).
void append_request_text(std::string& out, const json::value& id, std::string_view method,
                         std::string_view params_text);
std::string make_notification(std::string_view method, const json::value& params);

/// The serialized answer to `id` carrying `reply`'s result or error unchanged (a raw reply is
/// consumed: its id is rewritten in place).
std::string relay_reply(const json::value& id, message& reply);

/// `id` serialized (an integer without the serializer): a table's key for a request.
std::string serialize_id(const json::value& id);

/// True when `v` is an acceptable request id (string or integer).
bool valid_id(const json::value& v);

}  // namespace mcpmux
