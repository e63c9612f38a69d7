// The network proxy's rules: the allowlist, local addresses and the request head, as pure text.
#include "sandbox/net_rules.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/text.hpp"

namespace mcpmux {
namespace {

// A DNS name as a proxy client may ask for one: labels of letters, digits, '-' and '_' (which
// real names carry, e.g. _dmarc), 1..63 bytes each, at most 253 in all. Lowercase expected.
bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok || ++label > 63) return false;
  }
  return label > 0;
}

// A name as compared: lowercase, one trailing dot dropped.
std::string normal_name(std::string_view name) {
  if (name.size() > 1 && name.back() == '.') name.remove_suffix(1);
  return lower(name);
}

std::optional<unsigned> parse_port(std::string_view text) {
  unsigned port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535)
    return std::nullopt;
  return port;
}

struct host_and_port {
  std::string_view host;
  std::string_view port;  ///< empty: none given
  bool ok = true;
};

// "host", "host:port", "[v6]", "[v6]:port" or a bare IPv6 address (two colons or more: no port).
host_and_port split_entry(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    const auto close = s.find(']');
    if (close == std::string_view::npos) return {{}, {}, false};
    const auto rest = s.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return {{}, {}, false};
    return {s.substr(1, close - 1), rest.empty() ? rest : rest.substr(1), true};
  }
  if (std::count(s.begin(), s.end(), ':') >= 2) return {s, {}, true};
  const auto colon = s.find(':');
  if (colon == std::string_view::npos) return {s, {}, true};
  return {s.substr(0, colon), s.substr(colon + 1), true};
}

bool local_v4(const unsigned char* b) {
  return b[0] == 127 || b[0] == 0 || (b[0] == 169 && b[1] == 254);
}

bool port_allowed(const net_rule& r, unsigned port) {
  return r.port != 0 ? port == r.port : (port == 80 || port == 443);
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return lower(a) == lower(b);
}

// Headers that concern the hop to the proxy, not the origin (RFC 9110 7.6.1), and Host, which
// the proxy writes from the URL itself (RFC 9112 3.2.2): a client's own Host would let it name
// another site on an allowed address.
bool dropped_header(std::string_view name) {
  for (std::string_view h : {"host", "connection", "proxy-connection", "keep-alive",
                             "proxy-authorization", "proxy-authenticate", "te", "upgrade"})
    if (iequals(name, h)) return true;
  return false;
}

proxy_parse bad(std::string problem) {
  proxy_parse p;
  p.status = proxy_parse::state::bad;
  p.problem = std::move(problem);
  return p;
}

}  // namespace

std::optional<std::string> canonical_address(std::string_view text) {
  if (text.size() > 2 && text.front() == '[' && text.back() == ']')
    text = text.substr(1, text.size() - 2);
  if (text.empty() || text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);
  unsigned char bytes[sizeof(in6_addr)];
  char out[INET6_ADDRSTRLEN];
  for (int family : {AF_INET, AF_INET6})
    if (::inet_pton(family, s.c_str(), bytes) == 1 &&
        ::inet_ntop(family, bytes, out, sizeof out) != nullptr)
      return std::string(out);
  return std::nullopt;
}

bool is_local_address(std::string_view address) {
  const std::string s(address);
  unsigned char b[sizeof(in6_addr)];
  if (::inet_pton(AF_INET, s.c_str(), b) == 1) return local_v4(b);
  if (::inet_pton(AF_INET6, s.c_str(), b) != 1) return false;
  static constexpr unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b, mapped, 12) == 0) return local_v4(b + 12);
  const bool zero_head = std::all_of(b, b + 15, [](unsigned char c) { return c == 0; });
  if (zero_head && (b[15] == 0 || b[15] == 1)) return true;  // :: and ::1
  return b[0] == 0xfe && (b[1] & 0xc0) == 0x80;              // fe80::/10
}

result<net_allowlist> net_allowlist::parse(const std::vector<std::string>& entries) {
  net_allowlist list;
  for (const auto& entry : entries) {
    const auto fail = [&](std::string_view why) {
      return failure("network entry \"" + entry + "\": " + std::string(why));
    };
    if (entry.empty()) return fail("empty");
    const auto parts = split_entry(entry);
    if (!parts.ok) return fail("an IPv6 address is written [like:this] or [like:this]:PORT");
    net_rule r;
    r.text = entry;
    if (!parts.port.empty() || entry.back() == ':') {
      const auto port = parse_port(parts.port);
      if (!port) return fail("the port must be a number from 1 to 65535");
      r.port = *port;
    }
    if (auto address = canonical_address(parts.host)) {
      r.what = net_rule::kind::address;
      r.host = *address;
      r.local = is_local_address(r.host);
    } else {
      std::string name = normal_name(parts.host);
      if (name.starts_with("*.")) {
        r.what = net_rule::kind::subdomains;
        name.erase(0, 2);
      }
      if (!valid_name(name)) {
        return fail(name.find('*') != std::string::npos
                        ? "a wildcard stands only as the first label, as in *.example.org"
                        : "not a host name, an IP address or *.domain");
      }
      r.host = std::move(name);
      r.local = r.what == net_rule::kind::exact && r.host == "localhost";
    }
    list.rules_.push_back(std::move(r));
  }
  return list;
}

