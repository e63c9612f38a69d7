// OAuth discovery for remote MCP servers, sans-io (the MCP authorization spec, 2025-03-26 …
// 2026-07-28): reading a 401's WWW-Authenticate challenge, the well-known URLs to try in the
// spec's order (protected resource metadata, RFC 9728; authorization server metadata, RFC 8414
// and OpenID Connect Discovery), the 2025-03-26 fallbacks, and the checks a metadata document
// must pass before it is used (the resource is this server, the issuer is the one asked, S256
// is offered, endpoints are HTTPS or loopback). The owner fetches; these decide.
#pragma once

#include "protocol/result.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/json_rpc.hpp"

namespace mcpmux::oauth {

/// An absolute http(s) URL cut at its delimiters (no decoding). The scheme is lowercased.
struct url_parts {
  std::string scheme;     ///< "http" or "https"
  std::string authority;  ///< host[:port] as written (userinfo refused)
  std::string path;       ///< "" or starting with '/'
  std::string query;      ///< without '?'; the fragment is dropped
  /// scheme://authority, with the host lowercased and a default port left out.
  std::string origin() const;
};
std::optional<url_parts> split_url(std::string_view url);

/// True for an https URL, or an http one whose host is a loopback address or "localhost": the
/// only places credentials may be sent (the spec requires HTTPS for authorization endpoints).
bool secure_endpoint(std::string_view url);

/// One challenge of a WWW-Authenticate header (RFC 9110 §11.6.1): its scheme (lowercased) and
/// its auth-params (names lowercased, quoted-string values unescaped).
struct challenge {
  std::string scheme;
  std::map<std::string, std::string> params;
  std::string param(std::string_view name) const;
};
/// Every challenge of a header value (several may share one header); malformed parts are
/// skipped, never a crash.
std::vector<challenge> parse_www_authenticate(std::string_view header);
/// The Bearer challenge of a header value, if there is one (its `resource_metadata`, `scope`,
/// `error` say where to look, what to ask for, and why the token failed).
std::optional<challenge> bearer_challenge(std::string_view header);

/// The protected resource metadata URLs of an MCP server URL, in the order to try (RFC 9728
/// §3.1): the path-inserted form, then the root form (one URL when the server is at the root).
std::vector<std::string> protected_resource_metadata_urls(std::string_view server_url);

/// The authorization server metadata URLs of an issuer, in the spec's order: with a path,
/// OAuth path insertion, OIDC path insertion, OIDC path appending; without, OAuth then OIDC.
std::vector<std::string> authorization_server_metadata_urls(std::string_view issuer);

/// The 2025-03-26 fallbacks for a server without protected resource metadata: the
/// authorization server is the server's origin, its metadata at the root well-known URL, and
/// without metadata its endpoints are /authorize, /token and /register there.
struct default_endpoints {
  std::string metadata, authorization, token, registration;
};
std::optional<default_endpoints> legacy_endpoints(std::string_view server_url);

/// A protected resource metadata document, checked.
struct resource_metadata {
  std::string resource;
  std::vector<std::string> authorization_servers;
  std::vector<std::string> scopes_supported;
};
/// Reads and checks a protected resource metadata document for `server_url`: `resource` must
/// name this server (same origin, and its path a prefix of the server's, segment by segment,
/// a trailing slash aside — the resource may cover several endpoints, never another server),
/// and at least one authorization server must be listed. The error text says what is wrong.
result<resource_metadata> read_resource_metadata(const json::value& doc,
                                                 std::string_view server_url);

/// An authorization server metadata document, checked.
struct server_metadata {
  std::string issuer;
  std::string authorization_endpoint, token_endpoint;
  std::string registration_endpoint, revocation_endpoint;  ///< "" when not offered
  std::vector<std::string> scopes_supported;
  std::vector<std::string> token_endpoint_auth_methods_supported;
  std::vector<std::string> grant_types_supported;
  bool pkce_s256 = false;  ///< code_challenge_methods_supported lists S256
  bool client_id_metadata_document_supported = false;
  bool iss_parameter_supported = false;  ///< authorization_response_iss_parameter_supported
};
/// Reads and checks authorization server metadata fetched for `issuer`: the document's issuer
/// must be identical to it (RFC 8414 §3.3), a token endpoint must be given, and every endpoint
/// must be secure_endpoint().
result<server_metadata> read_server_metadata(const json::value& doc, std::string_view issuer);
/// Why the authorization code grant cannot be used with this server ("" when it can): it needs
/// an authorization endpoint and PKCE S256 (a server that does not advertise S256 is refused).
std::string refuse_authorization_code(const server_metadata& m);

/// What discovery found: the server's protected resource metadata (absent when it has none
/// and the 2025-03-26 fallbacks were used) and its authorization server's metadata.
struct discovered {
  std::optional<resource_metadata> resource;
  server_metadata server;
  bool defaults = false;  ///< no metadata at all: the 2025-03-26 default endpoints
};

/// Discovery as a stepable machine: the owner GETs each URL it is given and reports the answer,
/// until the machine is done or fails. No I/O, no clock. Order: the challenge's
/// resource_metadata, else the RFC 9728 URLs; then the first authorization server's metadata
/// URLs. A server without protected resource metadata gets the 2025-03-26 treatment (metadata
/// at its origin, else default endpoints). A document that fails a security check (another
/// resource, another issuer) is refused and discovery fails: no other URL can make it right.
class discovery {
 public:
  struct step {
    enum kind { fetch, done, fail } what = fail;
    std::string url;    ///< fetch: GET this (Accept: application/json)
    std::string error;  ///< fail: why
  };
  /// `challenge`: the Bearer challenge of the 401 that started it, if any.
  discovery(std::string server_url, std::optional<challenge> challenge = std::nullopt);
  step start();
  /// The answer to the last fetch: its HTTP status and body (status 0: no answer at all).
  step on_response(unsigned status, std::string_view body);
  /// Once done.
  const discovered& result() const { return result_; }

 private:
  enum class phase { resource, legacy_metadata, server };
  step next();
  step fail(std::string why);

  std::string server_url_;
  std::optional<challenge> challenge_;
  phase phase_ = phase::resource;
  std::vector<std::string> urls_;
  std::size_t at_ = 0;
  std::string issuer_;
  std::string last_error_;
  discovered result_;
};

}  // namespace mcpmux::oauth
