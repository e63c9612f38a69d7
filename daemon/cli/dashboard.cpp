// `mcpmux dashboard`: a one-time login link to the page the daemon serves on its HTTP endpoint,
// printed, and opened in the desktop's browser when there is one.
#include "daemon/cli/browser.hpp"
#include "daemon/cli/commands.hpp"
#include "daemon/cli/table.hpp"

namespace mcpmux::cli {

outcome<exit_status> run_dashboard(const context& ctx, const command_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  auto answer = client->request("mcpmux/dashboard/login", json::object{});
  if (!answer) return answer.error();
  const auto url = member_string(*answer, "url");
  if (!url) return unexpected_answer("mcpmux/dashboard/login");
  if (args.json) {
    print_pretty(*answer);
    return exit_status::ok;
  }
  print_visible(stdout, "{}\n", *url);
  fmt::print(stderr, "a login link for one browser, good once within 2 minutes\n");
  if (auto prog = opener(); prog && !args.no_browser)
    if (open_url(*prog, std::string(*url)) < 0)
      print_visible(stderr, "could not start {}; open the link yourself\n", *prog);
  return exit_status::ok;
}

}  // namespace mcpmux::cli
