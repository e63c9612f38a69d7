// The loopback listener an authorization redirect lands on (RFC 8252 §7.3): 127.0.0.1, an
// ephemeral port, one path. The browser's GET is answered with a short page; its query goes
// to the owner, which checks state and iss (oauth::read_redirect) and says what the page tells
// the person. Only this path, only GET, only one Host, naming the listener (no DNS rebinding).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "protocol/result.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class redirect_listener {
 public:
  virtual ~redirect_listener() = default;
  /// The exact redirect URI to register and send: http://127.0.0.1:PORT/PATH.
  virtual const std::string& redirect_uri() const = 0;
  /// Stops listening; connections still open are closed. (Dropping the pointer does not: the
  /// listener lives until close.)
  virtual void close() = 0;
};

/// What the page tells the person after a redirect: a line of text (escaped for HTML).
using redirect_handler = std::function<std::string(std::string_view query)>;

/// Listens on 127.0.0.1:`port` (0: the kernel picks; a fixed one for clients registered with
/// it) for GET `path` (e.g. "/callback"), or fails saying why it cannot.
result<std::shared_ptr<redirect_listener>> start_redirect_listener(boost::asio::io_context& io,
                                                                   std::string path,
                                                                   redirect_handler on_redirect,
                                                                   unsigned short port = 0);

}  // namespace mcpmux
