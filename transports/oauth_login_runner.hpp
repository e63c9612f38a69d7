// Runs one OAuth login to its end: the oauth::login machine driven with real I/O — requests to
// the authorization server (http_fetch), the loopback listener the redirect lands on
// (oauth_redirect), fresh secrets (oauth_crypto). The person's part is `open_url`: show or open
// the authorization URL. Nothing is stored here; the caller keeps what it gets.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "protocol/oauth_login.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

struct login_outcome {
  std::string error;  ///< "" when logged in
  oauth::discovered found;
  oauth::client_credentials client;
  bool registered_now = false;
  oauth::token_set tokens;
  std::string scope, resource;
};

struct login_run_options {
  std::string ca_file;         ///< for the authorization server's TLS
  unsigned redirect_port = 0;  ///< 0 = any free port
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds person_timeout{300000};  ///< how long the browser step may take
};

/// Starts the login; `done` runs once, on the io_context's thread. `cfg.redirect_uri` is set
/// from the listener (for a person's login).
void run_login(boost::asio::io_context& io, oauth::login_config cfg, login_run_options options,
               std::function<void(const std::string& url)> open_url,
               std::function<void(login_outcome)> done);

}  // namespace mcpmux
