// The subcommands of mcpmux that talk to the daemon: connect, status, tools, call, logs,
// restart, reload.
#include "daemon/cli/commands.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>

#include "base/clock.hpp"
#include "base/text.hpp"
#include "daemon/cli/bridge.hpp"
#include "daemon/cli/spawn.hpp"
#include "daemon/cli/table.hpp"

namespace mcpmux::cli {

failure unexpected_answer(std::string_view method) {
  return fail(fmt::format("unexpected answer from the daemon to {}", method));
}

namespace {

// The status table's last column: what trust holds back first, then a crash loop (with why), then
// the notes of a server that works with something missing, then the last error (kept after a
// recovery).
std::string problem_text(const json::value& server) {
  std::string out;
  if (auto held = member_int(server, "quarantined"); held && *held > 0)
    return fmt::format("{} held back: mcpmux trust {}", *held,
                       member_string(server, "name").value_or(""));
  if (const auto* loop = member(server, "crash_looping");
      loop && loop->is_bool() && loop->get_bool())
    out = "crash-looping: ";
  const auto* notes = member(server, "notes");
  if (out.empty() && notes && notes->is_array() && !notes->get_array().empty()) {
    out = "note: ";
    for (const auto& n : notes->get_array())
      if (n.is_string()) out += std::string(n.get_string()) + "; ";
    out.resize(out.size() - 2);
    return out;
  }
  auto error = text_or_dash(server, "last_error", false);
  // With nothing else to say: why it is not sandboxed, or what its sandbox last refused.
  if (const auto* sb = member(server, "sandbox"); out.empty() && error == "-" && sb) {
    if (auto warning = member_string(*sb, "warning")) return one_line(*warning, true);
    if (auto denied = member_string(*sb, "last_denied"))
      return "sandbox denied: " + one_line(*denied, true);
  }
  // Calls its limits held back (max_calls_per_minute…), when there is nothing worse to say.
  if (const auto* limited = member(server, "limited"); out.empty() && error == "-" && limited &&
                                                       limited->is_object() &&
                                                       !limited->get_object().empty()) {
    std::string held = "calls held back:";
    for (const auto& [limit, n] : limited->get_object())
      if (n.is_int64()) held += fmt::format(" {} {},", std::string_view(limit), n.get_int64());
    held.pop_back();
    return held;
  }
  if (auto at = member_int(server, "last_error_at_ms"); at && *at > 0) {
    error += fmt::format(" ({} ago)",
                         format_duration_ms(std::max<std::int64_t>(0, unix_now_ms() - *at)));
  }
  return out.empty() ? error : out + error;
}

// The status table's sandbox column: the mode a stdio server runs in, "none" when it should be
// sandboxed and is not (the host cannot), "-" for a remote server.
std::string sandbox_text(const json::value& server) {
  const auto* sb = member(server, "sandbox");
  if (!sb) return "-";
  const auto mode = member_string(*sb, "mode").value_or("-");
  const auto* sandboxed = member(*sb, "sandboxed");
  if (mode != "off" && sandboxed && sandboxed->is_bool() && !sandboxed->get_bool()) return "none";
  return one_line(mode, true);
}

volatile sig_atomic_t stop_requested = 0;

extern "C" void on_stop_signal(int) {
  stop_requested = 1;
}

// A server's stderr line, escaped whether or not stdout is a terminal: a file or a pager shows
// it to a person too.
void append_log_line(std::string& out, const json::value& line) {
  std::string text = line.is_string() ? std::string(line.get_string()) : json::serialize(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  out += visible_text(text);
  out += '\n';
}

// "a, b" from a JSON array of strings.
std::string join_names(const json::value* names) {
  std::string out;
  if (names == nullptr || !names->is_array()) return out;
  for (const json::value& n : names->get_array()) {
    if (!out.empty()) out += ", ";
    out += n.is_string() ? one_line(n.get_string(), true) : json::serialize(n);
  }
  return out;
}

std::size_t count_of(const json::value* names) {
  return names != nullptr && names->is_array() ? names->get_array().size() : 0;
}

}  // namespace

outcome<exit_status> run_connect(const context& ctx, const command_args& args) {
  auto fd = dial_daemon(ctx);
  // Only "nothing there" (ENOENT, ECONNREFUSED) starts a daemon; EACCES and the like do not.
  if (!fd && args.spawn && fd.error().sys_errno != 0) fd = spawn_and_dial(ctx);
  if (!fd) return fd.error();
  if (!args.profile.empty())
    if (auto refused = choose_profile(fd->get(), args.profile, ctx.timeout)) return *refused;
  return run_connect_bridge(fd->get(), ctx.timeout);
}

namespace {
// The tables of `mcpmux status` (below run_status).
void print_servers(const json::array& servers);
void print_profiles(const json::array& profiles);
void print_clients(const json::array& sessions);
}  // namespace

outcome<exit_status> run_status(const context& ctx, const command_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  auto status = client->request("mcpmux/status", {});
  if (!status) return status.error();
  if (args.json) {
    print_pretty(*status);
    return exit_status::ok;
  }
  if (!status->is_object()) return unexpected_answer("mcpmux/status");
  const json::value& st = *status;

  std::string header = fmt::format(
      "mcpmuxd {}  pid {}  up {}  clients {}  socket {}  config {}\n",
      text_or_dash(st, "version", true), int_or_dash(st, "pid", plain_int),
      int_or_dash(st, "uptime_ms", format_duration_ms), int_or_dash(st, "clients", plain_int),
      text_or_dash(st, "socket", true), text_or_dash(st, "config", true));
  std::fwrite(header.data(), 1, header.size(), stdout);

  const json::value* servers = member(st, "servers");
  if (servers == nullptr || !servers->is_array() || servers->get_array().empty())
    std::fputs("no servers configured\n", stdout);
  else
    print_servers(servers->get_array());
  if (const auto* profiles = member(st, "profiles"); profiles && profiles->is_array())
    print_profiles(profiles->get_array());
  if (const auto* sessions = member(st, "sessions"); sessions && sessions->is_array())
    print_clients(sessions->get_array());
  return exit_status::ok;
}

namespace {

void print_servers(const json::array& servers) {
  static constexpr column columns[] = {
      {"NAME", 24},
      {"TYPE", 5},
      {"SANDBOX", 8},
      {"STATE", 10},
      {"ERA", 6},
      {"PID", 8, align::right},
      {"UPTIME", 7, align::right},
      {"RESTARTS", 8, align::right},
      {"TOOLS", 6, align::right},
      {"CALLS", 9, align::right},
      {"P50", 8, align::right},
      {"P99", 8, align::right},
      {"LAST ERROR / NOTES", 0},
  };
  const bool colour = use_colour();
  std::vector<std::vector<cell>> rows;
  for (const json::value& s : servers) {
    std::string state = text_or_dash(s, "state", true);
    std::string_view sgr;
    if (colour) {
      if (state == "ready") sgr = "\x1b[32m";
      if (state == "connecting" || state == "backoff") sgr = "\x1b[33m";
      if (state == "failed" || state == "needs_login") sgr = "\x1b[31m";
    }
    rows.push_back({
        {text_or_dash(s, "name", true), {}},
        {text_or_dash(s, "type", true), {}},
        {sandbox_text(s), {}},
        {std::move(state), sgr},
        {text_or_dash(s, "era", true), {}},
        {int_or_dash(s, "pid", plain_int), {}},
        {int_or_dash(s, "uptime_ms", format_duration_ms), {}},
        {int_or_dash(s, "restarts", plain_int), {}},
        {int_or_dash(s, "tools", plain_int), {}},
        {int_or_dash(s, "calls", plain_int), {}},
        {int_or_dash(s, "latency_p50_us", format_latency_us), {}},
        {int_or_dash(s, "latency_p99_us", format_latency_us), {}},
        {problem_text(s), {}},
    });
  }
  print_table(columns, rows, output_width());
}

void print_profiles(const json::array& profiles) {
  if (profiles.empty()) return;
  static constexpr column columns[] = {
      {"PROFILE", 24},
      {"EXPOSURE", 8},
      {"LISTS", 7},
      {"TOOLS", 6, align::right},
      {"TOKENS", 8, align::right},
      {"CLIENTS", 7, align::right},
  };
  std::vector<std::vector<cell>> rows;
  for (const json::value& p : profiles) {
    const auto searching = member(p, "searching");
    rows.push_back({
        {text_or_dash(p, "name", true), {}},
        {text_or_dash(p, "exposure", true), {}},
        {searching && searching->is_bool() && searching->get_bool() ? "search" : "all", {}},
        {int_or_dash(p, "tools", plain_int), {}},
        {int_or_dash(p, "estimated_tokens", plain_int), {}},
        {int_or_dash(p, "clients", plain_int), {}},
    });
  }
  std::fputs("\n", stdout);
  print_table(columns, rows, output_width());
}

// The MCP clients (control-only connections, such as this command's own, are left out).
void print_clients(const json::array& sessions) {
  static constexpr column columns[] = {
      {"CLIENT", 6, align::right}, {"TRANSPORT", 9}, {"ERA", 7}, {"PROFILE", 16}, {"NAME", 24},
      {"PID", 8, align::right},    {"AGENT", 0},
  };
  std::vector<std::vector<cell>> rows;
  for (const json::value& c : sessions) {
    if (member_string(c, "era") == std::string_view("unknown")) continue;
    std::string agent = "-";
    if (auto program = member_string(c, "agent_program"))
      agent =
          fmt::format("{} (pid {})", base_name(*program), int_or_dash(c, "agent_pid", plain_int));
    rows.push_back({
        {int_or_dash(c, "id", plain_int), {}},
        {text_or_dash(c, "transport", true), {}},
        {text_or_dash(c, "era", true), {}},
        {text_or_dash(c, "profile", true), {}},
        {text_or_dash(c, "client", true), {}},
        {int_or_dash(c, "pid", plain_int), {}},
        {std::move(agent), {}},
    });
  }
  if (rows.empty()) return;
  std::fputs("\n", stdout);
  print_table(columns, rows, output_width());
}

}  // namespace

outcome<exit_status> run_tools(const context& ctx, const command_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  json::object params;
  const auto& server = args.server;
  if (!args.profile.empty()) {
    params["profile"] = args.profile;
  } else if (server) {
    params["server"] = *server;
    params["hidden"] = args.hidden;
  }
  auto answer = client->request("mcpmux/tools", params);
  if (!answer) return answer.error();
  const json::value* tools = member(*answer, "tools");
  if (tools == nullptr || !tools->is_array()) return unexpected_answer("mcpmux/tools");

  json::array selected;
  for (const json::value& t : tools->get_array()) {
    if (!server || member_string(t, "server") == std::string_view(*server)) selected.push_back(t);
  }
  if (args.json) {
    print_pretty(selected);
    return exit_status::ok;
  }
  if (const auto* p = member(*answer, "profile"); p && member_int(*p, "listing"))
    fmt::print(stderr, "profile {} lists {} tools (search mode); searching finds these {}:\n",
               args.profile, *member_int(*p, "listing"), selected.size());
  if (selected.empty()) {
    fmt::print(
        stderr, "{}\n",
        server ? fmt::format("no tools from server '{}'", *server) : std::string("no tools"));
    return exit_status::ok;
  }
  if (args.hidden) {
    // Every tool of one server, with what became of it.
    static constexpr column columns[] = {
        {"ORIGINAL", 40}, {"STATE", 24}, {"NAME", 48}, {"DESCRIPTION", 0}};
    std::vector<std::vector<cell>> rows;
    for (const json::value& t : selected) {
      std::string state = text_or_dash(t, "state", true);
      if (auto why = member_string(t, "why")) state += fmt::format(" ({})", *why);
      if (const auto* c = member(t, "changed"))
        state += fmt::format(", {} ({})", member_string(*c, "why").value_or("changed"),
                             member_string(*c, "shown_by").value_or("-"));
      rows.push_back({{text_or_dash(t, "original", true), {}},
                      {std::move(state), {}},
                      {text_or_dash(t, "name", true), {}},
                      {text_or_dash(t, "description", true), {}}});
    }
    print_table(columns, rows, output_width());
    return exit_status::ok;
  }
  static constexpr column columns[] = {
      {"NAME", 48}, {"SERVER", 20}, {"ORIGINAL", 40}, {"DESCRIPTION", 0}};
  std::vector<std::vector<cell>> rows;
  for (const json::value& t : selected) {
    rows.push_back({{text_or_dash(t, "name", true), {}},
                    {text_or_dash(t, "server", true), {}},
                    {text_or_dash(t, "original", true), {}},
                    {text_or_dash(t, "description", true), {}}});
  }
  print_table(columns, rows, output_width());
  return exit_status::ok;
}

outcome<exit_status> run_call(const context& ctx, const command_args& args) {
  const std::string& tool = args.target;
  json::object arguments;
  if (args.json_args) {
    boost::system::error_code ec;
    json::value parsed = parse_json(*args.json_args, ec);
    if (ec || !parsed.is_object()) {
      return failure{exit_status::usage,
                     ec ? fmt::format("JSON_ARGS is not valid JSON: {}", ec.message())
                        : std::string("JSON_ARGS must be a JSON object, like '{\"path\":\"x\"}'"),
                     "usage: mcpmux call TOOL [JSON_ARGS] [--json]\nTry 'mcpmux call --help'."};
    }
    arguments = std::move(parsed.get_object());
  }

  auto client = open_client(ctx);
  if (!client) return client.error();
  auto init = client->request(
      "initialize", {{"protocolVersion", "2025-11-25"},
                     {"capabilities", json::object{}},
                     {"clientInfo", {{"name", "mcpmux-cli"}, {"version", MCPMUX_VERSION}}}});
  if (!init) {
    failure f = init.error();
    if (f.from_daemon) f.message = "initialize failed: " + f.message;
    return f;
  }
  if (auto sent = client->notify("notifications/initialized", {}); !sent) return sent.error();

  json::object params{{"name", tool}};
  params["arguments"] = std::move(arguments);
  auto result = client->request("tools/call", std::move(params));
  if (!result) return result.error();
  if (!result->is_object()) return unexpected_answer("tools/call");

  const json::value* is_error = member(*result, "isError");
  const bool tool_failed = is_error != nullptr && is_error->is_bool() && is_error->get_bool();
  if (args.json) {
    print_pretty(*result);
    return tool_failed ? exit_status::failure : exit_status::ok;
  }
  std::string out;
  if (const json::value* content = member(*result, "content"); content && content->is_array()) {
    for (const json::value& block : content->get_array()) {
      auto text = member_string(block, "text");
      if (member_string(block, "type") == std::string_view("text") && text) {
        out += *text;
        if (out.empty() || out.back() != '\n') out += '\n';
      } else {
        out += json::serialize(block);
        out += '\n';
      }
    }
  }
  out = visible_text(out);
  std::fwrite(out.data(), 1, out.size(), tool_failed ? stderr : stdout);
  return tool_failed ? exit_status::failure : exit_status::ok;
}

outcome<exit_status> run_logs(const context& ctx, const command_args& args) {
  const std::int64_t lines = args.lines;  // at least 1: the parser checked
  const bool follow = args.follow;
  const std::string& server = args.target;
  auto client = open_client(ctx);
  if (!client) return client.error();
  json::object params{{"server", server}, {"lines", lines}};
  if (follow) params["follow"] = true;
  auto answer = client->request("mcpmux/logs", std::move(params));
  if (!answer) return answer.error();
  const json::value* got = member(*answer, "lines");
  if (got == nullptr || !got->is_array()) return unexpected_answer("mcpmux/logs");

  std::string out;
  for (const json::value& line : got->get_array()) append_log_line(out, line);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!follow) return exit_status::ok;

