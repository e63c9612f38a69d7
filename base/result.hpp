// The one error convention of mcpmux, from the base layer's helpers up to core and the
// transports: a fallible operation returns result<T>, its value or an rpc_error — a message
// written for a person, and the JSON-RPC code (and data) it carries when it becomes an answer.
// Most errors end as one: an answer to a client, a control method's error, a line in status, the
// log or the CLI's output, and they need no translation on the way. Exceptions stay at the edges
// (a library that throws is caught where it is called; the loop's edge, core/guard.hpp, catches
// the rest). std::error_code appears only as the closed set of reasons a message on a connection
// ended (errc in protocol/error.hpp: a transport's send, rpc_outcome), which callers branch on
// and which carry no message. It lives in base so that base's own helpers (files) use it too;
// protocol/result.hpp includes it for the layers above.
#pragma once

#include <utility>
#include <variant>

#include <boost/json/value.hpp>
#include <string>

namespace mcpmux {

namespace json = boost::json;

/// Error codes used on the wire.
namespace rpc_code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
inline constexpr int connection_closed = -32000;  ///< as the MCP SDKs: the upstream went away
inline constexpr int request_timeout = -32001;    ///< as the MCP SDKs: no answer in time
// 2026-07-28
inline constexpr int header_mismatch = -32020;      ///< HTTP headers disagree with the body
inline constexpr int missing_capability = -32021;   ///< the request needs an undeclared capability
inline constexpr int unsupported_version = -32022;  ///< _meta names a revision not spoken here
}  // namespace rpc_code

/// What went wrong: a message for a person, and the JSON-RPC code (and data) it has as an answer.
struct rpc_error {
  int code = rpc_code::internal_error;
  std::string message;
  json::value id;              ///< the offending message's id when it could be read, else null
  json::value data = nullptr;  ///< optional `error.data`
};

/// A failure with `message` (code: internal error), for `return failure("…")` in a function that
/// returns a result.
inline rpc_error failure(std::string message, int code = rpc_code::internal_error) {
  return rpc_error{code, std::move(message), nullptr, nullptr};
}

template <class T = void>
class [[nodiscard]] result {
 public:
  // A value is a success. (Taken by reference, not by value: a message moved in is moved once.)
  result(T&& value) : v_(std::move(value)) {}  // NOLINT
  result(const T& value) : v_(value) {}        // NOLINT
  /// A success made in place (`result<message> r(std::in_place, …)`: nothing moved at all).
  template <class... Args>
  explicit result(std::in_place_t, Args&&... args)
      : v_(std::in_place_index<0>, std::forward<Args>(args)...) {}
  result(rpc_error e) : v_(std::move(e)) {}  // NOLINT: an error is a failure
  /// A failure with `message` (code: internal error).
  static result fail(std::string message, int code = rpc_code::internal_error) {
    return failure(std::move(message), code);
  }

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const rpc_error& error() const { return std::get<1>(v_); }
  rpc_error& error() { return std::get<1>(v_); }
  /// The value, or null on a failure / the error, or null on a success.
  T* if_value() { return std::get_if<0>(&v_); }
  const T* if_value() const { return std::get_if<0>(&v_); }
  const rpc_error* if_error() const { return std::get_if<1>(&v_); }

 private:
  std::variant<T, rpc_error> v_;
};

/// A fallible operation with nothing to return.
template <>
class [[nodiscard]] result<void> {
 public:
  result() = default;
  result(rpc_error e) : e_(std::move(e)), failed_(true) {}  // NOLINT: an error is a failure
  static result fail(std::string message, int code = rpc_code::internal_error) {
    return failure(std::move(message), code);
  }
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const rpc_error& error() const { return e_; }
  rpc_error& error() { return e_; }

 private:
  rpc_error e_;
  bool failed_ = false;
};

}  // namespace mcpmux
