// The transport interface: moves JSON-RPC messages over one connection; knows framing, not MCP.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace mcpmux {

struct message;

/// What a transport may need to know about an outgoing message, told by core (which built it)
/// so that no transport parses what it sends. Only HTTP reads it. By default: a response (or
/// anything the transport need not know about).
struct outgoing_info {
  enum class kind { response, request, notification };
  kind what = kind::response;
  std::string method;   ///< of a request or notification
  std::int64_t id = 0;  ///< a request's id
  /// notifications/cancelled: the id of the request it cancels.
  std::optional<std::int64_t> cancels;
  /// A 2026-07-28 request: the era's headers (MCP-Protocol-Version; empty for the 2025-11-25
  /// era), Mcp-Name for the methods that name a target, and the Mcp-Param-* fields of a
  /// tools/call whose tool has x-mcp-header arguments (protocol/param_headers).
  std::string version;
  std::optional<std::string> name;
  std::vector<std::pair<std::string, std::string>> params;
};

/// One outgoing message in three runs: `head`, then `shared` (text other messages share too: a
/// whole tool list of a megabyte; may be null), then `tail`.
struct spliced_text {
  std::string head;
  std::shared_ptr<const std::string> shared;
  std::string tail;
  std::string_view middle() const {
    return shared ? std::string_view(*shared) : std::string_view();
  }
  std::size_t size() const { return head.size() + middle().size() + tail.size(); }
  /// The message as one string.
  std::string joined() && {
    const auto bytes = size();
    std::string out = std::move(head);
    out.reserve(bytes);
    out += middle();
    out += tail;
    return out;
  }
};

/// What a transport reports to its owner. Called on the io_context thread.
class transport_events {
 public:
  virtual ~transport_events() = default;
  /// One complete message (a line of text; not yet parsed).
  virtual void on_message(std::string_view text) = 0;
  /// The same, in a buffer the transport hands over (a long line it assembled): the receiver
  /// may take it instead of copying. By default, as on_message.
  virtual void on_message_buffer(std::string&& text) { on_message(text); }
  /// The same, already parsed and checked by the transport (the HTTP endpoint reads each body to
  /// route it): the receiver need not parse `text` again. By default, as on_message.
  virtual void on_message_parsed(message&& msg, std::string_view text) {
    (void)msg;
    on_message(text);
  }
  /// A message over the size cap was discarded.
  virtual void on_oversize(std::size_t bytes) = 0;
  /// The same from a transport that kept the line's first bytes (`head`, of at least `bytes`
  /// bytes): they may tell whose answer it was. By default, as on_oversize.
  virtual void on_oversize_head(std::size_t bytes, std::string_view head) {
    (void)head;
    on_oversize(bytes);
  }
  /// The connection ended without the owner asking (EOF, exit, write failure). `reason` is for
  /// people: "exited with code 1", "EOF on stdout". Fired at most once, never after close().
  virtual void on_closed(std::error_code ec, std::string reason) = 0;
};

/// One message connection. Owned through shared_ptr: its coroutines keep it alive until they end.
class transport {
 public:
  virtual ~transport() = default;
  /// Begins reading; events go to `events`, which must outlive the transport or call close().
  virtual void start(transport_events& events) = 0;
  /// Queues one message (newline added by the transport). Fails with errc::queue_full when the
  /// bounded queue is over its cap, errc::transport_closed after close or failure.
  virtual std::error_code send(std::string message) = 0;
  /// True when send_described reads what it is told of a message (HTTP: its headers); else
  /// core does not describe it (a stdio or socket transport writes the text alone).
  virtual bool reads_descriptions() const { return false; }
  /// The same with what core knows of the message (outgoing_info). By default, as send().
  virtual std::error_code send_described(std::string message, outgoing_info info) {
    (void)info;
    return send(std::move(message));
  }
  /// The same for a message in runs. Transports that gather their writes send the middle from
  /// where it is; by default the runs are joined.
  virtual std::error_code send_spliced(spliced_text message) {
    return send(std::move(message).joined());
  }
  /// The same for a text the caller keeps (a buffer it reuses from one message to the next).
  /// Transports that write at once write it from where it is, and copy only what has to wait;
  /// by default it is copied.
  virtual std::error_code send_copy(std::string_view message) { return send(std::string(message)); }
  /// Closes gracefully in the background; no event fires after this call.
  virtual void close() = 0;
  /// Bytes queued and not yet written.
  virtual std::size_t queued_bytes() const = 0;
  /// Delivers at once what can be read without waiting (the writer is known to be gone, so
  /// nothing more is worth waiting for). A no-op for transports that cannot tell.
  virtual void read_ready() {}

  /// Called by the MCP client once initialize has been answered, before
  /// notifications/initialized: the negotiated protocol version (HTTP sends it as
  /// MCP-Protocol-Version) and the moment to open a background listener (Streamable HTTP's GET
  /// stream). `done` runs once the listener is established or given up (at most `max_wait`; no
  /// deadline when zero). Transports without such a thing call `done` at once.
  virtual void on_initialized(std::string protocol_version, std::chrono::milliseconds max_wait,
                              std::function<void()> done) {
    (void)protocol_version;
    (void)max_wait;
    done();
  }
};

/// Limits shared by all transports.
struct transport_limits {
  std::size_t max_message_bytes = 16u << 20;  ///< longest accepted incoming message
  std::size_t max_queue_bytes = 64u << 20;    ///< unsent outgoing bytes before send() fails
};

}  // namespace mcpmux