  // Follow until the daemon closes the connection or SIGINT/SIGTERM; no deadline applies.
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  ::sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) ::sigaction(sig, &sa, nullptr);
  for (;;) {
    std::fflush(stdout);
    auto next = client->next_log_notification(&stop_requested);
    if (!next) return next.error();
    if (!next->has_value()) return exit_status::ok;
    const json::value* p = member(**next, "params");
    if (p == nullptr || member_string(*p, "server") != std::string_view(server)) continue;
    const json::value* line = member(*p, "line");
    if (line == nullptr) continue;
    out.clear();
    append_log_line(out, *line);
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) return exit_status::ok;
  }
}

// mcpmux sandbox SERVER: the policy as the daemon worked it out (paths from the config, shown
// through visible_text like any text from the daemon).
outcome<exit_status> run_sandbox(const context& ctx, const command_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  auto answer = client->request("mcpmux/sandbox", json::object{{"server", args.target}});
  if (!answer) return answer.error();
  if (args.json) {
    print_pretty(*answer);
    return exit_status::ok;
  }
  const auto text = member_string(*answer, "text");
  if (!text) return unexpected_answer("mcpmux/sandbox");
  std::string out;
  for (auto line : split_lines(*text)) out += visible_text(line) + "\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  return exit_status::ok;
}

