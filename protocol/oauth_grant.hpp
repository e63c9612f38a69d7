// The grant half of an MCP client's OAuth 2.1 login, sans-io: PKCE, the authorization URL, the
// redirect's checks (state, RFC 9207 iss), token requests and responses, and scope selection.
// Randomness and SHA-256 come in as inputs; nothing here does I/O or reads a clock.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace mcpmux::oauth {

/// A form's or a query's fields in order: {name, value}, both decoded.
using form_fields = std::vector<std::pair<std::string, std::string>>;

// --- Encodings --------------------------------------------------------------------------------

/// Base64url without padding (RFC 4648 §5, RFC 7636 Appendix A).
std::string base64url(std::string_view bytes);

/// One name or value in application/x-www-form-urlencoded (RFC 6749 Appendix B): the bytes are
/// taken as UTF-8, RFC 3986 unreserved characters (ALPHA DIGIT - . _ ~) stay, a space becomes
/// '+', every other byte becomes %XX with upper-case hex.
std::string form_encode(std::string_view s);

/// A request body: `name=value` pairs, each side form_encode'd, joined by '&'.
std::string form_body(const form_fields& fields);

/// The fields of a query string (a leading '?' is skipped): split on '&', '+' read as a space,
/// %XX decoded; a field without '=' has the value "", empty fields are skipped. nullopt when a
/// '%' is not followed by two hex digits, since such a redirect did not come from a conforming
/// authorization server and guessing what it meant is worse than refusing it.
std::optional<form_fields> parse_query(std::string_view query);

// --- PKCE (RFC 7636) --------------------------------------------------------------------------

/// A code_verifier: `random` (32 to 96 bytes from a CSPRNG) as base64url, which is 43 to 128
/// characters of the unreserved set (§4.1). Throws std::invalid_argument for another length:
/// fewer bytes are too guessable and more give a verifier the server must refuse.
std::string pkce_verifier(std::span<const unsigned char> random);

/// The S256 code_challenge: base64url of SHA-256(ASCII(code_verifier)) (§4.2), the hash being
/// computed by the caller.
std::string pkce_challenge_s256(std::span<const unsigned char, 32> sha256_of_verifier);

// --- The authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, RFC 8707) ---------------------

/// What the browser is sent to the authorization endpoint with.
struct authorization_request {
  std::string client_id;
  std::string redirect_uri;
  std::string state;           ///< unguessable, checked again by read_redirect
  std::string code_challenge;  ///< pkce_challenge_s256; the method is always S256
  std::string scope;           ///< space-separated (select_scope); omitted when empty
  std::string resource;        ///< the MCP server's canonical URI (RFC 8707); omitted when empty
};

/// The authorization endpoint with the request's parameters in its query: response_type=code,
/// client_id, redirect_uri, scope, state, code_challenge, code_challenge_method=S256, resource.
/// An endpoint that already has a query keeps it (RFC 6749 §3.1) and gets '&' before ours; a
/// fragment, which §3.1 forbids there, is dropped so that our parameters stay in the query.
std::string authorization_url(std::string_view endpoint, const authorization_request& request);

// --- Token requests (RFC 6749 §4.1.3, §4.4, §6; RFC 8707 §2) ---------------------------------

/// Exchanges the code the redirect carried.
struct authorization_code_grant {
  std::string code;
  std::string redirect_uri;   ///< the same value the authorization request carried
  std::string code_verifier;  ///< pkce_verifier
  std::string resource;       ///< omitted when empty
};
/// Gets a new access token with a refresh token.
struct refresh_token_grant {
  std::string refresh_token;
  std::string scope;     ///< "" = the scope granted before (§6); a narrower one may be asked
  std::string resource;  ///< omitted when empty
};
/// A confidential client acting on its own behalf (no user, no browser).
struct client_credentials_grant {
  std::string scope;     ///< omitted when empty
  std::string resource;  ///< omitted when empty
};
using token_grant =
    std::variant<authorization_code_grant, refresh_token_grant, client_credentials_grant>;

/// How the client authenticates at the token endpoint (RFC 8414
/// token_endpoint_auth_methods_supported names).
enum class client_auth {
  none,                 ///< a public client: client_id in the body, no secret
  client_secret_basic,  ///< `Authorization: Basic` of the form-encoded id and secret (§2.3.1)
  client_secret_post,   ///< client_id and client_secret in the body (§2.3.1)
};

/// The method an RFC 8414 / RFC 7591 name stands for (as oauth_client's auth_method gives it);
/// nullopt for a method not done here (private_key_jwt, tls_client_auth, …).
std::optional<client_auth> client_auth_named(std::string_view name);

/// Who the client is at the authorization server.
struct client_identity {
  std::string client_id;
  std::string client_secret;  ///< ignored with client_auth::none
  client_auth method = client_auth::none;
};

/// A token request to POST as application/x-www-form-urlencoded.
struct token_http_request {
  std::string body;
  std::string authorization;  ///< the Authorization header's value, or "" for none
};

/// The request for `grant`: grant_type first, then the grant's fields, then the client's.
token_http_request token_request(const token_grant& grant, const client_identity& client);
/// An RFC 7009 revocation request for `token` ("refresh_token" or "access_token" as the
/// hint; "" = none), the client authenticated as at the token endpoint.
token_http_request revocation_request(const std::string& token, std::string_view hint,
                                      const client_identity& client);

