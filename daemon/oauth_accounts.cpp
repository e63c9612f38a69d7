#include "daemon/oauth_accounts.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <chrono>
#include <vector>

#include "base/files.hpp"
#include "base/log.hpp"
#include "base/redact.hpp"
#include "base/text.hpp"
#include "core/oauth_store.hpp"
#include "protocol/oauth_discovery.hpp"
#include "protocol/oauth_tokens.hpp"
#include "transports/http_fetch.hpp"
#include "transports/http_text.hpp"
#include "transports/oauth_login_runner.hpp"

namespace mcpmux {
namespace {

using wall = std::chrono::system_clock;
constexpr std::chrono::milliseconds request_timeout{10000};

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(wall::now().time_since_epoch()).count();
}
wall::time_point from_unix(std::int64_t s) {
  return wall::time_point(std::chrono::seconds(s));
}

// Tokens are secrets: never in a log line, a status or an error text.
void redact_tokens(const oauth::token_set& t) {
  add_secret(t.access_token);
  if (t.refresh_token) add_secret(*t.refresh_token);
}

rpc_error bad_params(std::string msg) {
  return {rpc_code::invalid_params, std::move(msg), nullptr};
}

}  // namespace

// One server's login over time. Runs on the io_context thread only.
class oauth_account final : public bearer_source,
                            public std::enable_shared_from_this<oauth_account> {
 public:
  oauth_account(boost::asio::io_context& io, const server_config& cfg, std::string dir,
                std::function<void(const std::string&, oauth_change)> changed)
      : io_(io),
        name_(cfg.name),
        url_(cfg.url),
        ca_file_(cfg.ca_file),
        settings_(cfg.oauth),
        wanted_(cfg.oauth.enabled),
        dir_(std::move(dir)),
        changed_(std::move(changed)),
        log_("oauth " + cfg.name),
        refresh_timer_(io) {
    auto loaded = load_oauth_record(dir_, name_);
    if (const auto* err = loaded.if_error()) {
      store_error_ = err->message;
      log_.warn("{}", err->message);
    } else if (auto& rec = *loaded; rec && rec->resource == url_) {
      wanted_ = true;  // a login was made for this server
      record_ = std::move(*rec);
      std::optional<wall::time_point> expires;
      if (record_.expires_at) expires = from_unix(record_.expires_at);
      if (record_.tokens) redact_tokens(*record_.tokens);
      keeper_ = oauth::token_keeper(record_.tokens, expires);
      schedule_refresh();
    } else if (rec) {
      log_.info("the kept login was for another URL; not used");
    }
    record_.server = name_;
  }

  ~oauth_account() override { refresh_timer_.cancel(); }

  bool same_settings(const server_config& cfg) const {
    return cfg.url == url_ && cfg.ca_file == ca_file_ && cfg.oauth == settings_;
  }

  /// The server wants OAuth: `oauth` set, its 401 said so, or a login is kept for it.
  bool wanted() const { return wanted_; }

  // ---- bearer_source --------------------------------------------------------------------

  std::optional<bearer_verdict> ready() override {
    if (!wanted_) return bearer_verdict{bearer_verdict::send, {}, {}};  // its 401 will tell
    auto v = keeper_.token_for_call(wall::now());
    switch (v.what) {
      case oauth::token_keeper::verdict::send:
        return bearer_verdict{bearer_verdict::send, std::move(v.token), {}};
      case oauth::token_keeper::verdict::wait:
        return std::nullopt;
      case oauth::token_keeper::verdict::unavailable:
        return bearer_verdict{bearer_verdict::refuse, {}, server_says(v.why)};
      case oauth::token_keeper::verdict::needs_login:
        break;
    }
    if (machine()) return std::nullopt;  // fetch() gets a token by itself
    // Never logged in and never refused: ask the server what it wants (its 401 names the scope
    // and where its metadata is), or it may serve some requests without a token.
    if (!challenge_seen_ && !record_.tokens && store_error_.empty())
      return bearer_verdict{bearer_verdict::send, {}, {}};
    return needs_login_verdict();
  }

  void fetch(std::function<void(bearer_verdict)> done) override {
    waiters_.push_back(std::move(done));
    advance();
  }

  void rejected(unsigned status, const std::string& used, const std::string& www_authenticate,
                std::function<void(bearer_verdict)> done) override {
    if (!wanted_) return detect(status, www_authenticate, std::move(done));
    const auto now = wall::now();
    auto challenge = oauth::bearer_challenge(www_authenticate);
    if (challenge) {
      challenge_ = challenge;
      challenge_seen_ = true;
    }
    if (status == 403) {
      if (!challenge || challenge->param("error") != "insufficient_scope")
        return done({bearer_verdict::refuse, {}, {}});  // the server's own error says it
      return step_up(challenge->param("scope"), std::move(done));
    }
    challenge_seen_ = true;  // a 401, with or without a challenge
    if (used.empty() || !record_.tokens) {
      if (machine() && !machine_tried_) {
        waiters_.push_back(std::move(done));
        return advance();
      }
      return done(needs_login_verdict());
    }
    auto v = keeper_.on_unauthorized(used, now);
    save_if_changed();
    switch (v.what) {
      case oauth::token_keeper::verdict::send:
        return done({bearer_verdict::send, std::move(v.token), {}});
      case oauth::token_keeper::verdict::wait:
        waiters_.push_back(std::move(done));
        return advance();
      case oauth::token_keeper::verdict::unavailable:
        return done({bearer_verdict::refuse, {}, server_says(v.why)});
      case oauth::token_keeper::verdict::needs_login:
        log_.warn("{}", v.why);
        if (machine() && !machine_tried_) {
          waiters_.push_back(std::move(done));
          return advance();
        }
        return done(needs_login_verdict());
    }
  }

  void accepted(const std::string& used) override {
    keeper_.on_success(used);
    if (!used.empty()) machine_tried_ = false;
  }

  // ---- control --------------------------------------------------------------------------

  // Starts a login (or says which one is under way). The person's part is the URL.
  json::object login() {
    if (!login_running_) start_login();
    return login_status();
  }

  json::object logout() {
    ++login_generation_;  // a login still under way no longer counts
    login_running_ = false;
    login_url_.clear();
    std::string revocation = "not offered";
    if (record_.tokens && !record_.revocation_endpoint.empty()) {
      revoke(*record_.tokens);
      revocation = "requested";
    }
    keeper_.forget("logged out");
    record_.tokens.reset();
    record_.expires_at = record_.refreshed_at = 0;
    step_up_.clear();
    refresh_timer_.cancel();
    if (auto gone = remove_oauth_record(dir_, name_); !gone) log_.warn("{}", gone.error().message);
    store_error_.clear();
    log_.info("logged out");
    changed_(name_, oauth_change::logged_out);
    return {{"server", name_}, {"logged_in", false}, {"revocation", revocation}};
  }

  json::object status() const {
    json::object s{{"method", machine() ? "client_credentials" : "authorization_code"},
                   {"logged_in", keeper_.logged_in()}};
    std::string state = keeper_.logged_in() ? "logged_in" : "needs_login";
    if (login_running_) state = "login_in_progress";
    if (!step_up_.empty() && !login_running_) state = "needs_step_up";
    s["state"] = state;
    s["scope"] =
        keeper_.tokens() && keeper_.tokens()->scope ? *keeper_.tokens()->scope : record_.scope;
    s["issuer"] = record_.issuer;
    s["expires_at"] = record_.expires_at ? json::value(record_.expires_at) : json::value(nullptr);
    s["refreshed_at"] =
        record_.refreshed_at ? json::value(record_.refreshed_at) : json::value(nullptr);
    std::string err = store_error_;
    if (err.empty() && !keeper_.logged_in() && keeper_.why_not() != "not logged in")
      err = keeper_.why_not();
    if (err.empty()) err = login_error_;
    s["last_error"] = err.empty() ? json::value(nullptr) : json::value(err);
    if (!step_up_.empty()) s["step_up_scope"] = step_up_;
    if (state != "logged_in" && !machine()) s["command"] = "mcpmux auth login " + name_;
    s["login"] = login_status();
    return s;
  }

  json::object login_status() const {
    json::object l{{"id", login_generation_}, {"running", login_running_}};
    if (!login_url_.empty() && login_running_) l["url"] = login_url_;
    if (!login_running_ && login_generation_ > 0)
      l["error"] = login_error_.empty() ? json::value(nullptr) : json::value(login_error_);
    return l;
  }

 private:
  bool machine() const { return settings_.client_credentials; }

  std::string login_command() const { return "run `mcpmux auth login " + name_ + "`"; }

  bearer_verdict needs_login_verdict() const {
    std::string why = "needs login: " + login_command();
    if (!store_error_.empty())
      why += " (" + store_error_ + ")";
    else if (keeper_.why_not() != "not logged in")
      why += " (" + keeper_.why_not() + ")";
    if (machine())
      why = "the client credentials were refused" +
            (login_error_.empty() ? std::string() : " (" + login_error_ + ")") +
            "; when they are right again, run `mcpmux auth login " + name_ + "`";
    if (login_running_ && !login_url_.empty()) why += "; a login is waiting at " + login_url_;
    return {bearer_verdict::needs_login, {}, why};
  }

  std::string server_says(const std::string& why) const { return "OAuth login: " + why; }

  // A server not configured for OAuth asks for a login with a 401 that names its protected
  // resource metadata, or whose metadata is at an RFC 9728 well-known URL; any other refusal is
  // the server's own error (a 403 is about permission, not a login).
  void detect(unsigned status, const std::string& www_authenticate,
              std::function<void(bearer_verdict)> done) {
    if (status != 401) return done({bearer_verdict::refuse, {}, {}});
    auto challenge = oauth::bearer_challenge(www_authenticate);
    if (challenge && !challenge->param("resource_metadata").empty())
      return done(login_wanted(std::move(challenge), "its 401 names its resource metadata"));
    look_for_metadata(oauth::protected_resource_metadata_urls(url_), 0, std::move(challenge),
                      std::move(done));
  }

  // GETs the well-known URLs in turn, until one holds this server's metadata.
  void look_for_metadata(std::vector<std::string> urls, std::size_t at,
                         std::optional<oauth::challenge> challenge,
                         std::function<void(bearer_verdict)> done) {
    if (at == urls.size()) return done({bearer_verdict::refuse, {}, {}});
    fetch_request f;
    f.url = urls[at];
    f.timeout = request_timeout;
    f.ca_file = ca_file_;
    http_fetch(
        io_, std::move(f),
        [weak = weak_from_this(), urls = std::move(urls), at, challenge = std::move(challenge),
         done = std::move(done)](fetch_response r) mutable {
          auto self = weak.lock();
          if (!self) return done({bearer_verdict::refuse, {}, {}});
          if (r.status == 200 && self->describes_this_server(r.body))
            return done(self->login_wanted(std::move(challenge),
                                           "its protected resource metadata is at " + urls[at]));
          self->look_for_metadata(std::move(urls), at + 1, std::move(challenge), std::move(done));
        });
  }

  bool describes_this_server(const std::string& body) const {
    boost::system::error_code ec;
    const auto doc = json::parse(body, ec);
    return !ec && oauth::read_resource_metadata(doc, url_).ok();
  }

  // From now on the server is one of the OAuth servers: it waits for a login like them.
  bearer_verdict login_wanted(std::optional<oauth::challenge> challenge, const std::string& how) {
    if (challenge) challenge_ = std::move(challenge);
    challenge_seen_ = true;
    if (!std::exchange(wanted_, true)) {
      log_.info("the server wants an OAuth login ({})", how);
      changed_(name_, oauth_change::progress);
    }
    return needs_login_verdict();
  }

  // A 403 insufficient_scope: the union of what was asked before and what is challenged. A
  // machine asks for it itself (once); a person is told to log in again. A scope already asked
  // for and still refused is not asked again: that would loop.
  void step_up(const std::string& challenged, std::function<void(bearer_verdict)> done) {
    const std::string had = keeper_.tokens() && keeper_.tokens()->scope
                                ? *keeper_.tokens()->scope + " " + record_.scope
                                : record_.scope;
    if (challenged.empty() || oauth::scope_covers(had, challenged)) {
      return done({bearer_verdict::refuse,
                   {},
                   "MCP server refused the request for want of scope \"" + clip(challenged, 200) +
                       "\", which this login already asked for; not asking again"});
    }
    step_up_ = oauth::step_up_scope(record_.scope, challenged);
    log_.warn("the server asks for more permission (scope \"{}\")", clip(challenged, 200));
    if (machine()) {
      waiters_.push_back(std::move(done));
      if (!login_running_) start_login();
      return;
    }
    changed_(name_, oauth_change::progress);  // status shows it
    done({bearer_verdict::refuse,
          {},
          "needs more permission (scope \"" + clip(step_up_, 200) + "\"): " + login_command() +
              ", then try again"});
  }

  // Moves things along for the waiters: a refresh due, or a machine's login.
  void advance() {
    const auto now = wall::now();
    if (refreshing_ || login_running_) return;
    if (keeper_.start_refresh(now)) return refresh();
    if (machine() && !keeper_.logged_in() && !machine_tried_) {
      machine_tried_ = true;
      return start_login();
    }
    answer_waiters();
  }

  void answer_waiters() {
    for (auto& w : std::exchange(waiters_, {})) {
      auto v = ready();
      if (!v) v = needs_login_verdict();  // nothing more will come of waiting
      w(std::move(*v));
    }
  }

  oauth::client_identity identity() const {
    oauth::client_identity id;
    id.client_id = record_.client_id;
    id.method = oauth::client_auth_named(record_.auth_method).value_or(oauth::client_auth::none);
    if (record_.client && record_.client->client_id == record_.client_id)
      id.client_secret = record_.client->client_secret;
    else
      id.client_secret = read_secret();
    return id;
  }

  std::string read_secret() const {
    if (settings_.client_secret_file.empty()) return {};
    auto text = read_text_file(settings_.client_secret_file, 64 * 1024);
    if (!text) {
      log_.warn("cannot read client_secret_file {}: {}", settings_.client_secret_file,
                text.error().message);
      return {};
    }
    return trim(*text);
  }

  // A form POST to the token or revocation endpoint, the client authenticated in it.
  fetch_request form_post(const std::string& url, oauth::token_http_request req) const {
    fetch_request f;
    f.method = "POST";
    f.url = url;
    f.body = std::move(req.body);
    f.content_type = "application/x-www-form-urlencoded";
    if (!req.authorization.empty()) f.headers = {{"Authorization", req.authorization}};
    f.timeout = request_timeout;
    f.ca_file = ca_file_;
    return f;
  }

  void refresh() {
    if (record_.token_endpoint.empty()) {
      keeper_.on_refresh_failed({"invalid_grant", "no token endpoint kept", {}, 0, false},
                                wall::now());
      save_if_changed();
      return answer_waiters();
    }
    refreshing_ = true;
    auto req = oauth::token_request(
        oauth::refresh_token_grant{keeper_.refresh_token(), {}, record_.resource}, identity());
    http_fetch(io_, form_post(record_.token_endpoint, std::move(req)),
               [weak = weak_from_this(), gen = login_generation_](fetch_response r) {
                 auto self = weak.lock();
                 if (!self) return;
                 self->refreshing_ = false;
                 if (gen != self->login_generation_) return self->answer_waiters();
                 self->on_refreshed(r);
               });
  }

  void on_refreshed(const fetch_response& r) {
    const auto now = wall::now();
    auto got = r.error.empty()
                   ? oauth::read_token_response(r.status, r.body)
                   : std::variant<oauth::token_set, oauth::oauth_error>(
                         oauth::oauth_error{"temporarily_unavailable", r.error, {}, 0, false});
    if (auto* tokens = std::get_if<oauth::token_set>(&got)) {
      redact_tokens(*tokens);
      keeper_.on_tokens(std::move(*tokens), now);
      record_.refreshed_at = unix_now();
      log_.info("token refreshed");
    } else {
      const auto& e = std::get<oauth::oauth_error>(got);
      log_.warn("refreshing the token failed: {}{}", e.error,
                e.error_description.empty() ? "" : " (" + e.error_description + ")");
      keeper_.on_refresh_failed(e, now);
    }
    save_if_changed();
    schedule_refresh();
    answer_waiters();
    if (!keeper_.logged_in()) changed_(name_, oauth_change::progress);
  }

  void schedule_refresh() {
    refresh_timer_.cancel();
    auto due = keeper_.refresh_due();
    if (!due) return;
    const auto wait = std::max<wall::duration>(*due - wall::now(), std::chrono::seconds(0));
    // Rounded up: a timer on the steady clock must not wake before the wall-clock moment.
    refresh_timer_.expires_after(std::chrono::ceil<std::chrono::milliseconds>(wait));
    refresh_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || self->refreshing_) return;
      if (self->keeper_.start_refresh(wall::now()))
        self->refresh();
      else
        self->schedule_refresh();  // woke early, or a refresh is not due after all
    });
  }

  void save_if_changed() {
    if (!keeper_.changed()) return;
    record_.tokens = keeper_.tokens();
    if (auto exp = keeper_.expires())
      record_.expires_at =
          std::chrono::duration_cast<std::chrono::seconds>(exp->time_since_epoch()).count();
    else
      record_.expires_at = 0;
    save();
  }

  void save() {
    if (auto kept = store_oauth_record(dir_, record_); !kept) {
      store_error_ = kept.error().message;
      log_.warn("cannot keep the login: {}", store_error_);
    }
  }

  void start_login() {
    oauth::login_config cfg;
    cfg.server_url = url_;
    cfg.bearer = challenge_;
    cfg.client_id = settings_.client_id;
    cfg.client_secret = read_secret();
    cfg.client_metadata_url = settings_.client_metadata_url;
    if (record_.client) cfg.registered = record_.client;
    cfg.scope = settings_.scope;
    if (!step_up_.empty()) cfg.scope = oauth::step_up_scope(settings_.scope, step_up_);
    cfg.machine = machine();
    cfg.now_unix = unix_now();
    login_run_options run;
    run.ca_file = ca_file_;
    run.redirect_port = settings_.redirect_port;
    run.request_timeout = request_timeout;
    login_running_ = true;
    login_error_.clear();
    login_url_.clear();
    const auto gen = ++login_generation_;
    log_.info("login started");
    changed_(name_, oauth_change::progress);
    run_login(
        io_, std::move(cfg), run,
        [weak = weak_from_this(), gen](const std::string& url) {
          auto self = weak.lock();
          if (!self || gen != self->login_generation_) return;
          self->login_url_ = url;
          self->log_.warn("to log in, open {}", url);
          self->changed_(self->name_, oauth_change::progress);
        },
        [weak = weak_from_this(), gen](login_outcome out) {
          auto self = weak.lock();
          if (self && gen == self->login_generation_) self->on_login(std::move(out));
        });
  }

  void on_login(login_outcome out) {
    login_running_ = false;
    login_url_.clear();
    if (!out.error.empty()) {
      login_error_ = out.error;
      log_.warn("login failed: {}", out.error);
      answer_waiters();
      changed_(name_, oauth_change::progress);
      return;
    }
    record_.resource = url_;
    record_.issuer = out.found.server.issuer;
    record_.grant = machine() ? "client_credentials" : "authorization_code";
    record_.client_id = out.client.client_id;
    record_.auth_method = oauth::auth_method(out.client, out.found.server);
    record_.token_endpoint = out.found.server.token_endpoint;
    record_.revocation_endpoint = out.found.server.revocation_endpoint;
    record_.scope = out.scope;
    // A dynamic registration is kept for the next login; a pre-registered client's secret stays
    // in its own file.
    const bool dynamic = settings_.client_id.empty() && settings_.client_metadata_url.empty();
    if (dynamic) record_.client = out.client;
    record_.refreshed_at = 0;
    store_error_.clear();
    step_up_.clear();
    redact_tokens(out.tokens);
    keeper_.on_tokens(std::move(out.tokens), wall::now());
    save_if_changed();
    schedule_refresh();
    log_.info("logged in{}", record_.scope.empty() ? "" : " (scope \"" + record_.scope + "\")");
    answer_waiters();
    changed_(name_, oauth_change::logged_in);
  }

  void revoke(const oauth::token_set& tokens) {
    const bool refresh = tokens.refresh_token.has_value();
    auto req = oauth::revocation_request(refresh ? *tokens.refresh_token : tokens.access_token,
                                         refresh ? "refresh_token" : "access_token", identity());
    http_fetch(io_, form_post(record_.revocation_endpoint, std::move(req)),
               [weak = weak_from_this()](fetch_response r) {
                 auto self = weak.lock();
                 if (!self) return;
                 if (!r.error.empty())
                   self->log_.warn("revoking the token failed: {}", r.error);
                 else if (r.status >= 300)
                   self->log_.warn("revoking the token: HTTP {}", r.status);
                 else
                   self->log_.info("token revoked");
               });
  }

  boost::asio::io_context& io_;
  std::string name_, url_, ca_file_;
  oauth_settings settings_;
  bool wanted_;  ///< see wanted()
  std::string dir_;
  std::function<void(const std::string&, oauth_change)> changed_;
  logger log_;
  oauth_record record_;
  oauth::token_keeper keeper_;
  std::optional<oauth::challenge> challenge_;
  bool challenge_seen_ = false;
  std::string step_up_;      ///< the scope a 403 asked for, for the next login
  std::string store_error_;  ///< the kept login could not be read or written
  bool refreshing_ = false;
  bool machine_tried_ = false;  ///< a machine login since the last accepted token
  bool login_running_ = false;
  std::uint64_t login_generation_ = 0;
  std::string login_url_, login_error_;
  std::vector<std::function<void(bearer_verdict)>> waiters_;
  boost::asio::steady_timer refresh_timer_;
};

