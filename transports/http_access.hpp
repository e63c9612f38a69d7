// Who may use the HTTP endpoint: DNS-rebinding protection (Host, Origin) and the bearer tokens
// (the token file's, and named ones). No I/O but reading the token file: header values in, a
// refusal or a token's name out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result.hpp"

namespace mcpmux {

/// Why a request is refused.
struct access_refusal {
  unsigned status = 403;          ///< 403 (Host, Origin) or 401 (token)
  std::string text;               ///< for the JSON-RPC error in the body
  bool bearer_challenge = false;  ///< answer with WWW-Authenticate: Bearer realm="mcpmux"
};

class http_access {
 public:
  /// `check_host`: the Host header must name the loopback endpoint (false with allow_remote,
  /// where any name may reach it; Origin is checked either way).
  explicit http_access(bool check_host) : check_host_(check_host) {}

  /// Reads the token that requests must carry as `Authorization: Bearer …` (the file's trimmed
  /// content: one line); fails saying why the file cannot serve (also when others may read it
  /// or it is not ours, like the secrets file).
  result<> read_token_file(const std::string& path);
  /// The Host values accepted once bound to `port`: localhost, 127.0.0.1 and [::1] with the port
  /// (also without it on port 80), and `bound` with the port when it is another loopback IPv4
  /// address the endpoint listens on ("" = none).
  void allow_hosts(unsigned short port, const std::string& bound = {});

  /// The refusal of a request with these headers (`origin` when the header is present), or
  /// nullopt when it may pass. An Origin must be the endpoint's own, port included: cookies
  /// reach every port of a host, so another local server's page must not pass for this one.
  /// `token_needed` false: Host and Origin only (the web side checks who comes itself).
  std::optional<access_refusal> check(std::string_view host, std::optional<std::string_view> origin,
                                      std::string_view authorization,
                                      bool token_needed = true) const;
  /// Accepts another token, known by `name` (`[daemon] http_tokens`): requests carrying it pass
  /// and their sessions are named after it. The token file's is named "default".
  void add_token(std::string name, std::string token);
  /// The name of the token `authorization` carries; "" when it carries none of them.
  std::string_view token_name(std::string_view authorization) const;
  bool token_required() const { return !tokens_.empty(); }

  /// True for the endpoint's own origin: "http://" and one of the Host values allow_hosts took.
  bool own_origin(std::string_view origin) const;

 private:
  bool check_host_;
  unsigned short port_ = 0;
  std::vector<std::pair<std::string, std::string>> tokens_;  ///< (name, token)
  std::vector<std::string> allowed_hosts_;
};

}  // namespace mcpmux
