// `mcpmux history`: the daemon's audit log — calls, reads and spawns, newest last.
#include <ctime>

#include "base/clock.hpp"
#include "daemon/cli/commands.hpp"
#include "daemon/cli/table.hpp"

namespace mcpmux::cli {
namespace {

// "90s", "15m", "1h", "2d" → milliseconds; nothing when it is not such a duration.
std::optional<std::int64_t> parse_age(const std::string& s) {
  if (s.size() < 2) return std::nullopt;
  std::int64_t n = 0;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9' || n > 1000000000) return std::nullopt;
    n = n * 10 + (s[i] - '0');
  }
  switch (s.back()) {
    case 's':
      return n * 1000;
    case 'm':
      return n * 60000;
    case 'h':
      return n * 3600000;
    case 'd':
      return n * 86400000;
  }
  return std::nullopt;
}

std::string local_time(std::int64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace

outcome<exit_status> run_history(const context& ctx, const command_args& args) {
  json::object params{{"limit", args.lines}};
  if (args.server) params["server"] = *args.server;
  if (!args.target.empty()) params["tool"] = args.target;
  if (args.run) params["run"] = *args.run;
  if (args.since) {
    auto age = parse_age(*args.since);
    if (!age)
      return failure{
          exit_status::usage,
          "--since wants a duration such as 90s, 15m, 1h or 2d (got \"" + *args.since + "\")"};
    params["since_ms"] = std::max<std::int64_t>(0, unix_now_ms() - *age);
  }
  auto client = open_client(ctx);
  if (!client) return client.error();
  auto answer = client->request("mcpmux/history", std::move(params));
  if (!answer) return answer.error();
  const json::value* entries = member(*answer, "entries");
  if (entries == nullptr || !entries->is_array()) return unexpected_answer("mcpmux/history");
  if (args.json) {
    print_pretty(*entries);
    return exit_status::ok;
  }
  if (const auto* on = member(*answer, "enabled"); on && on->is_bool() && !on->get_bool())
    fmt::print(stderr, "the audit log is off ([daemon] audit = false)\n");
  static constexpr column columns[] = {
      {"TIME", 19},
      {"KIND", 14},
      {"SERVER", 16},
      {"NAME", 32},
      {"OUTCOME", 10},
      {"MS", 8, align::right},
      {"BYTES", 9, align::right},
      {"REDACTED", 16},
      {"RUN", 9},
      {"CLIENT", 0},
  };
  std::vector<std::vector<cell>> rows;
  for (const json::value& e : entries->get_array()) {
    const auto time = member_int(e, "time_ms");
    const auto us = member_int(e, "duration_us");
    const auto bytes = member_int(e, "response_bytes");
    const bool spawn = member_string(e, "kind") == std::string_view("spawn");
    rows.push_back({
        {time ? local_time(*time) : "-", {}},
        {text_or_dash(e, "kind", true), {}},
        {text_or_dash(e, "server", true), {}},
        {text_or_dash(e, "name", true), {}},
        {text_or_dash(e, "outcome", true), {}},
        {spawn || !us ? "-" : fmt::format("{:.1f}", static_cast<double>(*us) / 1000), {}},
        {spawn || !bytes ? "-" : std::to_string(*bytes), {}},
        {text_or_dash(e, "redacted", true), {}},
        {text_or_dash(e, "run", true), {}},
        {spawn ? text_or_dash(e, "detail", true) : text_or_dash(e, "client", true), {}},
    });
  }
  if (rows.empty()) {
    fmt::print(stderr, "nothing in the audit log matches\n");
    return exit_status::ok;
  }
  print_table(columns, rows, output_width());
  return exit_status::ok;
}

}  // namespace mcpmux::cli
