#include "protocol/oauth_login.hpp"

#include "base/text.hpp"

namespace mcpmux::oauth {

login::login(login_config cfg, login_secrets secrets)
    : cfg_(std::move(cfg)),
      secrets_(std::move(secrets)),
      discovery_(cfg_.server_url, cfg_.bearer) {}

login::step login::start() {
  phase_ = phase::discovering;
  auto s = discovery_.start();
  if (s.what == discovery::step::fetch) return {step::fetch, {"GET", s.url, {}, {}, {}}, {}, {}};
  if (s.what == discovery::step::fail) return fail(s.error);
  return after_discovery();
}

login::step login::on_response(unsigned status, std::string_view body) {
  switch (phase_) {
    case phase::discovering: {
      auto s = discovery_.on_response(status, body);
      if (s.what == discovery::step::fetch)
        return {step::fetch, {"GET", s.url, {}, {}, {}}, {}, {}};
      if (s.what == discovery::step::fail) return fail(s.error);
      return after_discovery();
    }
    case phase::registering: {
      auto r = read_registration_response(status, body, found().server.issuer);
      if (const auto* err = r.if_error()) return fail(err->message);
      client_ = std::move(*r);
      registered_now_ = true;
      return with_client();
    }
    case phase::exchanging: {
      auto t = read_token_response(status, body);
      if (auto* e = std::get_if<oauth_error>(&t)) {
        std::string why = "the token request was refused: " + e->error;
        if (!e->error_description.empty()) why += " (" + e->error_description + ")";
        return fail(why);
      }
      tokens_ = std::move(std::get<token_set>(t));
      phase_ = phase::done;
      return {step::done, {}, {}, {}};
    }
    default:
      return fail("an answer came that no request asked for");
  }
}

login::step login::on_redirect(std::string_view query) {
  if (phase_ != phase::authorizing) return fail("a redirect came that no authorization asked for");
  const auto& server = found().server;
  auto r = read_redirect(
      query, secrets_.state, server.issuer,
      server.iss_parameter_supported ? iss_support::advertised : iss_support::not_advertised);
  if (auto* e = std::get_if<oauth_error>(&r)) {
    std::string why = "the authorization was not granted: " + e->error;
    if (!e->error_description.empty()) why += " (" + e->error_description + ")";
    return fail(why);
  }
  return exchange(authorization_code_grant{std::get<authorization_code>(r).code, cfg_.redirect_uri,
                                           secrets_.code_verifier, resource_});
}

// Discovery is done: what to ask for, and who mcpmux is at this authorization server.
login::step login::after_discovery() {
  const auto& f = found();
  // RFC 8707: the resource is the MCP server as its metadata names it (checked to cover it),
  // else the server URL itself.
  resource_ = f.resource ? f.resource->resource : cfg_.server_url;
  if (const auto hash = resource_.find('#'); hash != std::string::npos) resource_.resize(hash);
  scope_ =
      !cfg_.scope.empty()
          ? cfg_.scope
          : select_scope({cfg_.bearer ? cfg_.bearer->param("scope") : std::string(),
                          f.resource ? f.resource->scopes_supported : std::vector<std::string>{},
                          f.server.scopes_supported});
  const bool preregistered = !cfg_.client_id.empty();
  switch (choose_identity(preregistered,
                          cfg_.machine ? std::string_view() : cfg_.client_metadata_url, f.server)) {
    case identity::preregistered:
      client_ = {f.server.issuer, cfg_.client_id, cfg_.client_secret, 0, {}};
      return with_client();
    case identity::metadata_document:
      client_ = {f.server.issuer, cfg_.client_metadata_url, {}, 0, "none"};
      return with_client();
    case identity::dynamic:
      if (cfg_.registered && usable_with(*cfg_.registered, f.server, cfg_.now_unix)) {
        client_ = *cfg_.registered;  // registered once, reused: never on every start
        return with_client();
      } else {
        registration_params p;
        if (cfg_.machine)
          p.client_credentials_grant = true;
        else
          p.redirect_uris = {cfg_.redirect_uri};
        p.scope = scope_;
        phase_ = phase::registering;
        return {step::fetch,
                {"POST",
                 f.server.registration_endpoint,
                 registration_request(p),
                 "application/json",
                 {}},
                {},
                {}};
      }
    case identity::none:
      break;
  }
  return fail("the authorization server " + f.server.issuer +
              " offers no way to register mcpmux (no registration endpoint, no client ID "
              "metadata documents): register a client there and configure its client_id");
}

// Who mcpmux is is settled: the grant.
login::step login::with_client() {
  if (cfg_.machine) {
    if (client_.client_secret.empty())
      return fail("the client credentials grant needs a client secret");
    return exchange(client_credentials_grant{scope_, resource_});
  }
  if (auto why = refuse_authorization_code(found().server); !why.empty()) return fail(why);
  phase_ = phase::authorizing;
  authorization_request a{
      client_.client_id, cfg_.redirect_uri, secrets_.state, secrets_.code_challenge, scope_,
      resource_};
  return {step::open_browser, {}, authorization_url(found().server.authorization_endpoint, a), {}};
}

login::step login::exchange(token_grant grant) {
  const auto id = identity();
  if (auth_method(client_, found().server).empty())
    return fail("the authorization server " + found().server.issuer +
                " takes none of client_secret_basic, client_secret_post and none at its token "
                "endpoint");
  auto http = token_request(grant, id);
  phase_ = phase::exchanging;
  return {step::fetch,
          {"POST", found().server.token_endpoint, std::move(http.body),
           "application/x-www-form-urlencoded", std::move(http.authorization)},
          {},
          {}};
}

client_identity login::identity() const {
  const auto name = auth_method(client_, found().server);
  return {client_.client_id, client_.client_secret,
          client_auth_named(name).value_or(client_auth::none)};
}

login::step login::fail(std::string why) {
  phase_ = phase::done;
  return {step::fail, {}, {}, clip(why, 400)};
}

}  // namespace mcpmux::oauth
