// Which values of a server's definition are credentials, and moving them to `${secret:NAME}`.
#include "config/credentials.hpp"

#include <algorithm>
#include <cctype>

namespace mcpmux {
namespace {

// "x-api-key" and "X_API_KEY" alike.
std::string normalized(std::string_view key) {
  std::string out;
  for (char c : key)
    out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string reference(const std::string& name) {
  return "${secret:" + name + "}";
}

// Moves `value` (or, of an authorization header "SCHEME TOKEN", the token) when it is plain
// text; a value with `$` is a template (`${VAR}`) or holds an escaped `$`: it stays.
void move_one(const std::string& server, const std::string& key, std::string& value,
              bool authorization, std::vector<moved_secret>& out) {
  if (value.empty() || value.find('$') != std::string::npos) return;
  const auto name = credential_secret_name(server, key);
  std::string scheme;
  if (const auto space = value.find(' '); authorization && space != std::string::npos) {
    scheme = value.substr(0, space + 1);
    const bool word = std::all_of(scheme.begin(), scheme.end() - 1, [](char c) {
      return std::isalpha(static_cast<unsigned char>(c));
    });
    if (!word || space == 0 || value.find(' ', space + 1) != std::string::npos ||
        space + 1 == value.size())
      scheme.clear();
  }
  out.push_back({name, value.substr(scheme.size())});
  value = scheme + reference(name);
}

bool authorization_header(std::string_view key) {
  const auto k = normalized(key);
  return k == "AUTHORIZATION" || k == "PROXY_AUTHORIZATION";
}

}  // namespace

bool names_credential(std::string_view key) {
  const auto k = normalized(key);
  return authorization_header(key) || k.ends_with("TOKEN") || k.ends_with("_KEY") || k == "KEY" ||
         k.ends_with("APIKEY") || k.ends_with("SECRET") ||
         k.find("PASSWORD") != std::string::npos || k.find("PASSWD") != std::string::npos;
}

std::string credential_secret_name(std::string_view server, std::string_view key) {
  std::string out = std::string(server) + "_" + std::string(key);
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) c = '_';
  if (out.size() > 128) out.resize(128);
  return out;
}

std::vector<moved_secret> move_credentials(server_config& s) {
  std::vector<moved_secret> out;
  for (auto& [key, value] : s.env)
    if (names_credential(key)) move_one(s.name, key, value, false, out);
  for (auto& [key, value] : s.headers)
    if (names_credential(key)) move_one(s.name, key, value, authorization_header(key), out);
  return out;
}

}  // namespace mcpmux
