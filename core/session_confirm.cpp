// A session's confirmation stage: a tools/call that `confirm` names is asked about first — an
// elicitation/create to a legacy client, an input_required result to a 2026-07-28 one (through the
// call's own bridge, core/call.cpp) — and runs only when the person accepts. It sits between
// forward building the call and the limits (manager::start_call); a refusal ends the call through
// call::refuse, answered and audited like any other end.
#include <boost/asio/io_context.hpp>

#include <fmt/format.h>

#include "core/confirm.hpp"
#include "core/session.hpp"
#include "core/timer.hpp"

namespace mcpmux {
namespace {

// What a question in flight holds: its deadline and its id on the client's side.
struct pending_confirmation {
  explicit pending_confirmation(boost::asio::io_context& io) : deadline(io) {}
  steady_timer deadline;
  std::int64_t asked = 0;
};

std::string seconds(std::chrono::milliseconds t) {
  return fmt::format("{:g} s", static_cast<double>(t.count()) / 1000);
}

}  // namespace

bool session::confirm_first(const std::shared_ptr<call>& c, const std::shared_ptr<upstream>& up) {
  if (c->method() != "tools/call" || allowed_.count(c->exposed())) return false;
  // A profile's own list, else the daemon's; read at each call, so a reload applies at once.
  const auto* v = profile_.empty() ? nullptr : manager_.profile(profile_);
  const bool profile_rules = v && v->settings.confirm;
  const auto* rules =
      profile_rules ? &*v->settings.confirm : &manager_.current_config().daemon.confirm;
  if (rules->empty()) return false;
  const auto rule = confirm_rule_for(*rules, c->exposed(), find_tool(up->tools(), c->tool()));
  if (!rule) return false;
  // (Its words made only for a call it names.)
  const std::string key = profile_rules ? fmt::format("confirm in [profiles.{}]", profile_)
                                        : std::string("confirm in [daemon]");
  const auto& exposed = c->exposed();
  if (!c->client_supports("elicitation")) {
    log_.info("refused {}: {} asks for a confirmation and the client cannot ask one", exposed, key);
    c->refuse(fmt::format("Not run: {} needs a person's confirmation (\"{}\" of {} names it), and "
                          "this client cannot ask for one (it did not declare the elicitation "
                          "capability). Remove it from {} to let it run without asking.",
                          exposed, *rule, key, key),
              "refused");
    return true;
  }
  auto pending = std::make_shared<pending_confirmation>(manager_.io());
  c->on_cancel([pending](call& cancelled) {
    pending->deadline.cancel();
    cancelled.cancel_ask(pending->asked, "the call was cancelled");
  });
  const auto timeout = up->timeout();
  const auto* args = c->params().as_object().if_contains("arguments");
  pending->asked = c->ask_before_forwarding(
      "elicitation/create", confirm_question(exposed, args ? *args : json::value()),
      [self = weak_from_this(), c, up, pending, key](rpc_outcome out) {
        pending->deadline.cancel();
        c->on_cancel({});
        if (c->finished()) return;  // cancelled, or timed out meanwhile
        const auto& name = c->exposed();
        switch (read_confirm_answer(out)) {
          case confirm_answer::allow_for_session:
            if (auto s = self.lock()) s->allowed_.insert(name);
            [[fallthrough]];
          case confirm_answer::allow:
            c->restart_clock();
            // On through the limits, as a call that needed no confirmation goes.
            if (auto s = self.lock()) return s->manager_.start_call(c, up, s->profile_);
            return c->cancel("its client left");
          case confirm_answer::declined:
            return c->refuse(
                fmt::format("Not run: the person declined the call of {} ({}).", name, key),
                "declined");
          case confirm_answer::cancelled:
            return c->refuse(fmt::format("Not run: the confirmation of {} was cancelled, so the "
                                         "call did not run ({}).",
                                         name, key),
                             "declined");
        }
      });
  if (timeout.count() > 0 && !c->finished()) {
    pending->deadline.expires_after(timeout);
    pending->deadline.async_wait([c, pending, timeout](boost::system::error_code ec) {
      if (ec || c->finished()) return;
      c->on_cancel({});
      c->cancel_ask(pending->asked, "nobody answered in time");
      c->refuse(fmt::format("Not run: nobody answered the confirmation of {} within {}.",
                            c->exposed(), seconds(timeout)),
                "timeout");
    });
  }
  return true;
}

}  // namespace mcpmux
