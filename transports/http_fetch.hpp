// One HTTP request and its answer, for talking to OAuth authorization servers (metadata,
// registration, tokens, revocation): GET or POST over plain HTTP or TLS (the system's CAs, or
// a server's ca_file), bounded in time and size, no redirect followed, a fresh connection each
// time (these requests are rare). Core reaches it through this header only.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace boost::asio {
class io_context;
}

namespace mcpmux {

struct fetch_request {
  std::string method = "GET";  ///< GET or POST
  std::string url;             ///< absolute http(s) URL
  std::vector<std::pair<std::string, std::string>>
      headers;  ///< values may be secrets: never logged
  std::string body;
  std::string content_type;  ///< of the body (POST)
  std::string accept = "application/json";
  std::chrono::milliseconds timeout{10000};  ///< the whole exchange
  std::size_t max_body = 1u << 20;           ///< a longer answer is an error
  std::string ca_file;                       ///< extra CA bundle; "" = the system's only
};

struct fetch_response {
  unsigned status = 0;       ///< 0 when there was no answer (`error` says why)
  std::string content_type;  ///< lowercase media type, without parameters
  std::string body;
  std::string location;          ///< a redirect's Location (not followed)
  std::string www_authenticate;  ///< a 401's challenge
  std::string error;             ///< "" when an answer came
};

/// Sends `req` and calls `done` once with the answer (on the io_context's thread). Never throws.
void http_fetch(boost::asio::io_context& io, fetch_request req,
                std::function<void(fetch_response)> done);

}  // namespace mcpmux
