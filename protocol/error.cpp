// The mcpmux error category.
#include "protocol/error.hpp"

namespace mcpmux {
namespace {

class category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "mcpmux"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok:
        return "success";
      case errc::transport_closed:
        return "Transport closed";
      case errc::timeout:
        return "Request timed out";
      case errc::cancelled:
        return "Request cancelled";
      case errc::queue_full:
        return "Peer is not reading; send queue full";
      case errc::message_too_large:
        return "Message too large";
      case errc::spawn_failed:
        return "Could not start the server process";
      case errc::handshake_failed:
        return "MCP handshake failed";
      case errc::not_connected:
        return "Server not connected";
      case errc::unknown_server:
        return "Unknown server";
      case errc::needs_login:
        return "Needs login";
    }
    return "unknown mcpmux error";
  }
};

}  // namespace

const std::error_category& mcpmux_category() noexcept {
  static const category c;
  return c;
}

std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), mcpmux_category()};
}

}  // namespace mcpmux
