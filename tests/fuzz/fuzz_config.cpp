// Fuzzes configuration parsing and validation: a config that loads satisfies the rules validation
// enforces, and every error names a key or a line.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace mcpmux;

// A fixed environment: HOME is set, EMPTY is "", names starting with UNSET are unset, and every
// other name expands to a value with characters that must not be expanded again.
std::optional<std::string> fake_env(std::string_view name) {
  if (name == "HOME") return std::string("/home/fuzz");
  if (name == "EMPTY") return std::string();
  if (name.starts_with("UNSET")) return std::nullopt;
  return "v${" + std::string(name) + "}$$";
}

bool is_name(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

void check_config(const config& cfg) {
  FUZZ_CHECK(cfg.source == "fuzz.toml", "source is %s", cfg.source.c_str());
  const auto& d = cfg.daemon;
  FUZZ_CHECK(!d.tool_separator.empty() && d.tool_separator.size() <= 8 && is_name(d.tool_separator),
             "tool_separator \"%s\"", d.tool_separator.c_str());
  FUZZ_CHECK(d.max_tool_name >= 16 && d.max_tool_name <= 1024, "max_tool_name %zu",
             d.max_tool_name);
  FUZZ_CHECK(d.max_message_bytes >= 1024, "max_message_bytes %zu", d.max_message_bytes);
  FUZZ_CHECK(d.max_client_queue_bytes >= d.max_message_bytes, "queue %zu < message %zu",
             d.max_client_queue_bytes, d.max_message_bytes);
  FUZZ_CHECK(d.page_size >= 1, "page_size 0");
  FUZZ_CHECK(
      d.timeout.count() >= 0 && d.startup_wait.count() >= 0 && d.reconnect_max.count() >= 500,
      "negative durations");
  FUZZ_CHECK(d.socket.empty() || d.socket.front() == '/', "socket \"%s\"", d.socket.c_str());
  FUZZ_CHECK(d.http_token_file.empty() || d.http_token_file.front() == '/',
             "http_token_file \"%s\"", d.http_token_file.c_str());
  for (const auto& inc : d.include) FUZZ_CHECK(!inc.empty(), "empty include");
  for (std::size_t i = 0; i < cfg.servers.size(); ++i) {
    const auto& s = cfg.servers[i];
    FUZZ_CHECK(!s.name.empty() && s.name.size() <= 64 && is_name(s.name), "server name \"%s\"",
               s.name.c_str());
    if (i > 0)
      FUZZ_CHECK(cfg.servers[i - 1].name < s.name,
                 "servers not sorted or not unique: \"%s\" then \"%s\"",
                 cfg.servers[i - 1].name.c_str(), s.name.c_str());
    FUZZ_CHECK(s.line > 0, "server %s without a line", s.name.c_str());
    if (s.prefix) FUZZ_CHECK(is_name(*s.prefix), "prefix \"%s\"", s.prefix->c_str());
    if (s.timeout) FUZZ_CHECK(s.timeout->count() >= 0, "negative timeout");
    FUZZ_CHECK(s.max_timeout.count() >= 0 && s.ping_interval.count() >= 0, "negative durations");
    FUZZ_CHECK(s.cwd.empty() || s.cwd.front() == '/', "cwd \"%s\"", s.cwd.c_str());
    FUZZ_CHECK(s.ca_file.empty() || s.ca_file.front() == '/', "ca_file \"%s\"", s.ca_file.c_str());
    for (const auto& r : s.roots)
      FUZZ_CHECK(r.starts_with("file://") && r.size() > 7, "root \"%s\"", r.c_str());
    if (s.type == server_type::stdio) {
      FUZZ_CHECK(!s.command.empty(), "stdio server %s without a command", s.name.c_str());
      FUZZ_CHECK(s.url.empty() && s.headers.empty() && s.token_command.empty(),
                 "stdio server %s with remote keys", s.name.c_str());
    } else {
      FUZZ_CHECK((s.url.starts_with("http://") && s.url.size() > 7) ||
                     (s.url.starts_with("https://") && s.url.size() > 8),
                 "url \"%s\"", s.url.c_str());
      FUZZ_CHECK(s.command.empty() && s.args.empty() && s.env.empty() && s.cwd.empty(),
                 "remote server %s with stdio keys", s.name.c_str());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const config_result r = parse_config(text, "fuzz.toml", fake_env);
  FUZZ_CHECK(r.value.has_value() == r.errors.empty(), "value %d with %zu errors",
             r.value.has_value(), r.errors.size());
  for (const auto& e : r.errors) {
    FUZZ_CHECK(e.file == "fuzz.toml", "error names file \"%s\"", e.file.c_str());
    FUZZ_CHECK(!e.key.empty() || e.line > 0, "error without a key or a line: %s",
               e.to_string().c_str());
    FUZZ_CHECK(!e.message.empty(), "error without a message: %s", e.to_string().c_str());
  }
  for (std::size_t i = 1; i < r.errors.size(); ++i)
    FUZZ_CHECK(r.errors[i - 1].line <= r.errors[i].line, "errors not in line order");
  for (const auto& w : r.warnings) FUZZ_CHECK(!w.empty(), "empty warning");
  if (r.value) {
    check_config(*r.value);
    // Parsing is a pure function of the text.
    const config_result again = parse_config(text, "fuzz.toml", fake_env);
    FUZZ_CHECK(again.value && again.value->servers == r.value->servers, "second parse differs");
  }
  return 0;
}
