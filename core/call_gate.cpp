// The call gate: each call through its profile's and its server's limiters, waiting on a timer.
#include "core/call_gate.hpp"

#include <fmt/format.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "core/call.hpp"
#include "core/call_limiter.hpp"
#include "core/timer.hpp"

namespace mcpmux {
namespace asio = boost::asio;

// One set of limits and the calls waiting for it.
struct call_gate::stage : std::enable_shared_from_this<stage> {
  stage(asio::io_context& io, std::string scope, limits l)
      : io(io), scope(std::move(scope)), lim(l), limiter(l.per_minute, l.concurrent), timer(io) {}

  struct waiter {
    std::shared_ptr<call> c;
    std::function<void()> go;
    std::string why;  ///< the message when it runs out of time (the limit filled in)
  };

  asio::io_context& io;
  std::string scope;  ///< `servers.NAME` or `profiles.NAME`
  limits lim;
  call_limiter limiter;
  steady_timer timer;
  std::map<std::uint64_t, waiter> waiting;
  std::uint64_t next_token = 1;

  // A place in flight, given back when the call ends (call::hold drops it). The waiting calls
  // are looked at on the next turn: never inside another call's end.
  std::shared_ptr<void> place() {
    return std::shared_ptr<void>(nullptr, [weak = weak_from_this()](void*) {
      auto self = weak.lock();
      if (!self) return;
      self->limiter.ended();
      asio::post(self->io, [weak] {
        if (auto s = weak.lock()) s->resume();
      });
    });
  }

  void resume() {
    // A call its caller cancelled while it waited gives up its turn.
    for (auto it = waiting.begin(); it != waiting.end();)
      if (it->second.c->finished()) {
        limiter.leave(it->first);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    const auto now = steady_clock::now();
    auto step = limiter.resume(now);
    for (auto token : step.started) {
      auto w = std::move(waiting.at(token));
      waiting.erase(token);
      w.c->hold(place());
      w.go();
    }
    for (const auto& e : step.expired) {
      auto w = std::move(waiting.at(e.token));
      waiting.erase(e.token);
      w.c->finish(refusal(w.c->method(), fmt::format(fmt::runtime(w.why), config_key(e.by))));
    }
    arm(now);
  }

  void arm(steady_clock::time_point now) {
    const auto at = limiter.next_wake(now);
    if (!at) return static_cast<void>(timer.cancel());
    timer.expires_at(*at);
    timer.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
      if (ec) return;
      if (auto s = weak.lock()) s->resume();
    });
  }
};

call_gate::call_gate(asio::io_context& io) : io_(io) {}
call_gate::~call_gate() = default;

std::size_t call_gate::waiting() const {
  std::size_t n = 0;
  for (const auto& [key, s] : stages_) n += s->waiting.size();
  return n;
}

std::shared_ptr<call_gate::stage> call_gate::stage_for(const std::string& key, std::string scope,
                                                       limits l) {
  std::erase_if(retired_, [](const auto& r) { return r->waiting.empty(); });
  auto& s = stages_[key];
  if (s && !(s->lim == l) && !s->waiting.empty()) retired_.push_back(s);
  if (!s || !(s->lim == l)) s = std::make_shared<stage>(io_, std::move(scope), l);
  return s;
}

void call_gate::admit(std::shared_ptr<call> c, const route& r, start_fn start, count_fn count) {
  // The profile first: a call its profile holds back takes no place of the server's.
  auto to_server = [this, c, r, start = std::move(start), count]() mutable {
    if (!r.server_limits.any()) return start(std::move(c));
    pass(
        c, stage_for("servers." + r.server, "servers." + r.server, r.server_limits),
        [c, start = std::move(start)] { start(c); }, r.timeout, count);
  };
  if (r.profile.empty() || !r.profile_limits.any()) return to_server();
  pass(c, stage_for("profiles." + r.profile, "profiles." + r.profile, r.profile_limits),
       std::move(to_server), r.timeout,
       [count](std::string_view limit) { count("profile." + std::string(limit)); });
}

void call_gate::pass(std::shared_ptr<call> c, std::shared_ptr<stage> s, std::function<void()> next,
                     std::chrono::milliseconds timeout, const count_fn& count) {
  const auto now = steady_clock::now();
  const auto token = s->next_token++;
  std::optional<steady_clock::time_point> deadline;
  if (timeout.count() > 0) deadline = now + timeout;
  const auto by = s->limiter.arrive(token, now, deadline);
  if (by == call_limiter::limit::none) {
    c->hold(s->place());
    return next();
  }
  count(config_key(by));
  const bool server = s->scope.starts_with("servers.");
  const auto& l = s->lim;
  // The message's limit is filled in when the wait ends ({}): the one that held it last.
  auto why = fmt::format(
      "mcpmux did not send this call: {} \"{}\" allows {} and the call waited its whole timeout "
      "({} ms) for a turn (limit: {{}} in [{}]). Wait before calling again, or raise the limit.",
      server ? "server" : "profile", s->scope.substr(s->scope.find('.') + 1),
      l.per_minute && l.concurrent
          ? fmt::format("{} calls a minute and {} at once", l.per_minute, l.concurrent)
      : l.per_minute ? fmt::format("{} calls a minute", l.per_minute)
                     : fmt::format("{} calls at once", l.concurrent),
      timeout.count(), s->scope);
  s->waiting.emplace(token, stage::waiter{std::move(c), std::move(next), std::move(why)});
  s->arm(now);
}

}  // namespace mcpmux
