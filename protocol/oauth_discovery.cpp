#include "protocol/oauth_discovery.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <cctype>

#include "base/text.hpp"

namespace mcpmux::oauth {
namespace {

// host and port of an authority ("[::1]:8080", "Example.com", "h:443").
std::pair<std::string_view, std::string_view> host_port(std::string_view authority) {
  if (authority.starts_with('[')) {
    const auto end = authority.find(']');
    if (end == std::string_view::npos) return {authority, {}};
    auto rest = authority.substr(end + 1);
    return {authority.substr(0, end + 1), rest.starts_with(':') ? rest.substr(1) : rest};
  }
  const auto colon = authority.rfind(':');
  if (colon == std::string_view::npos) return {authority, {}};
  return {authority.substr(0, colon), authority.substr(colon + 1)};
}

std::string_view without_trailing_slash(std::string_view path) {
  while (path.ends_with('/')) path.remove_suffix(1);
  return path;
}

bool is_tchar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A cursor over a WWW-Authenticate value (RFC 9110 §11.6.1 grammar, forgiving).
struct reader {
  std::string_view s;
  std::size_t i = 0;
  bool done() const { return i >= s.size(); }
  char peek() const { return done() ? '\0' : s[i]; }
  void skip_ws() {
    while (!done() && (s[i] == ' ' || s[i] == '\t')) ++i;
  }
  std::string_view token() {
    const auto b = i;
    while (!done() && is_tchar(s[i])) ++i;
    return s.substr(b, i - b);
  }
  std::string quoted() {  // at the opening quote
    std::string out;
    ++i;
    while (!done() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out += s[i++];
    }
    if (!done()) ++i;  // the closing quote
    return out;
  }
  void skip_to_comma() {
    while (!done() && s[i] != ',') ++i;
  }
};

std::vector<std::string> strings_of(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const auto* a = o.if_contains(key); a && a->is_array())
    for (const auto& v : a->get_array())
      if (v.is_string()) out.emplace_back(v.get_string());
  return out;
}

}  // namespace

