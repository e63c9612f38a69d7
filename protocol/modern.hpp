// The 2026-07-28 ("modern") era's per-request rules, sans-io: what a request's _meta must carry,
// the keys MCP reserves there, and the small rewrites a gateway makes between the eras.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "protocol/json_rpc.hpp"

namespace mcpmux::mcp {

/// The `_meta` keys of the modern era.
namespace meta_key {
inline constexpr std::string_view protocol_version = "io.modelcontextprotocol/protocolVersion";
inline constexpr std::string_view client_capabilities =
    "io.modelcontextprotocol/clientCapabilities";
inline constexpr std::string_view client_info = "io.modelcontextprotocol/clientInfo";
inline constexpr std::string_view log_level = "io.modelcontextprotocol/logLevel";
inline constexpr std::string_view server_info = "io.modelcontextprotocol/serverInfo";
inline constexpr std::string_view subscription_id = "io.modelcontextprotocol/subscriptionId";
}  // namespace meta_key

/// The tasks extension (SEP-2663): long tool calls as tasks polled with tasks/get.
inline constexpr std::string_view tasks_extension = "io.modelcontextprotocol/tasks";

/// True when `capabilities.extensions` names the extension.
bool has_extension(const json::object& capabilities, std::string_view extension);

/// A server's task id as clients see it: "<server>/<id>" (server names hold no '/'), so that
/// the tasks/* requests naming it reach the server that owns the task.
std::string scoped_task_id(std::string_view server, std::string_view task_id);
/// The server and the server's own id of a scoped task id; nullopt when it is not one.
std::optional<std::pair<std::string_view, std::string_view>> split_task_id(std::string_view id);

/// mcpmux's own Implementation object ({name, version}): its serverInfo and clientInfo.
json::object implementation();

/// True when `capabilities[capability][flag]` is the boolean true (e.g. "resources",
/// "subscribe"; "tools", "listChanged").
bool capability_flag(const json::object& capabilities, std::string_view capability,
                     std::string_view flag);

/// The name a request acts on, for the methods that name one: params.name of tools/call and
/// prompts/get, params.uri of resources/read, params.taskId of the tasks extension's
/// tasks/get, tasks/update and tasks/cancel ("" when missing); nullopt for other methods. It is
/// what HTTP's Mcp-Name carries and what binds an MRTR retry to its request.
std::optional<std::string> named_target(std::string_view method, const json::object& params);
inline std::optional<std::string> named_target(const message& msg) {
  return named_target(msg.method(), msg.params());
}

/// What a modern request says about its client, read from params._meta.
struct request_meta {
  std::string version;
  json::object capabilities;  ///< clientCapabilities ({} = none)
  json::object client_info;   ///< clientInfo, when given
  std::string log_level;      ///< logLevel, "" when absent (no log messages for the request)
};

/// True when `params._meta` names a protocol version: the request is of the modern era.
bool has_modern_meta(const json::object& params);

/// Reads and checks a modern request's _meta: -32602 when a required field is missing or
/// malformed, -32022 (data: supported, requested) when the version is not one mcpmux speaks.
result<request_meta> read_request_meta(const json::object& params);

/// The error for a version mcpmux does not speak (data lists the supported ones).
rpc_error unsupported_version(std::string_view requested);

/// Removes the keys MCP reserves for protocol use (io.modelcontextprotocol/…) from
/// params._meta, and _meta itself when nothing else is left: what a modern client said about
/// itself is not forwarded to a server, which hears mcpmux's own.
void strip_protocol_meta(json::object& params);

/// Adds "resultType":"complete" to a relayed success response kept as text (a legacy server's
/// results have none; modern clients need it). Leaves a result that has one, or is not an
/// object, as it is. `line` must be a well-formed JSON-RPC success response.
void mark_complete(std::string& line);

/// The same for a result already parsed.
void mark_complete(json::object& result);

}  // namespace mcpmux::mcp
