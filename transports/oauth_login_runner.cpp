#include "transports/oauth_login_runner.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>

#include "transports/http_fetch.hpp"
#include "transports/oauth_crypto.hpp"
#include "transports/oauth_redirect.hpp"

namespace mcpmux {
namespace {

struct run : std::enable_shared_from_this<run> {
  run(boost::asio::io_context& i, login_run_options o, std::function<void(const std::string&)> u,
      std::function<void(login_outcome)> d)
      : io(i), opt(std::move(o)), open_url(std::move(u)), done(std::move(d)), person(i) {}

  boost::asio::io_context& io;
  login_run_options opt;
  std::function<void(const std::string&)> open_url;
  std::function<void(login_outcome)> done;
  std::optional<oauth::login> machine;
  std::shared_ptr<redirect_listener> listener;
  boost::asio::steady_timer person;
  bool finished = false;

  void perform(oauth::login::step s) {
    if (finished) return;
    switch (s.what) {
      case oauth::login::step::fetch: {
        fetch_request req;
        req.method = s.http.method;
        req.url = s.http.url;
        req.body = std::move(s.http.body);
        req.content_type = s.http.content_type;
        if (!s.http.authorization.empty()) req.headers = {{"Authorization", s.http.authorization}};
        req.timeout = opt.request_timeout;
        req.ca_file = opt.ca_file;
        http_fetch(io, std::move(req), [self = shared_from_this()](fetch_response r) {
          if (self->finished) return;
          self->perform(self->machine->on_response(r.error.empty() ? r.status : 0, r.body));
        });
        return;
      }
      case oauth::login::step::open_browser:
        person.expires_after(opt.person_timeout);
        person.async_wait([self = shared_from_this()](boost::system::error_code ec) {
          if (!ec) self->finish("nobody completed the login in the browser in time");
        });
        open_url(s.url);
        return;
      case oauth::login::step::done:
        return finish({});
      case oauth::login::step::fail:
        return finish(std::move(s.error));
    }
  }

  // The redirect reached the listener: what the page says is what the machine concludes.
  std::string on_redirect(std::string_view query) {
    if (finished) return "This login is over; start a new one with mcpmux auth login.";
    person.cancel();
    auto s = machine->on_redirect(query);
    if (s.what == oauth::login::step::fail) {
      const auto why = s.error;
      // Answered first, then ended (the listener closes after this page).
      boost::asio::post(io, [self = shared_from_this(), s = std::move(s)]() mutable {
        self->perform(std::move(s));
      });
      return "The login failed: " + why;
    }
    boost::asio::post(io, [self = shared_from_this(), s = std::move(s)]() mutable {
      self->perform(std::move(s));
    });
    return "mcpmux received the authorization. You can close this window.";
  }

  void finish(std::string error) {
    if (finished) return;
    finished = true;
    person.cancel();
    if (listener) listener->close();
    login_outcome out;
    out.error = std::move(error);
    if (out.error.empty() && machine) {
      out.found = machine->found();
      out.client = machine->client();
      out.registered_now = machine->registered_now();
      out.tokens = machine->tokens();
      out.scope = machine->scope();
      out.resource = machine->resource();
    }
    auto d = std::move(done);
    d(std::move(out));
  }
};

}  // namespace

void run_login(boost::asio::io_context& io, oauth::login_config cfg, login_run_options options,
               std::function<void(const std::string& url)> open_url,
               std::function<void(login_outcome)> done) {
  auto r = std::make_shared<run>(io, std::move(options), std::move(open_url), std::move(done));
  // A failure is told on the loop's next turn, as every outcome is: never from inside run_login.
  const auto fail = [&](const rpc_error& e) {
    boost::asio::post(io, [r, error = e.message] { r->finish(error); });
  };
  auto secrets = make_login_secrets();
  if (!secrets) return fail(secrets.error());
  if (!cfg.machine) {
    std::weak_ptr<run> weak = r;
    auto listener = start_redirect_listener(
        io, "/callback",
        [weak](std::string_view query) {
          auto self = weak.lock();
          return self ? self->on_redirect(query) : std::string("This login is over.");
        },
        static_cast<unsigned short>(r->opt.redirect_port));
    if (!listener) return fail(listener.error());
    r->listener = std::move(*listener);
    cfg.redirect_uri = r->listener->redirect_uri();
  }
  r->machine.emplace(std::move(cfg), std::move(*secrets));
  boost::asio::post(io, [r] { r->perform(r->machine->start()); });
}

}  // namespace mcpmux