outcome<exit_status> run_restart(const context& ctx, const command_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  const std::string& server = args.target;
  auto answer = client->request("mcpmux/restart", {{"server", server}});
  if (!answer) return answer.error();
  fmt::print("restart of server '{}' requested\n", server);
  return exit_status::ok;
}

outcome<exit_status> run_reload(const context& ctx, const command_args& args) {
  auto client = open_client(ctx);
  if (!client) return client.error();
  auto answer = client->request("mcpmux/reload", {});
  if (!answer) return answer.error();  // data.errors become the detail lines
  if (args.json) {
    print_pretty(*answer);
    return exit_status::ok;
  }
  if (!answer->is_object()) return unexpected_answer("mcpmux/reload");
  const json::value& r = *answer;

  // "reloaded CONFIG: added a, b; removed c; changed d; N unchanged"
  std::string summary;
  for (std::string_view key : {"added", "removed", "changed", "refiltered"}) {
    std::string names = join_names(member(r, key));
    if (!names.empty()) summary += fmt::format("{} {}; ", key, names);
  }
  summary += fmt::format("{} unchanged", count_of(member(r, "unchanged")));
  fmt::print("reloaded {}: {}\n", text_or_dash(r, "config", true), summary);
  if (const json::value* keys = member(r, "restart_required"); keys && keys->is_array()) {
    for (const json::value& k : keys->get_array()) {
      fmt::print("{} needs a daemon restart\n",
                 k.is_string() ? one_line(k.get_string(), true) : json::serialize(k));
    }
  }
  std::fflush(stdout);
  if (const json::value* warnings = member(r, "warnings"); warnings && warnings->is_array()) {
    for (const json::value& w : warnings->get_array()) {
      print_visible(stderr, "mcpmux: warning: {}\n",
                    w.is_string() ? std::string(w.get_string()) : json::serialize(w));
    }
  }
  return exit_status::ok;
}

}  // namespace mcpmux::cli
