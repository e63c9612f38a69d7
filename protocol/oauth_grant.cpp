#include "protocol/oauth_grant.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <system_error>

#include "base/text.hpp"
#include "protocol/json_rpc.hpp"

namespace mcpmux::oauth {
namespace {

// A token response is a few kilobytes even with JWTs; anything far larger is not one.
constexpr std::size_t max_token_response_bytes = 1 << 20;
// How much of a server's error text is kept: enough for a log line or a dialog.
constexpr std::size_t max_error_text = 300;

std::string_view as_chars(std::span<const unsigned char> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

bool is_unreserved(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> form_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi << 4 | lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

// Server text made safe to log or show: valid UTF-8, no control characters, clipped.
std::string printable(std::string_view s) {
  auto out = valid_utf8(clip(s, max_error_text));
  for (auto& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

oauth_error local(std::string_view code, std::string description, unsigned status = 0) {
  return oauth_error{std::string(code), std::move(description), "", status, false};
}

std::vector<std::string> split_scope(std::string_view scope) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < scope.size()) {
    const auto start = scope.find_first_not_of(' ', i);
    if (start == std::string_view::npos) break;
    const auto end = std::min(scope.find(' ', start), scope.size());
    out.emplace_back(scope.substr(start, end - start));
    i = end;
  }
  return out;
}

// Adds `s` unless present: scopes are a set (RFC 6749 §3.3) but their order reads better kept.
void add_scope(std::vector<std::string>& to, std::string_view s) {
  if (!s.empty() && std::ranges::find(to, s) == to.end()) to.emplace_back(s);
}

std::string join_scope(const std::vector<std::string>& scopes) {
  std::string out;
  for (const auto& s : scopes) {
    if (!out.empty()) out += ' ';
    out += s;
  }
  return out;
}

constexpr std::string_view offline_access_scope = "offline_access";

// A string member of an error object as text fit to show; "" when absent or not a string.
std::string error_text(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? printable(v->get_string()) : std::string();
}

// expires_in: a JSON number as RFC 6749 says, or a string of digits as some servers send it.
std::optional<std::uint64_t> seconds_of(const json::value& v) {
  if (const auto* u = v.if_uint64()) return *u;
  if (const auto* i = v.if_int64()) {
    if (*i >= 0) return static_cast<std::uint64_t>(*i);
    return std::nullopt;
  }
  if (const auto* d = v.if_double()) {
    if (*d >= 0 && *d < 1e18 && std::floor(*d) == *d) return static_cast<std::uint64_t>(*d);
    return std::nullopt;
  }
  if (const auto* s = v.if_string()) {
    if (s->empty() || s->size() > 18) return std::nullopt;
    std::uint64_t n = 0;
    for (char c : *s) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return n;
  }
  return std::nullopt;
}

// What a body that is not an OAuth answer looks like, named without quoting it.
std::string describe_body(std::string_view body) {
  const auto start = body.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return "an empty body";
  const auto head = body.substr(start, 15);
  if (head.starts_with('<'))
    return "an HTML or XML page of " + std::to_string(body.size()) + " bytes";
  return "a body of " + std::to_string(body.size()) + " bytes that is not JSON";
}

}  // namespace

std::string base64url(std::string_view bytes) {
  return base64(bytes, true, false);
}

std::string form_encode(std::string_view s) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (is_unreserved(c)) {
      out += c;
    } else if (c == ' ') {
      out += '+';
    } else {
      const auto b = static_cast<unsigned char>(c);
      out += '%';
      out += hex[b >> 4];
      out += hex[b & 15];
    }
  }
  return out;
}

std::string form_body(const form_fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) out += '&';
    out += form_encode(name);
    out += '=';
    out += form_encode(value);
  }
  return out;
}

std::optional<form_fields> parse_query(std::string_view query) {
  if (query.starts_with('?')) query.remove_prefix(1);
  form_fields out;
  while (!query.empty()) {
    const auto amp = std::min(query.find('&'), query.size());
    const auto field = query.substr(0, amp);
    query.remove_prefix(std::min(amp + 1, query.size()));
    if (field.empty()) continue;
    const auto eq = field.find('=');
    auto name = form_decode(field.substr(0, eq));
    auto value = eq == std::string_view::npos ? std::optional<std::string>(std::string())
                                              : form_decode(field.substr(eq + 1));
    if (!name || !value) return std::nullopt;
    out.emplace_back(std::move(*name), std::move(*value));
  }
  return out;
}

std::string pkce_verifier(std::span<const unsigned char> random) {
  // 32 bytes give the 43 characters §4.1 requires at least, 96 the 128 it allows at most.
  if (random.size() < 32 || random.size() > 96)
    throw std::invalid_argument("pkce_verifier needs 32 to 96 random bytes, got " +
                                std::to_string(random.size()));
  return base64url(as_chars(random));
}

std::string pkce_challenge_s256(std::span<const unsigned char, 32> sha256_of_verifier) {
  return base64url(as_chars(sha256_of_verifier));
}

