// Who mcpmux is to an authorization server, sans-io (the MCP authorization spec's "Client
// Registration", 2026-07-28): the identity to use in the spec's order (pre-registered, a
// Client ID Metadata Document, Dynamic Client Registration — RFC 7591, kept and reused), the
// registration request and the reading of its answer, and the token endpoint authentication
// method (client_secret_basic, client_secret_post or none). Credentials are bound to the
// issuer that issued them: one registered at one authorization server is never offered to
// another.
#pragma once

#include "protocol/result.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/oauth_discovery.hpp"

namespace mcpmux::oauth {

/// How mcpmux identifies itself to an authorization server.
enum class identity {
  preregistered,      ///< a client_id (and maybe a secret) from the configuration
  metadata_document,  ///< the configured Client ID Metadata Document URL is the client_id
  dynamic,            ///< RFC 7591 registration at the server's registration_endpoint
  none,               ///< none possible: the person must register a client and configure it
};
std::string_view to_string(identity i);

/// The spec's priority: pre-registered credentials if configured; a metadata document when the
/// server supports them and a URL is configured (an https URL with a path); Dynamic Client
/// Registration when the server has a registration endpoint; else none.
identity choose_identity(bool preregistered, std::string_view metadata_document_url,
                         const server_metadata& server);

/// True for a usable Client ID Metadata Document URL: https, with a path.
bool valid_metadata_document_url(std::string_view url);

/// A registered (or configured) client, bound to the issuer it belongs to.
struct client_credentials {
  std::string issuer;
  std::string client_id;
  std::string client_secret;        ///< "" for a public client
  std::int64_t secret_expires = 0;  ///< client_secret_expires_at (Unix seconds; 0 = never)
  std::string auth_method;          ///< token_endpoint_auth_method the server agreed to
};

/// What mcpmux asks for when it registers (RFC 7591 §2): a native application (its redirect is
/// a loopback listener, RFC 8252) using the authorization code and refresh token grants.
struct registration_params {
  std::vector<std::string> redirect_uris;
  std::string client_name = "mcpmux";
  std::string scope;                      ///< "" = not asked
  bool client_credentials_grant = false;  ///< a machine client (no person, no redirect)
};
/// The JSON body of the registration request.
std::string registration_request(const registration_params& p);

/// Reads the registration response (201, or 200 from lenient servers) for `issuer`: client_id
/// is required; an error body (RFC 7591 §3.2.2) or anything else is the error text.
result<client_credentials> read_registration_response(unsigned http_status, std::string_view body,
                                                      std::string_view issuer);

/// The token endpoint authentication method for a client: none without a secret; with one, the
/// one the registration agreed to, else the first of client_secret_basic, client_secret_post
/// and none the server supports (absent list: client_secret_basic, RFC 8414's default; none
/// means the secret a server handed out unasked is not used). "" when the server supports
/// none of them.
std::string auth_method(const client_credentials& c, const server_metadata& server);

/// True when credentials may be used with `server`: issued by that very issuer, and their
/// secret (if it expires) not expired at `now_unix`.
bool usable_with(const client_credentials& c, const server_metadata& server, std::int64_t now_unix);

}  // namespace mcpmux::oauth
