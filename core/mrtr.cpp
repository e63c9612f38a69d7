#include "core/mrtr.hpp"

#include "core/protocol/modern.hpp"
#include "core/protocol/random.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <vector>

#include "core/protocol/error.hpp"

namespace mcpmux {
namespace {

constexpr std::string_view state_prefix = "mcpmux-mrtr.";

std::string random_state() {
  auto id = random_hex(16);
  if (!id) throw std::system_error(errno, std::generic_category(), "getrandom");
  return std::string(state_prefix) + *id;
}

std::string key_of(std::int64_t n) {
  std::string key(1, 'q');  // (not "q" + …: GCC 12 warns a false -Wrestrict there)
  key += std::to_string(n);
  return key;
}

std::optional<std::int64_t> number_of(std::string_view key) {
  if (key.size() < 2 || key[0] != 'q') return std::nullopt;
  std::int64_t n = 0;
  for (char c : key.substr(1)) {
    if (c < '0' || c > '9' || n > (INT64_MAX - 9) / 10) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

bridged_call::bridged_call(mrtr_registry& registry, std::string method, std::string name,
                           json::object capabilities)
    : registry_(registry),
      method_(std::move(method)),
      name_(std::move(name)),
      capabilities_(std::move(capabilities)) {}

void bridged_call::attach(std::weak_ptr<call_sink> sink, json::value client_id) {
  sink_ = std::move(sink);
  client_id_ = std::move(client_id);
}

void bridged_call::bind(std::weak_ptr<upstream> up, std::uint64_t token) {
  up_ = std::move(up);
  token_ = token;
}

void bridged_call::finish(rpc_outcome out) {
  // The server's questions no longer matter once the call has ended.
  for (auto& [n, q] : std::exchange(questions_, {})) q.done({errc::cancelled, std::nullopt});
  auto sink = sink_.lock();
  if (!sink || client_id_.is_null()) {
    held_ = std::move(out);  // parked: the retry gets it
    return;
  }
  sink->call_answered(std::exchange(client_id_, nullptr), method_, std::move(out));
}

void bridged_call::resume(const json::object* responses) {
  if (responses)
    for (const auto& [key, value] : *responses) {
      const auto n = number_of(key);
      auto it = n ? questions_.find(*n) : questions_.end();
      // An answer is a result object; anything else leaves the question open (asked again).
      if (it == questions_.end() || !value.is_object()) continue;
      auto done = std::move(it->second.done);
      questions_.erase(it);
      message answer;
      answer.kind = message_kind::response;
      answer.body["result"] = value;
      done({{}, std::move(answer)});
    }
  if (held_) {
    auto out = std::move(*held_);
    held_.reset();
    return finish(std::move(out));
  }
  if (!questions_.empty()) ask_attached();
}

void bridged_call::abandon(std::string_view why) {
  for (auto& [n, q] : std::exchange(questions_, {})) q.done({errc::cancelled, std::nullopt});
  held_.reset();
  client_id_ = nullptr;
  if (auto up = up_.lock()) up->cancel(token_, std::string(why));
}

void bridged_call::on_progress(const json::object& params) {
  if (client_id_.is_null()) return;  // parked: nobody is waiting to hear of it
  if (auto sink = sink_.lock()) sink->call_progress(params);
}

bool bridged_call::client_supports(std::string_view capability) const {
  return capabilities_.contains(capability) || mcp::has_extension(capabilities_, capability);
}

std::int64_t bridged_call::ask_client(std::string_view method, const json::value& params,
                                      response_handler done) {
  const auto n = next_key_++;
  json::value p = params.is_object() ? params : json::value(json::object{});
  // An input request carries no _meta and no task of its own (2026-07-28 schema).
  p.as_object().erase("_meta");
  p.as_object().erase("task");
  questions_[n] = question{std::string(method), std::move(p), std::move(done)};
  if (!client_id_.is_null()) ask_attached();
  return n;
}

void bridged_call::cancel_ask(std::int64_t id, std::string_view) {
  questions_.erase(id);
}

void bridged_call::ask_attached() {
  auto sink = sink_.lock();
  if (!sink) return abandon("client disconnected");
  json::object requests;
  for (const auto& [n, q] : questions_)
    requests[key_of(n)] = json::object{{"method", q.method}, {"params", q.params}};
  json::object result;
  result["resultType"] = "input_required";
  result["inputRequests"] = std::move(requests);
  result["requestState"] = registry_.park(shared_from_this(), mrtr_registry::clock::now());
  sink->call_needs_input(std::exchange(client_id_, nullptr), std::move(result));
}

std::string mrtr_registry::park(std::shared_ptr<bridged_call> call, clock::time_point now) {
  sweep(now);
  if (parked_.size() >= max_parked) {  // bounded: the call parked longest gives way
    auto oldest = std::min_element(
        parked_.begin(), parked_.end(),
        [](const auto& a, const auto& b) { return a.second.expires < b.second.expires; });
    auto gone = std::move(oldest->second.call);
    parked_.erase(oldest);
    gone->abandon("too many calls waiting for their client's input");
  }
  auto state = random_state();
  parked_[state] = entry{std::move(call), now + ttl_};
  return state;
}

std::shared_ptr<bridged_call> mrtr_registry::take(std::string_view state, clock::time_point now) {
  sweep(now);
  auto it = parked_.find(std::string(state));
  if (it == parked_.end()) return nullptr;
  auto call = std::move(it->second.call);
  parked_.erase(it);
  return call;
}

bool mrtr_registry::ours(std::string_view state) {
  return state.substr(0, state_prefix.size()) == state_prefix;
}

void mrtr_registry::sweep(clock::time_point now) {
  std::vector<std::shared_ptr<bridged_call>> expired;
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (it->second.expires <= now) {
      expired.push_back(std::move(it->second.call));
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& c : expired) c->abandon("the client did not come back with the input it was asked");
}

void mrtr_registry::clear() {
  auto all = std::exchange(parked_, {});
  for (auto& [state, e] : all) e.call->abandon("daemon stopping");
}

}  // namespace mcpmux