std::string authorization_url(std::string_view endpoint, const authorization_request& request) {
  endpoint = endpoint.substr(0, endpoint.find('#'));
  form_fields fields{{"response_type", "code"},
                     {"client_id", request.client_id},
                     {"redirect_uri", request.redirect_uri}};
  if (!request.scope.empty()) fields.emplace_back("scope", request.scope);
  fields.emplace_back("state", request.state);
  fields.emplace_back("code_challenge", request.code_challenge);
  fields.emplace_back("code_challenge_method", "S256");
  if (!request.resource.empty()) fields.emplace_back("resource", request.resource);

  std::string out(endpoint);
  if (out.find('?') == std::string::npos)
    out += '?';
  else if (!out.ends_with('?') && !out.ends_with('&'))
    out += '&';
  return out + form_body(fields);
}

std::optional<client_auth> client_auth_named(std::string_view name) {
  if (name == "none") return client_auth::none;
  if (name == "client_secret_basic") return client_auth::client_secret_basic;
  if (name == "client_secret_post") return client_auth::client_secret_post;
  return std::nullopt;
}

namespace {
// The client's authentication added to a request to the token or revocation endpoint.
token_http_request authenticated(form_fields fields, const client_identity& client) {
  token_http_request out;
  switch (client.method) {
    case client_auth::none:
      fields.emplace_back("client_id", client.client_id);
      break;
    case client_auth::client_secret_post:
      fields.emplace_back("client_id", client.client_id);
      fields.emplace_back("client_secret", client.client_secret);
      break;
    case client_auth::client_secret_basic:
      // §2.3.1: both parts are form-encoded before Basic joins them, so a ':' in the id
      // cannot move the split. One method per request, so the body names no client.
      out.authorization = "Basic " + base64(form_encode(client.client_id) + ":" +
                                            form_encode(client.client_secret));
      break;
  }
  out.body = form_body(fields);
  return out;
}
}  // namespace

token_http_request token_request(const token_grant& grant, const client_identity& client) {
  form_fields fields;
  const auto optional_field = [&](std::string_view name, const std::string& value) {
    if (!value.empty()) fields.emplace_back(name, value);
  };
  if (const auto* g = std::get_if<authorization_code_grant>(&grant)) {
    fields = {{"grant_type", "authorization_code"},
              {"code", g->code},
              {"redirect_uri", g->redirect_uri},
              {"code_verifier", g->code_verifier}};
    optional_field("resource", g->resource);
  } else if (const auto* r = std::get_if<refresh_token_grant>(&grant)) {
    fields = {{"grant_type", "refresh_token"}, {"refresh_token", r->refresh_token}};
    optional_field("scope", r->scope);
    optional_field("resource", r->resource);
  } else if (const auto* c = std::get_if<client_credentials_grant>(&grant)) {
    fields = {{"grant_type", "client_credentials"}};
    optional_field("scope", c->scope);
    optional_field("resource", c->resource);
  }

  return authenticated(std::move(fields), client);
}

token_http_request revocation_request(const std::string& token, std::string_view hint,
                                      const client_identity& client) {
  form_fields fields{{"token", token}};
  if (!hint.empty()) fields.emplace_back("token_type_hint", hint);
  return authenticated(std::move(fields), client);
}

std::variant<token_set, oauth_error> read_token_response(unsigned http_status,
                                                         std::string_view body) {
  const auto status_text = "HTTP " + std::to_string(http_status);
  const bool success = http_status >= 200 && http_status < 300;
  if (body.size() > max_token_response_bytes)
    return local(local_error::invalid_response,
                 "the token endpoint answered " + status_text + " with a body over 1 MiB",
                 http_status);

  std::error_code ec;
  const auto doc = json::parse(body, ec);
  const auto* o = ec ? nullptr : doc.if_object();
  if (!o)
    return local(local_error::invalid_response,
                 "the token endpoint answered " + status_text + " with " +
                     (ec ? describe_body(body) : "JSON that is not an object"),
                 http_status);

  // §5.2's error object, trusted whatever the status: some servers send it with 200.
  if (const auto* e = o->if_contains("error"); e && e->is_string() && !e->get_string().empty()) {
    auto code = printable(e->get_string());
    return oauth_error{std::move(code), error_text(*o, "error_description"),
                       error_text(*o, "error_uri"), http_status, true};
  }
  if (!success)
    return local(local_error::invalid_response,
                 "the token endpoint answered " + status_text + " without an OAuth error code",
                 http_status);

  // From here on the body holds tokens: messages name members, never quote values.
  const auto refuse = [&](std::string why) {
    return local(local_error::invalid_response, "the token response " + std::move(why),
                 http_status);
  };
  token_set out;
  const auto* access = o->if_contains("access_token");
  if (!access || !access->is_string() || access->get_string().empty())
    return refuse(access ? "has an access_token that is not a non-empty string"
                         : "has no access_token");
  out.access_token = std::string(access->get_string());

  // Only Bearer (RFC 6750) can be sent as MCP requires; a DPoP or MAC token sent as Bearer
  // would be refused by the server, or worse, accepted without its proof of possession.
  const auto* type = o->if_contains("token_type");
  if (!type || !type->is_string()) return refuse("has no token_type");
  if (!iequals(type->get_string(), "Bearer"))
    return refuse("has token_type '" + printable(clip(type->get_string(), 40)) + "', not Bearer");

  if (const auto* v = o->if_contains("expires_in"); v && !v->is_null()) {
    out.expires_in = seconds_of(*v);
    if (!out.expires_in) return refuse("has an expires_in that is not a number of seconds");
  }
  if (const auto* v = o->if_contains("refresh_token"); v && !v->is_null()) {
    if (!v->is_string() || v->get_string().empty())
      return refuse("has a refresh_token that is not a non-empty string");
    out.refresh_token = std::string(v->get_string());
  }
  if (const auto* v = o->if_contains("scope"); v && !v->is_null()) {
    if (!v->is_string()) return refuse("has a scope that is not a string");
    out.scope = std::string(v->get_string());
  }
  return out;
}

