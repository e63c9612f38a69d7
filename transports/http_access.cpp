// The HTTP endpoint's access checks: Host and Origin against DNS rebinding, the bearer token.
#include "transports/http_access.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "base/files.hpp"
#include "base/redact.hpp"
#include "transports/http_text.hpp"

namespace mcpmux {
namespace {
constexpr std::size_t max_token_bytes = 4096;
}

result<> http_access::read_token_file(const std::string& path) {
  // Refused, as the secrets file is: a token others can read lets them in.
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (st.st_uid != ::getuid())
      return failure("http_token_file \"" + path + "\" belongs to another user; it is not used");
    if (st.st_mode & 077) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return failure("http_token_file \"" + path + "\" is readable by others (mode " + mode +
                     "); it is not used until it is private: chmod 600 " + path);
    }
  }
  auto text = read_text_file(path, max_token_bytes);
  if (!text)
    return failure("cannot read http_token_file \"" + path + "\": " + text.error().message);
  std::string token(trim(*text));
  if (token.empty()) return failure("http_token_file \"" + path + "\" is empty");
  if (token.find_first_of("\r\n") != std::string::npos || token.find('\0') != std::string::npos)
    return failure("http_token_file \"" + path + "\" must hold one line");
  add_token("default", std::move(token));
  return {};
}

void http_access::allow_hosts(unsigned short port, const std::string& bound) {
  port_ = port;
  allowed_hosts_.clear();
  const std::string p = std::to_string(port);
  for (std::string name : {"localhost", "127.0.0.1", "[::1]"}) {
    allowed_hosts_.push_back(name + ":" + p);
    if (port == 80) allowed_hosts_.push_back(name);
  }
  if (!bound.empty()) allowed_hosts_.push_back(bound + ":" + p);
}

std::optional<access_refusal> http_access::check(std::string_view host,
                                                 std::optional<std::string_view> origin,
                                                 std::string_view authorization,
                                                 bool token_needed) const {
  if (check_host_ &&
      std::find(allowed_hosts_.begin(), allowed_hosts_.end(), lower(host)) == allowed_hosts_.end())
    return access_refusal{403, "Forbidden: Host must be localhost, 127.0.0.1 or [::1] with port " +
                                   std::to_string(port_)};
  if (origin && !own_origin(*origin))
    return access_refusal{403, "Forbidden: Origin must be this endpoint's own (http://127.0.0.1:" +
                                   std::to_string(port_) + ")"};
  if (token_needed && token_required() && token_name(authorization).empty())
    return access_refusal{401, "Unauthorized: a valid bearer token is required", true};
  return std::nullopt;
}

bool http_access::own_origin(std::string_view origin) const {
  const auto o = lower(trim(origin));
  if (!std::string_view(o).starts_with("http://")) return false;  // "null", https:, file:, ...
  return std::find(allowed_hosts_.begin(), allowed_hosts_.end(), std::string_view(o).substr(7)) !=
         allowed_hosts_.end();
}

void http_access::add_token(std::string name, std::string token) {
  add_secret(token);  // never in a log line, nor in a server's result (redact_results)
  tokens_.emplace_back(std::move(name), std::move(token));
}

std::string_view http_access::token_name(std::string_view authorization) const {
  const auto v = trim(authorization);
  if (v.size() < 7 || lower(v.substr(0, 7)) != "bearer ") return {};
  const auto given = trim(std::string_view(v).substr(7));
  // Every token is compared, each in constant time in its content (their lengths are not
  // secrets worth hiding): no timing hint about which one matched or where one differs.
  std::string_view found;
  for (const auto& [name, token] : tokens_) {
    if (given.size() != token.size()) continue;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < token.size(); ++i)
      diff |= static_cast<unsigned char>(given[i] ^ token[i]);
    if (diff == 0 && found.empty()) found = name;
  }
  return found;
}

}  // namespace mcpmux
