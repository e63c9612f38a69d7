// Who may use the HTTP endpoint: DNS-rebinding protection (Host, Origin) and the optional bearer
// token. No I/O but reading the token file: header values in, a refusal out.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
  /// content: one line). "" on success, else why the file cannot serve.
  std::string read_token_file(const std::string& path);
  /// The Host values accepted once bound to `port`: localhost, 127.0.0.1 and [::1] with the port
  /// (also without it on port 80), and `bound` with the port when it is another loopback IPv4
  /// address the endpoint listens on ("" = none).
  void allow_hosts(unsigned short port, const std::string& bound = {});

  /// The refusal of a request with these headers (`origin` when the header is present), or
  /// nullopt when it may pass.
  std::optional<access_refusal> check(std::string_view host, std::optional<std::string_view> origin,
                                      std::string_view authorization) const;
  bool token_required() const { return !token_.empty(); }

  /// True for an http(s) origin on localhost, 127.0.0.1 or [::1], any port.
  static bool loopback_origin(std::string_view origin);

 private:
  bool token_ok(std::string_view header) const;

  bool check_host_;
  unsigned short port_ = 0;
  std::string token_;
  std::vector<std::string> allowed_hosts_;
};

}  // namespace mcpmux
