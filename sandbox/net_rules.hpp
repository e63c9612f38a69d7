// The rules of the network proxy, without I/O: a server's `network = [...]` allowlist, which
// resolved addresses it may reach, and the head of a request a sandboxed client sends the proxy.
//
// The allowlist, as users write it (docs/configuration.md copies this):
//   - `api.example.com`   that name exactly;
//   - `*.example.org`     any name below example.org (`a.example.org`, `a.b.example.org`), not
//                         `example.org` itself (list both for both);
//   - `host:8443`         an entry may carry a port; without one it allows ports 80 and 443
//                         only (`*.example.org:8443`, `[2001:db8::1]:8443` likewise);
//   - `192.0.2.7`, `[2001:db8::1]` (or `2001:db8::1`)   an IP address is reached only when it is
//                         listed itself: no name entry or wildcard ever matches an address, so
//                         `curl http://93.184.215.14/` is refused under `["example.com"]`;
//   - names are compared case-insensitively and a trailing dot is ignored (`API.Example.COM.`
//     is `api.example.com`).
// The name is checked before anything is resolved or connected. After resolving, an address
// that is loopback, link-local (169.254/16 — cloud metadata — and fe80::/10) or unspecified
// (0.0.0.0/8, ::) is refused, IPv4 in IPv6 (::ffff:127.0.0.1) included: a listed name whose DNS
// answer points there (DNS rebinding) must not reach the daemon's own loopback HTTP endpoint or
// the host's services. Only an entry that names such an address itself (`localhost`,
// `127.0.0.1`, `[::1]`, `169.254.169.254`) reaches it.
//
// What it does not do: the proxy sees the name a client asks for, not what goes through the
// tunnel (TLS SNI, the Host header inside it), so a server may reach any site that shares an
// allowed site's address (a CDN's); it limits where connections go, not what they carry.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/result.hpp"

namespace mcpmux {

/// One entry of `network`, parsed.
struct net_rule {
  enum class kind { exact, subdomains, address };
  kind what = kind::exact;
  std::string host;   ///< lowercase, no trailing dot, no `*.`; an address in its canonical text
  unsigned port = 0;  ///< 0: ports 80 and 443
  std::string text;   ///< the entry as written, for messages
  /// It names a loopback, link-local or unspecified place itself, so it may reach one.
  bool local = false;
};

/// A server's `network` list, parsed once.
class net_allowlist {
 public:
  /// Parses the entries; the error names the first bad one and why.
  static result<net_allowlist> parse(const std::vector<std::string>& entries);

  /// The rule that allows `host:port` (host as the client wrote it: a name, or an address with
  /// or without brackets), or null: the proxy refuses.
  const net_rule* match(std::string_view host, unsigned port) const;

  const std::vector<net_rule>& rules() const { return rules_; }

 private:
  std::vector<net_rule> rules_;
};

/// `text` as a canonical IP address ("::1", "192.0.2.7"; brackets allowed), or nullopt when it
/// is not an address.
std::optional<std::string> canonical_address(std::string_view text);

/// Whether the address (canonical text) is loopback, link-local or unspecified, IPv4-mapped
/// IPv6 included: where a listed name must not lead.
bool is_local_address(std::string_view address);

/// What a client asked the proxy for.
struct proxy_request {
  bool tunnel = false;  ///< CONNECT host:port; otherwise plain HTTP in absolute form
  std::string host;     ///< as written, without brackets
  unsigned port = 0;
  /// Plain HTTP: the head to send the origin (origin form, its Host, `Connection: close`, the
  /// proxy's hop-by-hop headers dropped); empty for a tunnel.
  std::string origin_head;
};

/// The outcome of reading a request head.
struct proxy_parse {
  enum class state { incomplete, done, bad };
  state status = state::incomplete;
  proxy_request request;
  std::size_t head_size = 0;  ///< done: the bytes of `buffer` the head took
  std::string problem;        ///< bad: why, for the 400 answer
};

/// Reads the request head at the start of `buffer` (the bytes received so far). The caller
/// bounds the buffer (the head limit) and answers a `bad` one with 400.
proxy_parse parse_proxy_request(std::string_view buffer);

/// The origin's answer to a plain request, at the start of `buffer`, with `Connection: close`
/// in place of its own Connection and Keep-Alive headers (the rest of `buffer` kept after it):
/// the proxy ends the connection after one answer, and a client told so opens a new one for its
/// next request instead of sending it into a closing connection. An interim answer (1xx) is
/// left as it is. nullopt while the head is incomplete.
std::optional<std::string> closing_response(std::string_view buffer);

}  // namespace mcpmux
