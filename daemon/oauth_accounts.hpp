// The daemon's OAuth logins: one account per server that may log in (`oauth`, or a remote server
// whose first 401 asks for a login), holding its tokens (token_keeper), keeping them on disk
// (oauth_store), refreshing them in the background before they expire, and running logins
// (oauth_login_runner) when a person asks (`mcpmux auth login`) or, for a machine client, by
// itself. Each account is the bearer_source of its server's HTTP transport; the
// control methods mcpmux/auth/status|login|logout and each server's `auth` status field come
// from here. No secret is logged or shown: status says what a login is, never what it holds.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "config/config.hpp"
#include "core/control.hpp"
#include "transports/bearer.hpp"

namespace boost::asio {
class io_context;
}

namespace mcpmux {

class oauth_account;

/// What happened to a login, for the daemon.
enum class oauth_change {
  progress,    ///< a login started, its URL is known, it failed, or the tokens changed state
  logged_in,   ///< new tokens from a login: a server waiting for them can start
  logged_out,  ///< the tokens were forgotten on request
};

/// Whether `server` may log in with OAuth, so that its HTTP transport gets an account as its
/// bearer source: `oauth` set, or an http/sse server with no `oauth = false` and no
/// Authorization of its own (headers, token_command), whose first 401 then tells (a 401 naming
/// its protected resource metadata, or that metadata at the RFC 9728 well-known URL).
bool oauth_may_apply(const server_config& server);

class oauth_accounts final : public control_extension {
 public:
  /// `changed(server, what)` runs when a login moves (the daemon restarts a server that was
  /// waiting for a login that arrived, and one whose login was ended).
  oauth_accounts(boost::asio::io_context& io, std::string store_dir,
                 std::function<void(const std::string& server, oauth_change what)> changed);
  ~oauth_accounts() override;

  /// The bearer source of a server oauth_may_apply() to: its account, made on first use and
  /// made anew when the server's URL or oauth settings changed (a reload). Until the server
  /// is known to want OAuth (`oauth` set, its 401, a kept login) the account sends no token
  /// and is neither listed nor logged in to.
  std::shared_ptr<bearer_source> bearer_for(const server_config& server);
  /// Which servers oauth_may_apply() to still (after a reload, a removed server's account is
  /// neither listed nor logged in to); unset: every account's.
  void set_configured(std::function<bool(const std::string& server)> is_configured) {
    is_configured_ = std::move(is_configured);
  }

  // control_extension
  std::optional<result<json::value>> handle(std::string_view method,
                                            const json::object& params) override;
  void describe(const std::string& server, json::object& entry) const override;

 private:
  boost::asio::io_context& io_;
  std::string dir_;
  std::function<void(const std::string&, oauth_change)> changed_;
  bool configured(const std::string& server) const;

  std::map<std::string, std::shared_ptr<oauth_account>, std::less<>> accounts_;
  std::function<bool(const std::string&)> is_configured_;
};

}  // namespace mcpmux
