// `mcpmux add|remove|enable|disable NAME`: one server of mcpmux's config edited in place (every
// other byte kept: config/toml_edit.hpp, merge_into_config), the result validated by the loader
// `--check-config` uses before anything is written, the file replaced atomically, credentials
// given with --env/--header kept in the secret store first (as adopt does); then a running
// daemon reloads, and the command waits until the server is ready or its start has failed.
#include <fmt/ranges.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "base/files.hpp"
#include "config/config.hpp"
#include "config/import.hpp"
#include "config/paths.hpp"
#include "config/secrets.hpp"
#include "config/toml_edit.hpp"
#include "daemon/cli/commands.hpp"
#include "daemon/cli/json.hpp"

namespace mcpmux::cli {
namespace {

/// A config no bigger than adopt reads.
constexpr std::size_t max_config_bytes = 4u << 20;
/// Past the server's own timeout, for the daemon to report it (the era probe comes first).
constexpr std::chrono::milliseconds report_margin{5000};
/// The wait for a server without a timeout (`timeout_ms = 0`).
constexpr std::chrono::milliseconds untimed_wait{120000};

failure usage(std::string message, std::string detail = {}) {
  return failure{exit_status::usage, std::move(message), std::move(detail)};
}

// The K=V items of --env or --header.
outcome<std::map<std::string, std::string>> pairs(const std::vector<std::string>& items,
                                                  std::string_view option) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == 0 || eq == std::string::npos)
      return usage(fmt::format("{} wants KEY=VALUE, not '{}'", option, item.substr(0, eq)));
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

// The server `mcpmux add` was given, from its arguments.
outcome<server_config> server_from(const command_args& a) {
  if (a.url.has_value() == !a.command.empty())
    return usage("add wants either -- COMMAND [ARGS...] or --url URL");
  if (a.url && (!a.env.empty() || a.cwd))
    return usage("--env and --cwd are for a command; a URL takes --header");
  if (!a.url && !a.headers.empty()) return usage("--header is for a server given by --url");
  server_config s;
  s.name = a.target;
  auto env = pairs(a.env, "--env");
  if (!env) return env.error();
  auto headers = pairs(a.headers, "--header");
  if (!headers) return headers.error();
  if (a.url) {
    s.type = server_type::http;  // OAuth, where the server asks for it, is found at its first 401
    s.url = *a.url;
    s.headers = std::move(*headers);
  } else {
    s.command = a.command.front();
    s.args.assign(a.command.begin() + 1, a.command.end());
    s.env = std::move(*env);
    s.cwd = absolute_path(a.cwd.value_or(""));
  }
  return s;
}

// The config's text; "" (and `*missing`) when there is no file yet.
outcome<std::string> read_config(const std::string& path, bool& missing) {
  auto read = read_text_file_if_exists(path, max_config_bytes);
  if (!read) return fail(path + ": " + read.error().message);
  missing = !*read;
  return read->value_or("");
}

failure invalid(const std::string& path, const std::vector<config_error>& errors) {
  std::string detail;
  for (const auto& e : errors) detail += (detail.empty() ? "" : "\n") + e.to_string();
  return usage(path + " would not be valid after the change; nothing written", detail);
}

// Validates `text` as `mcpmuxd --check-config` does, then writes it over `path` (atomically,
// its mode kept; a new file private) if the file still holds `before`.
outcome<config> write_config(const std::string& path, std::string_view before,
                             const std::string& text) {
  auto checked = parse_config(text, path);
  if (!checked.value) return invalid(path, checked.errors);
  bool missing = false;
  auto now = read_config(path, missing);
  if (!now) return now.error();
  if (*now != before)
    return fail(path + " changed while mcpmux was working on it; nothing was written",
                "Run the command again.");
  if (auto written = write_file_atomically(path, text); !written)
    return fail(written.error().message);
  return std::move(*checked.value);
}

/// What the command waits for after the reload.
enum class until { ready, stopped, gone };

const json::value* server_status(const json::value& status, std::string_view name) {
  if (const auto* list = member(status, "servers"); list && list->is_array())
    for (const auto& s : list->get_array())
      if (member_string(s, "name") == name) return &s;
  return nullptr;
}

// How long the server may take to start: its timeout (else the daemon's), and the margin.
std::chrono::milliseconds start_wait(const config& cfg, std::string_view name) {
  for (const auto& s : cfg.servers)
    if (s.name == name) {
      const auto t = s.timeout.value_or(cfg.daemon.timeout);
      return t.count() == 0 ? untimed_wait : t + report_margin;
    }
  return report_margin;
}

// Whether the daemon at hand reads `path` (it may have been started with another --config).
bool reads(const json::value& status, const std::string& path) {
  const auto theirs = std::string(member_string(status, "config").value_or(""));
  char a[4096], b[4096];
  return theirs == path || (::realpath(theirs.c_str(), a) && ::realpath(path.c_str(), b) &&
                            std::string_view(a) == std::string_view(b));
}

// Reloads a running daemon and waits (bounded by `wait`) until server `name` is where `goal`
// says; a start that fails is the command's failure, with the server's error.
outcome<exit_status> reload_and_wait(const context& ctx, const std::string& path,
                                     const std::string& name, until goal,
                                     std::chrono::milliseconds wait) {
  auto client = open_client(ctx);
  if (!client) {
    print_visible(stdout, "no daemon answers on {}: it reads the change when it starts\n",
                  ctx.socket_path);
    return exit_status::ok;
  }
  auto status = client->request("mcpmux/status", {});
  if (!status) return status.error();
  if (!reads(*status, path)) {
    print_visible(stderr, "mcpmux: the daemon on {} reads {}, not {}: it was not reloaded\n",
                  ctx.socket_path, member_string(*status, "config").value_or("?"), path);
    return exit_status::ok;
  }
  if (auto reloaded = client->request("mcpmux/reload", {}); !reloaded) return reloaded.error();
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    status = client->request("mcpmux/status", {});
    if (!status) return status.error();
    const auto* s = server_status(*status, name);
    const auto state = s ? std::string(member_string(*s, "state").value_or("")) : "";
    const auto error = s ? std::string(member_string(*s, "last_error").value_or("")) : "";
    if (goal == until::gone && !s) {
      print_visible(stdout, "{} stopped and removed\n", name);
      return exit_status::ok;
    }
    if (goal == until::stopped && (state == "disabled" || state == "stopped")) {
      print_visible(stdout, "{} is disabled\n", name);
      return exit_status::ok;
    }
    if (goal == until::ready && state == "ready") {
      print_visible(stdout, "{} is ready: {} tools\n", name, member_int(*s, "tools").value_or(0));
      return exit_status::ok;
    }
    if (goal == until::ready && state == "needs_login") {
      print_visible(stdout, "{} waits for a login: run `mcpmux auth login {}`\n", name, name);
      return exit_status::ok;
    }
    if (goal == until::ready && state == "backoff")
      return fail(fmt::format("{} did not start: {}", name, error.empty() ? "no reason" : error),
                  fmt::format("See `mcpmux logs {}`; the daemon keeps trying.", name));
    if (std::chrono::steady_clock::now() >= deadline)
      return fail(fmt::format("{} is still {} after {} ms{}", name, state.empty() ? "?" : state,
                              wait.count(), error.empty() ? "" : ": " + error));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// remove, enable and disable: one edit of an existing table, then the reload.
outcome<exit_status> edit_server(const context& ctx, const command_args& args, until goal) {
  const std::string path = resolve_config_path(args.config.value_or(""));
  bool missing = false;
  auto text = read_config(path, missing);
  if (!text) return text.error();
  if (missing) return fail(path + " does not exist: there is no server to change");
  const auto edit = goal == until::gone
                        ? remove_server_table(*text, args.target)
                        : set_server_enabled(*text, args.target, goal == until::ready);
  if (!edit.error.empty()) return fail(path + ": " + edit.error);
  if (edit.unchanged) {
    print_visible(stdout, "{} is already {}\n", args.target,
                  goal == until::ready ? "enabled" : "disabled");
    return exit_status::ok;
  }
  auto cfg = write_config(path, *text, edit.text);
  if (!cfg) return cfg.error();
  print_visible(stdout, "{}: {} {}\n", path,
                goal == until::gone    ? "removed"
                : goal == until::ready ? "enabled"
                                       : "disabled",
                args.target);
  return reload_and_wait(ctx, path, args.target, goal, start_wait(*cfg, args.target));
}

}  // namespace

outcome<exit_status> run_add(const context& ctx, const command_args& args) {
  auto server = server_from(args);
  if (!server) return server.error();
  const std::string path = resolve_config_path(args.config.value_or(""));
  bool missing = false;
  auto text = read_config(path, missing);
  if (!text) return text.error();
  // The credentials come out as ${secret:NAME}; the text is checked with them still in it.
  auto merged =
      merge_into_config(*text, path, {*server}, "", process_env, credentials::to_secret_store);
  if (!merged.errors.empty()) return invalid(path, merged.errors);
  if (!merged.skipped.empty())
    return usage(fmt::format("{} has a server \"{}\" already; nothing written", path, args.target),
                 fmt::format("Choose another name, or `mcpmux remove {}` first.", args.target));
  // The secrets first: the config that names them does not load without them.
  if (!merged.secrets.empty()) {
    std::vector<std::string> names;
    for (const auto& m : merged.secrets) names.push_back(m.name);
    const auto kept = keep_moved_secrets(merged.secrets);
    if (!kept.unavailable.empty()) print_visible(stderr, "mcpmux: {}\n", kept.unavailable);
    if (!kept.error.empty()) return fail(kept.error + "; nothing written");
    print_visible(stdout, "credentials moved to {}, named as ${{secret:NAME}}: {}\n", kept.where,
                  fmt::join(names, ", "));
  }
  auto cfg = write_config(path, *text, merged.text);
  if (!cfg) return cfg.error();
  print_visible(stdout, "{}: added {}{}\n", path, args.target, missing ? " (a new file)" : "");
  return reload_and_wait(ctx, path, args.target, until::ready, start_wait(*cfg, args.target));
}

outcome<exit_status> run_remove(const context& ctx, const command_args& args) {
  return edit_server(ctx, args, until::gone);
}

outcome<exit_status> run_enable(const context& ctx, const command_args& args) {
  return edit_server(ctx, args, until::ready);
}

outcome<exit_status> run_disable(const context& ctx, const command_args& args) {
  return edit_server(ctx, args, until::stopped);
}

}  // namespace mcpmux::cli