const net_rule* net_allowlist::match(std::string_view host, unsigned port) const {
  if (auto address = canonical_address(host)) {
    for (const auto& r : rules_)
      if (r.what == net_rule::kind::address && r.host == *address && port_allowed(r, port))
        return &r;
    return nullptr;
  }
  const std::string name = normal_name(host);
  if (!valid_name(name)) return nullptr;
  for (const auto& r : rules_) {
    if (!port_allowed(r, port)) continue;
    if (r.what == net_rule::kind::exact && name == r.host) return &r;
    if (r.what == net_rule::kind::subdomains && name.size() > r.host.size() + 1 &&
        name.ends_with(r.host) && name[name.size() - r.host.size() - 1] == '.')
      return &r;
  }
  return nullptr;
}

proxy_parse parse_proxy_request(std::string_view buffer) {
  const auto end = buffer.find("\r\n\r\n");
  if (end == std::string_view::npos) return {};
  const auto head = buffer.substr(0, end + 2);  // each line ends with CRLF
  const auto line_end = head.find("\r\n");
  const auto line = head.substr(0, line_end);

  // METHOD SP target SP HTTP/1.x
  const auto sp1 = line.find(' ');
  const auto sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == sp2)
    return bad("the request line is not METHOD TARGET HTTP/1.1");
  const auto method = line.substr(0, sp1);
  const auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const auto version = line.substr(sp2 + 1);
  if (!version.starts_with("HTTP/1.")) return bad("only HTTP/1.x requests are served");

  proxy_parse p;
  p.status = proxy_parse::state::done;
  p.head_size = end + 4;
  auto& req = p.request;
  std::string_view authority;
  std::string_view path = "/";
  if (method == "CONNECT") {
    req.tunnel = true;
    authority = target;
  } else {
    constexpr std::string_view scheme = "http://";
    if (target.size() <= scheme.size() || !iequals(target.substr(0, scheme.size()), scheme)) {
      return bad(iequals(target.substr(0, 8), "https://")
                     ? "https goes through CONNECT host:443"
                     : "a proxy request names an absolute http:// URL or CONNECT host:port");
    }
    const auto rest = target.substr(scheme.size());
    const auto slash = rest.find_first_of("/?#");
    authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) path = rest.substr(slash);
    if (path.front() == '#') path = "/";
    if (path.front() == '?') return bad("the URL's path must start with /");
    if (authority.find('@') != std::string_view::npos)
      return bad("a URL with user information is not forwarded");
  }
  const auto hp = split_entry(authority);
  if (!hp.ok || hp.host.empty()) return bad("no host in \"" + std::string(authority) + "\"");
  if (hp.port.empty() && req.tunnel) return bad("CONNECT needs host:port");
  const auto port = hp.port.empty() ? std::optional<unsigned>(80) : parse_port(hp.port);
  if (!port) return bad("bad port in \"" + std::string(authority) + "\"");
  req.host = std::string(hp.host);
  req.port = *port;
  if (req.tunnel) return p;

  // Plain HTTP: the origin-form head, the proxy's own headers left out.
  std::string out;
  out.reserve(head.size() + 64);
  out.append(method).append(" ").append(path).append(" ").append(version).append("\r\n");
  out.append("Host: ").append(authority).append("\r\n");
  auto rest = head.substr(line_end + 2);
  while (!rest.empty()) {
    const auto eol = rest.find("\r\n");
    const auto field = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    const auto colon = field.find(':');
    if (colon == 0 || colon == std::string_view::npos || field.front() == ' ' ||
        field.front() == '\t' || field.substr(0, colon).find(' ') != std::string_view::npos)
      return bad("a malformed header line");
    if (dropped_header(trim(field.substr(0, colon)))) continue;
    out.append(field).append("\r\n");
  }
  out.append("Connection: close\r\n\r\n");
  req.origin_head = std::move(out);
  return p;
}

std::optional<std::string> closing_response(std::string_view buffer) {
  const auto end = buffer.find("\r\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  const auto line_end = buffer.find("\r\n");
  const auto line = buffer.substr(0, line_end);
  if (line.size() > 9 && line[9] == '1') return std::string(buffer);  // "HTTP/1.1 1xx"
  std::string out(line);
  out.append("\r\n");
  auto rest = buffer.substr(line_end + 2, end - line_end);  // the fields, each with its CRLF
  while (!rest.empty()) {
    const auto eol = rest.find("\r\n");
    const auto field = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    const auto name = trim(field.substr(0, field.find(':')));
    if (!iequals(name, "connection") && !iequals(name, "keep-alive"))
      out.append(field).append("\r\n");
  }
  out.append("Connection: close\r\n\r\n");
  out.append(buffer.substr(end + 4));
  return out;
}

}  // namespace mcpmux
