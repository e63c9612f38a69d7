// `mcpmux auth login|status|logout`: OAuth logins of remote servers, held by the daemon. The
// login runs in the daemon (its loopback listener takes the redirect, the tokens go straight to
// the server that needs them); this command starts it, shows the person the URL, opens the
// desktop's browser when there is one, and waits until the daemon says how it ended.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <thread>

#include "daemon/cli/browser.hpp"
#include "daemon/cli/commands.hpp"
#include "daemon/cli/table.hpp"

namespace mcpmux::cli {
namespace {

// How long `auth login` waits for the person, past the daemon's own limit (5 minutes).
constexpr auto login_wait = std::chrono::minutes(6);
constexpr auto poll_every = std::chrono::milliseconds(100);

const json::value* server_auth(const json::value& answer, const std::string& server) {
  const auto* servers = member(answer, "servers");
  if (!servers || !servers->is_array()) return nullptr;
  for (const auto& s : servers->get_array())
    if (member_string(s, "server") == std::string_view(server)) return &s;
  return nullptr;
}

std::string unix_time(const json::value& v, std::string_view key) {
  auto t = member_int(v, key);
  if (!t || *t <= 0) return "-";
  const std::time_t tt = static_cast<std::time_t>(*t);
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", &tm);
  return buf;
}

outcome<exit_status> auth_login(daemon_client& client, const command_args& args) {
  const std::string& server = args.target;
  auto started = client.request("mcpmux/auth/login", {{"server", server}});
  if (!started) return started.error();
  const auto id = member_int(*started, "id").value_or(0);
  const auto deadline = std::chrono::steady_clock::now() + login_wait;
  bool shown = false;
  pid_t browser = -1;
  for (;;) {
    auto answer = client.request("mcpmux/auth/status", {{"server", server}});
    if (!answer) return answer.error();
    const auto* a = server_auth(*answer, server);
    const auto* login = a ? member(*a, "login") : nullptr;
    if (!login || member_int(*login, "id").value_or(-1) != id)
      return fail("the login of '" + server + "' was replaced by another one");
    const auto* running = member(*login, "running");
    if (running && running->is_bool() && !running->get_bool()) {
      if (browser > 0) ::waitpid(browser, nullptr, WNOHANG);
      if (auto err = member_string(*login, "error"))
        return fail("logging in to '" + server + "' failed: " + one_line(*err, false));
      auto scope = member_string(*a, "scope").value_or("");
      print_visible(stdout, "logged in to '{}'{}\n", server,
                    scope.empty() ? std::string() : " (scope \"" + one_line(scope, true) + "\")");
      return exit_status::ok;
    }
    if (auto url = member_string(*login, "url"); url && !shown) {
      shown = true;
      print_visible(stdout, "To log in to '{}', open this URL in a browser:\n\n  {}\n\n", server,
                    one_line(*url, true));
      if (auto prog = opener(); prog && !args.no_browser) {
        browser = open_url(*prog, std::string(*url));
        if (browser < 0)
          print_visible(stdout, "(could not start {}; open the URL yourself)\n", *prog);
      }
      fmt::print(
          "Waiting for the authorization (up to 5 minutes; Ctrl-C stops waiting, not the "
          "login)...\n");
      std::fflush(stdout);
    }
    if (std::chrono::steady_clock::now() > deadline)
      return fail("no answer from the login of '" + server + "' in time");
    std::this_thread::sleep_for(poll_every);
  }
}

outcome<exit_status> auth_status(daemon_client& client, const command_args& args) {
  json::object params;
  if (!args.target.empty()) params["server"] = args.target;
  auto answer = client.request("mcpmux/auth/status", std::move(params));
  if (!answer) return answer.error();
  if (args.json) {
    print_pretty(*answer);
    return exit_status::ok;
  }
  const auto* servers = member(*answer, "servers");
  if (!servers || !servers->is_array()) return fail("unexpected answer to mcpmux/auth/status");
  if (servers->get_array().empty()) {
    fmt::print("no server logs in with OAuth\n");
    return exit_status::ok;
  }
  static const column columns[] = {
      {"SERVER", 20},
      {"METHOD", 18},
      {"STATE", 18},
      {"SCOPE", 24},
      {"EXPIRES", 16},
      {"REFRESHED", 16},
      {"LAST ERROR / TO DO", 0},
  };
  std::vector<std::vector<cell>> rows;
  for (const auto& s : servers->get_array()) {
    std::string todo = text_or_dash(s, "last_error", false);
    if (auto cmd = member_string(s, "command")) todo = "run `" + std::string(*cmd) + "`";
    rows.push_back({{text_or_dash(s, "server", true), {}},
                    {text_or_dash(s, "method", true), {}},
                    {text_or_dash(s, "state", true), {}},
                    {text_or_dash(s, "scope", true), {}},
                    {unix_time(s, "expires_at"), {}},
                    {unix_time(s, "refreshed_at"), {}},
                    {std::move(todo), {}}});
  }
  print_table(columns, rows, 160);
  return exit_status::ok;
}

outcome<exit_status> auth_logout(daemon_client& client, const command_args& args) {
  auto answer = client.request("mcpmux/auth/logout", {{"server", args.target}});
  if (!answer) return answer.error();
  auto revocation = member_string(*answer, "revocation").value_or("not offered");
  print_visible(stdout, "logged out of '{}' (token revocation: {})\n", args.target, revocation);
  return exit_status::ok;
}

}  // namespace

outcome<exit_status> run_auth(const context& ctx, const command_args& args) {
  if (args.action != "status" && args.target.empty())
    return failure{exit_status::usage, "auth " + args.action + " needs a SERVER"};
  auto client = open_client(ctx);
  if (!client) return client.error();
  if (args.action == "login") return auth_login(*client, args);
  if (args.action == "logout") return auth_logout(*client, args);
  return auth_status(*client, args);
}

}  // namespace mcpmux::cli