std::string select_scope(const scope_sources& sources, offline_access refresh) {
  std::vector<std::string> scopes;
  // The challenge is authoritative for the operation that drew it; scopes_supported of the
  // resource is the minimal set for basic use, the fallback when the challenge names none.
  for (const auto& s : split_scope(sources.challenge)) add_scope(scopes, s);
  if (scopes.empty())
    for (const auto& s : sources.resource_scopes_supported)
      for (const auto& part : split_scope(s)) add_scope(scopes, part);

  const bool server_offers =
      std::ranges::find(sources.server_scopes_supported, offline_access_scope) !=
      sources.server_scopes_supported.end();
  if (server_offers && refresh == offline_access::request_if_supported)
    add_scope(scopes, offline_access_scope);
  else if (!server_offers)
    std::erase(scopes, offline_access_scope);
  return join_scope(scopes);
}

std::string step_up_scope(std::string_view previous, std::string_view challenged) {
  auto scopes = split_scope(previous);
  std::vector<std::string> unique;
  for (const auto& s : scopes) add_scope(unique, s);
  for (const auto& s : split_scope(challenged)) add_scope(unique, s);
  return join_scope(unique);
}

bool scope_covers(std::string_view have, std::string_view wanted) {
  const auto h = split_scope(have);
  for (const auto& w : split_scope(wanted))
    if (std::find(h.begin(), h.end(), w) == h.end()) return false;
  return true;
}

std::variant<authorization_code, oauth_error> read_redirect(std::string_view query,
                                                            std::string_view expected_state,
                                                            std::string_view expected_issuer,
                                                            iss_support iss) {
  const auto fields = parse_query(query);
  if (!fields)
    return local(local_error::invalid_redirect,
                 "the redirect's query has a '%' not followed by two hex digits");

  // §3.1: response parameters must not repeat; with two, which one a check read is a guess.
  const std::string_view known[] = {"code",     "state", "iss", "error", "error_description",
                                    "error_uri"};
  std::optional<std::string_view> values[std::size(known)];
  for (const auto& [name, value] : *fields) {
    const auto at = std::ranges::find(known, std::string_view(name));
    if (at == std::end(known)) continue;
    auto& slot = values[at - std::begin(known)];
    if (slot)
      return local(local_error::invalid_redirect, "the redirect repeats the parameter " + name);
    slot = value;
  }
  const auto& [code, state, issuer, error, error_description, error_uri] = values;

  // RFC 9207 §2.4 with the spec's third row: a present iss is compared even when not
  // advertised. Simple string comparison (RFC 3986 §6.2.1): "https://as.example/" is not
  // "https://as.example". Checked first: a wrong server's error must not be acted on or shown.
  if (issuer) {
    if (*issuer != expected_issuer)
      return local(local_error::issuer_mismatch,
                   "the redirect's iss '" + printable(clip(*issuer, 120)) +
                       "' is not the issuer '" + printable(clip(expected_issuer, 120)) + "'");
  } else if (iss == iss_support::advertised) {
    return local(local_error::issuer_mismatch,
                 "the redirect has no iss though the authorization server advertises "
                 "authorization_response_iss_parameter_supported");
  }

  // The state is not quoted: it is the request's CSRF secret.
  if (!state) return local(local_error::state_mismatch, "the redirect has no state parameter");
  if (expected_state.empty() || *state != expected_state)
    return local(local_error::state_mismatch,
                 "the redirect's state is not the one the authorization request carried");

  if (error)
    return oauth_error{printable(*error), error_description ? printable(*error_description) : "",
                       error_uri ? printable(*error_uri) : "", 0, true};
  if (!code || code->empty())
    return local(local_error::invalid_redirect, "the redirect carries neither code nor error");
  return authorization_code{std::string(*code)};
}

}  // namespace mcpmux::oauth
