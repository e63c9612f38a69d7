#include "daemon/channels.hpp"

#include "daemon/oauth_accounts.hpp"
#include "daemon/sandboxes.hpp"
#include "transports/http_transport.hpp"
#include "transports/stdio_transport.hpp"

namespace mcpmux {

channel_factory make_channel_factory(boost::asio::io_context& io, oauth_accounts& logins,
                                     server_sandboxes& sandboxes,
                                     std::shared_ptr<write_batch> batch) {
  return [&io, &logins, &sandboxes,
          batch = std::move(batch)](const channel_request& req) -> result<opened_channel> {
    const auto& cfg = req.server;
    if (cfg.type != server_type::stdio) {
      http_transport_options opt;
      opt.type = cfg.type == server_type::sse ? http_transport_options::kind::legacy_sse
                                              : http_transport_options::kind::streamable_http;
      opt.url = cfg.url;
      opt.headers = cfg.headers;
      opt.ca_file = cfg.ca_file;
      if (!cfg.token_command.empty())
        opt.bearer = make_command_bearer(io, cfg.token_command, req.timeout);
      else if (oauth_may_apply(cfg))  // `oauth`, or a 401 may ask for a login
        opt.bearer = logins.bearer_for(cfg);
      opt.timeout = req.timeout;
      opt.limits = req.limits;
      opt.server_name = cfg.name;
      channel_traits traits;
      traits.legacy_only = cfg.type == server_type::sse;
      traits.param_headers = cfg.type == server_type::http;
      traits.endpoint = to_string(cfg.type);
      return opened_channel{make_http_transport(io, std::move(opt)), -1, std::move(traits)};
    }
    channel_traits traits;
    traits.exit_on_probe_means_legacy = true;
    traits.lists_shared = true;
    auto start = sandboxes.prepare(cfg);
    if (!start) return start.error();
    stdio_options opt;
    opt.command = std::move(start->command);
    opt.args = std::move(start->args);
    opt.env = cfg.env;
    opt.cwd = cfg.cwd;
    opt.limits = req.limits;
    opt.on_stderr = req.on_stderr;
    opt.batch = batch;
    opt.describe_exit = std::move(start->describe_exit);
    auto spawned = spawn_stdio(io, opt);
    if (!spawned) return spawned.error();
    return opened_channel{std::move(spawned->channel), spawned->pid, std::move(traits)};
  };
}

}  // namespace mcpmux
