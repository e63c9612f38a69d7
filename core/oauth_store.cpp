#include "core/oauth_store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/files.hpp"
#include "config/config.hpp"

namespace mcpmux {
namespace {

constexpr std::size_t max_record_bytes = 1 << 20;
constexpr std::int64_t record_format = 1;

std::string path_of(const std::string& dir, const std::string& server) {
  return dir + "/" + server + ".json";  // server names are [A-Za-z0-9_-]
}

}  // namespace

std::string oauth_dir() {
  return state_dir() + "/oauth";
}

namespace {
result<std::optional<oauth_record>> refused(std::string why) {
  return result<std::optional<oauth_record>>::fail(std::move(why));
}
}  // namespace

result<std::optional<oauth_record>> load_oauth_record(const std::string& dir,
                                                      const std::string& server) {
  const auto path = path_of(dir, server);
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return std::optional<oauth_record>{};
    return refused(path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) return refused(path + ": not a regular file; refused");
  if (st.st_uid != ::getuid()) return refused(path + ": owned by another user; refused");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return refused(path + ": readable or writable by others (mode " + mode +
                   "); its tokens may have leaked: log in again (the file is not used)");
  }
  auto body = read_text_file(path, max_record_bytes);
  if (!body) return refused(path + ": " + body.error().message);
  boost::system::error_code ec;
  const auto doc = boost::json::parse(*body, ec);
  const auto* o = !ec ? doc.if_object() : nullptr;
  if (!o || int_member(*o, "format") != record_format)
    return refused(path + ": not a login record; ignored");
  oauth_record r;
  r.server = server;
  r.resource = string_member(*o, "resource");
  r.issuer = string_member(*o, "issuer");
  if (const auto* c = o->if_contains("client"); c && c->is_object()) {
    const auto& co = c->get_object();
    oauth::client_credentials cc;
    cc.issuer = r.issuer;
    cc.client_id = string_member(co, "client_id");
    cc.client_secret = string_member(co, "client_secret");
    cc.secret_expires = int_member(co, "client_secret_expires_at");
    cc.auth_method = string_member(co, "token_endpoint_auth_method");
    if (!cc.client_id.empty()) r.client = std::move(cc);
  }
  if (const auto* t = o->if_contains("tokens"); t && t->is_object()) {
    const auto& to = t->get_object();
    oauth::token_set ts;
    ts.access_token = string_member(to, "access_token");
    if (auto rt = string_member(to, "refresh_token"); !rt.empty()) ts.refresh_token = std::move(rt);
    if (auto sc = string_member(to, "scope"); !sc.empty()) ts.scope = std::move(sc);
    if (!ts.access_token.empty()) r.tokens = std::move(ts);
    r.expires_at = int_member(to, "expires_at");
  }
  r.refreshed_at = int_member(*o, "refreshed_at");
  r.grant = string_member(*o, "grant");
  r.client_id = string_member(*o, "client_id");
  r.auth_method = string_member(*o, "token_endpoint_auth_method");
  r.token_endpoint = string_member(*o, "token_endpoint");
  r.revocation_endpoint = string_member(*o, "revocation_endpoint");
  r.scope = string_member(*o, "scope");
  return std::optional<oauth_record>(std::move(r));
}

result<> store_oauth_record(const std::string& dir, const oauth_record& r) {
  if (auto made = make_dirs(dir, 0700); !made) return made;
  json::object o{{"format", record_format},
                 {"server", r.server},
                 {"resource", r.resource},
                 {"issuer", r.issuer},
                 {"refreshed_at", r.refreshed_at},
                 {"grant", r.grant},
                 {"client_id", r.client_id},
                 {"token_endpoint_auth_method", r.auth_method},
                 {"token_endpoint", r.token_endpoint},
                 {"revocation_endpoint", r.revocation_endpoint},
                 {"scope", r.scope}};
  if (r.client) {
    json::object c{{"client_id", r.client->client_id}};
    if (!r.client->client_secret.empty()) c["client_secret"] = r.client->client_secret;
    if (r.client->secret_expires) c["client_secret_expires_at"] = r.client->secret_expires;
    if (!r.client->auth_method.empty()) c["token_endpoint_auth_method"] = r.client->auth_method;
    o["client"] = std::move(c);
  }
  if (r.tokens) {
    json::object t{{"access_token", r.tokens->access_token}, {"expires_at", r.expires_at}};
    if (r.tokens->refresh_token) t["refresh_token"] = *r.tokens->refresh_token;
    if (r.tokens->scope) t["scope"] = *r.tokens->scope;
    o["tokens"] = std::move(t);
  }
  const auto path = path_of(dir, r.server);
  // A file someone loosened is replaced by a private one, not written in place with its mode.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0) ::unlink(path.c_str());
  if (auto written = write_file_atomically(path, json::serialize(o)); !written) return written;
  if (::chmod(path.c_str(), 0600) != 0) return result<>::fail(path + ": " + std::strerror(errno));
  return {};
}

result<> remove_oauth_record(const std::string& dir, const std::string& server) {
  const auto path = path_of(dir, server);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return result<>::fail(path + ": " + std::strerror(errno));
  return {};
}

}  // namespace mcpmux
