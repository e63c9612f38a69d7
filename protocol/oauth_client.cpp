#include "protocol/oauth_client.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "base/text.hpp"

namespace mcpmux::oauth {

std::string_view to_string(identity i) {
  switch (i) {
    case identity::preregistered:
      return "pre-registered";
    case identity::metadata_document:
      return "client ID metadata document";
    case identity::dynamic:
      return "dynamic registration";
    case identity::none:
      return "none";
  }
  return "?";
}

bool valid_metadata_document_url(std::string_view url) {
  const auto u = split_url(url);
  return u && u->scheme == "https" && u->path.size() > 1;
}

identity choose_identity(bool preregistered, std::string_view metadata_document_url,
                         const server_metadata& server) {
  if (preregistered) return identity::preregistered;
  if (server.client_id_metadata_document_supported &&
      valid_metadata_document_url(metadata_document_url))
    return identity::metadata_document;
  if (!server.registration_endpoint.empty()) return identity::dynamic;
  return identity::none;
}

std::string registration_request(const registration_params& p) {
  json::object body;
  body["client_name"] = p.client_name;
  if (p.client_credentials_grant) {
    // A machine client: no redirect; it authenticates with its secret.
    body["grant_types"] = json::array{"client_credentials"};
    body["token_endpoint_auth_method"] = "client_secret_basic";
  } else {
    json::array uris;
    for (const auto& u : p.redirect_uris) uris.emplace_back(u);
    body["redirect_uris"] = std::move(uris);
    body["grant_types"] = json::array{"authorization_code", "refresh_token"};
    body["response_types"] = json::array{"code"};
    // A public native client (RFC 8252): the loopback redirect and PKCE protect the code.
    body["token_endpoint_auth_method"] = "none";
    body["application_type"] = "native";
  }
  if (!p.scope.empty()) body["scope"] = p.scope;
  return json::serialize(body);
}

result<client_credentials> read_registration_response(unsigned http_status, std::string_view body,
                                                      std::string_view issuer) {
  boost::system::error_code ec;
  const auto doc = boost::json::parse(body, ec);
  const auto* o = !ec ? doc.if_object() : nullptr;
  const auto text = [&](std::string_view key) {
    return o ? string_member(*o, key) : std::string();
  };
  if (http_status != 200 && http_status != 201) {
    std::string why = "client registration refused: HTTP " + std::to_string(http_status);
    if (auto e = text("error"); !e.empty()) why += ", " + clip(e, 80);
    if (auto d = text("error_description"); !d.empty()) why += ": " + clip(d, 200);
    return failure(why);
  }
  if (!o) return failure("client registration answered with something that is not JSON");
  client_credentials c;
  c.issuer = std::string(issuer);
  c.client_id = text("client_id");
  if (c.client_id.empty()) return failure("client registration answered without a client_id");
  c.client_secret = text("client_secret");
  c.auth_method = text("token_endpoint_auth_method");
  c.secret_expires = int_member(*o, "client_secret_expires_at");
  return c;
}

std::string auth_method(const client_credentials& c, const server_metadata& server) {
  if (c.client_secret.empty()) return "none";
  if (c.auth_method == "client_secret_basic" || c.auth_method == "client_secret_post" ||
      c.auth_method == "none")
    return c.auth_method;
  const auto& offered = server.token_endpoint_auth_methods_supported;
  if (offered.empty()) return "client_secret_basic";
  for (const char* m : {"client_secret_basic", "client_secret_post", "none"})
    if (std::find(offered.begin(), offered.end(), m) != offered.end()) return m;
  return {};
}

bool usable_with(const client_credentials& c, const server_metadata& server,
                 std::int64_t now_unix) {
  if (c.client_id.empty() || c.issuer != server.issuer) return false;
  return c.secret_expires == 0 || c.client_secret.empty() || c.secret_expires > now_unix;
}

}  // namespace mcpmux::oauth