bool oauth_may_apply(const server_config& server) {
  if (server.type == server_type::stdio) return false;
  return server.oauth.enabled || (!server.oauth.opted_out && !server.sends_own_authorization());
}

oauth_accounts::oauth_accounts(boost::asio::io_context& io, std::string store_dir,
                               std::function<void(const std::string&, oauth_change)> changed)
    : io_(io), dir_(std::move(store_dir)), changed_(std::move(changed)) {}

oauth_accounts::~oauth_accounts() = default;

std::shared_ptr<bearer_source> oauth_accounts::bearer_for(const server_config& server) {
  auto& a = accounts_[server.name];
  if (!a || !a->same_settings(server))
    a = std::make_shared<oauth_account>(io_, server, dir_, changed_);
  return a;
}

std::optional<result<json::value>> oauth_accounts::handle(std::string_view method,
                                                          const json::object& params) {
  if (method.rfind("mcpmux/auth/", 0) != 0) return std::nullopt;
  const auto server = string_member(params, "server");
  if (method == "mcpmux/auth/status") {
    json::array servers;
    for (const auto& [name, a] : accounts_) {
      if ((!server.empty() && name != server) || !configured(name) || !a->wanted()) continue;
      auto s = a->status();
      s["server"] = name;
      servers.push_back(std::move(s));
    }
    return json::value(json::object{{"servers", std::move(servers)}});
  }
  if (method != "mcpmux/auth/login" && method != "mcpmux/auth/logout")
    return rpc_error{rpc_code::method_not_found, "Method not found: " + std::string(method),
                     nullptr};
  if (server.empty()) return bad_params("params.server (string) is required");
  auto it = accounts_.find(server);
  if (it == accounts_.end() || !configured(server) || !it->second->wanted())
    return bad_params("no running server named \"" + clip(server, 100) +
                      "\" logs in with OAuth (`oauth` in its [servers." + clip(server, 100) +
                      "] table, or a 401 that asks for a login)");
  if (method == "mcpmux/auth/login") return json::value(it->second->login());
  return json::value(it->second->logout());
}

bool oauth_accounts::configured(const std::string& server) const {
  return !is_configured_ || is_configured_(server);
}

void oauth_accounts::describe(const std::string& server, json::object& entry) const {
  if (auto it = accounts_.find(server);
      it != accounts_.end() && it->second->wanted() && configured(server))
    entry["auth"] = it->second->status();
}

}  // namespace mcpmux
