// One OAuth login, start to tokens, as a stepable machine (no I/O, no clock, no randomness):
// discovery (oauth_discovery), the client's identity in the spec's order (oauth_client), then
// either the authorization code grant with PKCE S256 — the person's browser is sent to the
// authorization URL and the redirect comes back through the owner — or, for a machine client,
// the client credentials grant. The owner performs each step (HTTP requests, opening the URL,
// its loopback listener) and feeds the answers back; secrets come in ready-made (a random
// state, a PKCE verifier and its S256 challenge) and never leave in an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/oauth_client.hpp"
#include "protocol/oauth_discovery.hpp"
#include "protocol/oauth_grant.hpp"

namespace mcpmux::oauth {

/// What a login starts from.
struct login_config {
  std::string server_url;                ///< the MCP server (the protected resource)
  std::optional<challenge> bearer;       ///< the Bearer challenge of the 401 that asked for it
  std::string client_id, client_secret;  ///< pre-registered ("" = none)
  std::string client_metadata_url;       ///< a Client ID Metadata Document URL ("" = none)
  std::optional<client_credentials> registered;  ///< a kept dynamic registration (reused)
  std::string scope;                             ///< configured scope; "" = the spec's selection
  bool machine = false;      ///< the client credentials grant: no person, no browser
  std::string redirect_uri;  ///< the loopback listener's (not for a machine)
  std::int64_t now_unix = 0;
};

/// The per-login secrets, made by the owner: an unguessable state, a PKCE verifier and the
/// S256 challenge of it.
struct login_secrets {
  std::string state, code_verifier, code_challenge;
};

class login {
 public:
  /// An HTTP request to perform (GET when `body` is empty and no content type is given).
  struct request {
    std::string method = "GET";
    std::string url;
    std::string body;
    std::string content_type;
    std::string authorization;  ///< the Authorization header's value; "" for none (a secret)
  };
  struct step {
    enum kind {
      fetch,         ///< perform `http`, then on_response
      open_browser,  ///< send the person to `url`, then on_redirect with the redirect's query
      done,          ///< logged in: read the results
      fail,          ///< `error` says why (for the person; no secret in it)
    } what = fail;
    request http;
    std::string url;
    std::string error;
  };

  login(login_config cfg, login_secrets secrets);
  step start();
  step on_response(unsigned status, std::string_view body);
  step on_redirect(std::string_view query);

  // Once done.
  const discovered& found() const { return discovery_.result(); }
  const client_credentials& client() const { return client_; }
  bool registered_now() const { return registered_now_; }  ///< a new registration to keep
  const token_set& tokens() const { return tokens_; }
  const std::string& scope() const { return scope_; }        ///< what was asked for
  const std::string& resource() const { return resource_; }  ///< RFC 8707 resource sent

 private:
  enum class phase { discovering, registering, authorizing, exchanging, done };
  step after_discovery();
  step with_client();
  step exchange(token_grant grant);
  step fail(std::string why);
  client_identity identity() const;

  login_config cfg_;
  login_secrets secrets_;
  discovery discovery_;
  phase phase_ = phase::discovering;
  client_credentials client_;
  bool registered_now_ = false;
  std::string scope_, resource_;
  token_set tokens_;
};

}  // namespace mcpmux::oauth