std::optional<url_parts> split_url(std::string_view url) {
  const auto sep = url.find("://");
  if (sep == std::string_view::npos) return std::nullopt;
  url_parts u;
  u.scheme = lower(url.substr(0, sep));
  if (u.scheme != "http" && u.scheme != "https") return std::nullopt;
  auto rest = url.substr(sep + 3);
  if (const auto hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  const auto end = rest.find_first_of("/?");
  u.authority = std::string(rest.substr(0, end));
  if (u.authority.empty() || u.authority.find('@') != std::string::npos ||
      u.authority.find_first_of(" \t\r\n") != std::string::npos)
    return std::nullopt;
  if (end == std::string_view::npos) return u;
  rest = rest.substr(end);
  const auto q = rest.find('?');
  u.path = std::string(rest.substr(0, q));
  if (q != std::string_view::npos) u.query = std::string(rest.substr(q + 1));
  return u;
}

std::string url_parts::origin() const {
  auto [host, port] = host_port(authority);
  std::string out = scheme + "://" + lower(host);
  const bool default_port =
      (scheme == "https" && port == "443") || (scheme == "http" && port == "80");
  if (!port.empty() && !default_port) out.append(":").append(port);
  return out;
}

bool secure_endpoint(std::string_view url) {
  const auto u = split_url(url);
  if (!u) return false;
  if (u->scheme == "https") return true;
  const auto host = lower(host_port(u->authority).first);
  if (host == "localhost" || host == "[::1]") return true;
  // 127.0.0.0/8, as an address literal (not a name that begins with "127.").
  int parts = 0;
  for (std::size_t i = 0; i < host.size();) {
    const auto dot = std::min(host.find('.', i), host.size());
    const auto part = std::string_view(host).substr(i, dot - i);
    if (part.empty() || part.size() > 3 ||
        !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    ++parts;
    i = dot + 1;
  }
  return parts == 4 && host.starts_with("127.");
}

std::string challenge::param(std::string_view name) const {
  auto it = params.find(lower(name));
  return it == params.end() ? std::string() : it->second;
}

std::vector<challenge> parse_www_authenticate(std::string_view header) {
  std::vector<challenge> out;
  reader r{header};
  while (!r.done()) {
    r.skip_ws();
    if (r.peek() == ',') {
      ++r.i;
      continue;
    }
    const auto scheme = r.token();
    if (scheme.empty()) {  // junk: skip to the next item
      r.skip_to_comma();
      continue;
    }
    challenge c{lower(scheme), {}};
    // Its auth-params, until a comma followed by something that is not "name=" (a new scheme).
    bool after_comma = false;
    for (;;) {
      r.skip_ws();
      const auto mark = r.i;
      const auto name = r.token();
      r.skip_ws();
      if (name.empty() || r.peek() != '=') {
        r.i = mark;
        break;
      }
      ++r.i;
      if (r.peek() == '=') {  // token68 ("abc==") rather than a parameter
        while (r.peek() == '=') ++r.i;
        r.skip_to_comma();
      } else {
        r.skip_ws();
        std::string value = r.peek() == '"' ? r.quoted() : std::string(r.token());
        c.params.emplace(lower(name), std::move(value));
      }
      r.skip_ws();
      if (r.peek() != ',') break;
      ++r.i;
      after_comma = true;
    }
    if (!after_comma && !r.done() && r.peek() != ',') {  // a token68 or junk after the scheme
      const auto before = r.i;
      r.skip_to_comma();
      if (r.i == before && !r.done()) ++r.i;
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<challenge> bearer_challenge(std::string_view header) {
  for (auto& c : parse_www_authenticate(header))
    if (c.scheme == "bearer") return std::move(c);
  return std::nullopt;
}

std::vector<std::string> protected_resource_metadata_urls(std::string_view server_url) {
  const auto u = split_url(server_url);
  if (!u) return {};
  const std::string base = u->scheme + "://" + u->authority;
  const std::string root = base + "/.well-known/oauth-protected-resource";
  const auto path = without_trailing_slash(u->path);
  if (path.empty()) return {root};
  return {root + std::string(path), root};
}

std::vector<std::string> authorization_server_metadata_urls(std::string_view issuer) {
  const auto u = split_url(issuer);
  if (!u) return {};
  const std::string base = u->scheme + "://" + u->authority;
  const auto path = std::string(without_trailing_slash(u->path));
  if (path.empty())
    return {base + "/.well-known/oauth-authorization-server",
            base + "/.well-known/openid-configuration"};
  return {base + "/.well-known/oauth-authorization-server" + path,
          base + "/.well-known/openid-configuration" + path,
          base + path + "/.well-known/openid-configuration"};
}

std::optional<default_endpoints> legacy_endpoints(std::string_view server_url) {
  const auto u = split_url(server_url);
  if (!u) return std::nullopt;
  const std::string base = u->scheme + "://" + u->authority;
  return default_endpoints{base + "/.well-known/oauth-authorization-server", base + "/authorize",
                           base + "/token", base + "/register"};
}

result<resource_metadata> read_resource_metadata(const json::value& doc,
                                                 std::string_view server_url) {
  const auto* o = doc.if_object();
  if (!o) return failure("protected resource metadata is not a JSON object");
  resource_metadata m;
  m.resource = string_member(*o, "resource");
  if (m.resource.empty()) return failure("protected resource metadata has no \"resource\"");
  const auto res = split_url(m.resource);
  const auto srv = split_url(server_url);
  if (!res || !srv)
    return failure("protected resource metadata names a resource that is not an http(s) URL: " +
                   clip(m.resource, 120));
  const auto rp = without_trailing_slash(res->path), sp = without_trailing_slash(srv->path);
  const bool covers = rp.empty() || sp == rp || (sp.starts_with(rp) && sp[rp.size()] == '/');
  if (res->origin() != srv->origin() || !covers)
    return failure("protected resource metadata is for another resource (\"" +
                   clip(m.resource, 120) + "\", not this server's " + clip(server_url, 120) +
                   "): refused");
  m.authorization_servers = strings_of(*o, "authorization_servers");
  if (m.authorization_servers.empty())
    return failure("protected resource metadata lists no authorization_servers");
  m.scopes_supported = strings_of(*o, "scopes_supported");
  return m;
}

result<server_metadata> read_server_metadata(const json::value& doc, std::string_view issuer) {
  const auto* o = doc.if_object();
  if (!o) return failure("authorization server metadata is not a JSON object");
  server_metadata m;
  m.issuer = string_member(*o, "issuer");
  if (m.issuer != issuer)
    return failure("authorization server metadata names issuer \"" + clip(m.issuer, 120) +
                   "\", not the \"" + clip(issuer, 120) + "\" it was fetched for: refused");
  m.authorization_endpoint = string_member(*o, "authorization_endpoint");
  m.token_endpoint = string_member(*o, "token_endpoint");
  m.registration_endpoint = string_member(*o, "registration_endpoint");
  m.revocation_endpoint = string_member(*o, "revocation_endpoint");
  if (m.token_endpoint.empty())
    return failure("authorization server metadata has no token_endpoint");
  for (const auto* e : {&m.authorization_endpoint, &m.token_endpoint, &m.registration_endpoint,
                        &m.revocation_endpoint})
    if (!e->empty() && !secure_endpoint(*e))
      return failure("authorization server endpoint " + clip(*e, 120) +
                     " is neither HTTPS nor loopback: refused");
  m.scopes_supported = strings_of(*o, "scopes_supported");
  m.token_endpoint_auth_methods_supported = strings_of(*o, "token_endpoint_auth_methods_supported");
  m.grant_types_supported = strings_of(*o, "grant_types_supported");
  const auto pkce = strings_of(*o, "code_challenge_methods_supported");
  m.pkce_s256 = std::find(pkce.begin(), pkce.end(), "S256") != pkce.end();
  const auto flag = [&](std::string_view key) {
    const auto* v = o->if_contains(key);
    return v && v->is_bool() && v->get_bool();
  };
  m.client_id_metadata_document_supported = flag("client_id_metadata_document_supported");
  m.iss_parameter_supported = flag("authorization_response_iss_parameter_supported");
  return m;
}

std::string refuse_authorization_code(const server_metadata& m) {
  if (m.authorization_endpoint.empty())
    return "the authorization server has no authorization_endpoint";
  if (!m.pkce_s256)
    return "the authorization server does not offer PKCE S256 (code_challenge_methods_supported): "
           "refused";
  return {};
}

// ---- discovery, step by step ----------------------------------------------------------------

discovery::discovery(std::string server_url, std::optional<challenge> challenge)
    : server_url_(std::move(server_url)), challenge_(std::move(challenge)) {}

discovery::step discovery::start() {
  if (!split_url(server_url_)) return fail("the server URL is not an http(s) URL");
  phase_ = phase::resource;
  at_ = 0;
  urls_.clear();
  // The challenge's resource_metadata first, then the well-known forms (a server whose header
  // points nowhere useful may still serve them).
  if (challenge_)
    if (auto url = challenge_->param("resource_metadata"); split_url(url)) urls_.push_back(url);
  for (auto& u : protected_resource_metadata_urls(server_url_))
    if (std::find(urls_.begin(), urls_.end(), u) == urls_.end()) urls_.push_back(std::move(u));
  return next();
}

discovery::step discovery::next() {
  if (at_ < urls_.size()) return {step::fetch, urls_[at_++], {}};
  switch (phase_) {
    case phase::resource: {  // no protected resource metadata: the 2025-03-26 way
      const auto legacy = legacy_endpoints(server_url_);
      phase_ = phase::legacy_metadata;
      urls_ = {legacy->metadata};
      at_ = 0;
      const auto u = split_url(server_url_);
      issuer_ = u->scheme + "://" + u->authority;
      return next();
    }
    case phase::legacy_metadata: {  // nor metadata: the default endpoints at the origin
      const auto legacy = legacy_endpoints(server_url_);
      result_.defaults = true;
      result_.server.issuer = issuer_;
      result_.server.authorization_endpoint = legacy->authorization;
      result_.server.token_endpoint = legacy->token;
      result_.server.registration_endpoint = legacy->registration;
      result_.server.pkce_s256 = true;  // 2025-03-26 clients assume it (PKCE was required)
      if (!secure_endpoint(legacy->token))
        return fail("the server's default OAuth endpoints are neither HTTPS nor loopback");
      return {step::done, {}, {}};
    }
    case phase::server:
      return fail("no usable authorization server metadata for " + issuer_ +
                  (last_error_.empty() ? std::string() : " (last: " + last_error_ + ")"));
  }
  return fail("discovery lost its way");
}

discovery::step discovery::on_response(unsigned status, std::string_view body) {
  const std::string url = at_ > 0 && at_ <= urls_.size() ? urls_[at_ - 1] : std::string();
  if (status != 200) {
    last_error_ =
        url + ": " + (status == 0 ? std::string("no answer") : "HTTP " + std::to_string(status));
    return next();
  }
  boost::system::error_code ec;
  const auto doc = boost::json::parse(body, ec);
  if (ec) {
    last_error_ = url + ": not JSON";
    return next();
  }
  switch (phase_) {
    case phase::resource: {
      auto r = read_resource_metadata(doc, server_url_);
      if (const auto* err = r.if_error()) return fail(err->message);
      result_.resource = std::move(*r);
      issuer_ = result_.resource->authorization_servers.front();
      phase_ = phase::server;
      urls_ = authorization_server_metadata_urls(issuer_);
      at_ = 0;
      if (urls_.empty())
        return fail("the authorization server \"" + clip(issuer_, 120) +
                    "\" is not an http(s) URL");
      return next();
    }
    case phase::legacy_metadata:
    case phase::server: {
      auto m = read_server_metadata(doc, issuer_);
      if (const auto* err = m.if_error()) return fail(err->message);
      result_.server = std::move(*m);
      return {step::done, {}, {}};
    }
  }
  return fail("discovery lost its way");
}

discovery::step discovery::fail(std::string why) {
  return {step::fail, {}, std::move(why)};
}

}  // namespace mcpmux::oauth