// --- Token responses (RFC 6749 §5.1, §5.2) ----------------------------------------------------

/// Tokens the authorization server issued.
struct token_set {
  std::string access_token;
  std::string token_type = "Bearer";          ///< always "Bearer": other types are refused
  std::optional<std::uint64_t> expires_in{};  ///< seconds from the response; nullopt = not said
  std::optional<std::string> refresh_token{};
  std::optional<std::string> scope{};  ///< what was granted, when it differs from the request
};

/// Codes of the errors mcpmux finds itself (oauth_error::from_server is false); the others come
/// from RFC 6749 §4.1.2.1 and §5.2 as the authorization server wrote them.
namespace local_error {
/// The token endpoint's answer is not a usable token or error response.
inline constexpr std::string_view invalid_response = "invalid_response";
/// The redirect is malformed: bad escapes, a repeated parameter, no code.
inline constexpr std::string_view invalid_redirect = "invalid_redirect";
/// The redirect's state is missing or not the one the request carried (CSRF, RFC 6749 §10.12).
inline constexpr std::string_view state_mismatch = "state_mismatch";
/// The redirect's iss is missing though advertised, or not the issuer (mix-up, RFC 9207).
inline constexpr std::string_view issuer_mismatch = "issuer_mismatch";
}  // namespace local_error

/// A refused grant or an unusable answer. No text in it holds a token, a code or the state.
struct oauth_error {
  std::string error;              ///< an RFC 6749 code, or one of local_error
  std::string error_description;  ///< printable ASCII/UTF-8, clipped; "" when none
  std::string error_uri;          ///< "" when none
  unsigned http_status = 0;       ///< the token endpoint's status; 0 for a redirect
  bool from_server = false;       ///< the authorization server wrote `error` (not local_error)
};

/// Reads the token endpoint's answer. A 2xx with a JSON object holding a non-empty
/// access_token and token_type Bearer (any case) is a token_set; expires_in may be a number or
/// a string of digits, as some servers send it. An `error` object is an oauth_error with
/// from_server set, whatever the status. Anything else (not JSON, an HTML error page, a
/// missing or mistyped member, over 1 MiB) is local_error::invalid_response; its description
/// says what is wrong but never quotes the body, which may hold tokens.
std::variant<token_set, oauth_error> read_token_response(unsigned http_status,
                                                         std::string_view body);

// --- Scope selection (MCP authorization, "Scope Selection Strategy", "Refresh Tokens") --------

/// Whether a client that wants a refresh token asks for `offline_access`.
enum class offline_access {
  skip,                  ///< never add it (it is still dropped when the server lacks it)
  request_if_supported,  ///< add it when the authorization server's scopes_supported lists it
};

/// Where the scope of an initial authorization comes from. Empty means absent, as in
/// oauth_discovery's resource_metadata and server_metadata, whose lists these are.
struct scope_sources {
  std::string challenge{};  ///< scope= of the 401's WWW-Authenticate ("" = not given)
  std::vector<std::string> resource_scopes_supported{};  ///< of the protected resource metadata
  std::vector<std::string> server_scopes_supported{};    ///< of the authorization server metadata
};

/// The space-separated scope to request, "" meaning: send no scope parameter. The challenge's
/// scope when it names any, else every resource scopes_supported entry, else nothing. Then
/// `offline_access` is added when asked for and the authorization server lists it, and removed
/// when that server does not list it, so it is never requested from a server that does not
/// support it. Repeated scopes are dropped; the order is kept.
std::string select_scope(const scope_sources& sources,
                         offline_access refresh = offline_access::request_if_supported);

/// Step-up after a 403 insufficient_scope: the union of the scope requested before and the
/// challenged one, earlier scopes first, so that re-authorizing for one operation does not
/// lose the permissions other operations need.
std::string step_up_scope(std::string_view previous, std::string_view challenged);

/// True when every scope of `wanted` is among `have` (both space-separated): a step-up to
/// `wanted` would ask for nothing new, so it is not asked for again.
bool scope_covers(std::string_view have, std::string_view wanted);

// --- The redirect (RFC 6749 §4.1.2, RFC 9207) -------------------------------------------------

/// The code the redirect carried, ready for authorization_code_grant.
struct authorization_code {
  std::string code;
};

/// Whether the authorization server metadata says `authorization_response_iss_parameter_
/// supported: true`.
enum class iss_support { not_advertised, advertised };

/// Checks the query of the request that reached redirect_uri, in this order:
/// - a malformed query or a repeated code, state, iss or error is invalid_redirect;
/// - iss (RFC 9207 §2.4, MCP 2026-07-28 "Authorization Response Validation"): when present it
///   must equal `expected_issuer` byte for byte after form-decoding (no case folding, port,
///   trailing-slash or percent-encoding normalization), advertised or not; when absent it is
///   refused only if advertised. This comes before all else since an answer from the wrong
///   server must not be acted on, not even its error;
/// - state must equal `expected_state` exactly (an empty expected state matches nothing);
/// - an `error` parameter becomes an oauth_error from the server;
/// - otherwise a non-empty code is required.
std::variant<authorization_code, oauth_error> read_redirect(std::string_view query,
                                                            std::string_view expected_state,
                                                            std::string_view expected_issuer,
                                                            iss_support iss);

}  // namespace mcpmux::oauth
