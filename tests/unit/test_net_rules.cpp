// The network proxy's rules: each allowlist rule (exact names, wildcards, ports, addresses,
// case and trailing dots), bad entries, local addresses, and the request heads it reads.
#include <gtest/gtest.h>

#include "sandbox/net_rules.hpp"

namespace mcpmux {
namespace {

net_allowlist list_of(const std::vector<std::string>& entries) {
  auto list = net_allowlist::parse(entries);
  EXPECT_TRUE(list.ok()) << (list.ok() ? "" : list.error().message);
  return list.ok() ? *list : net_allowlist{};
}

bool allows(const std::vector<std::string>& entries, std::string_view host, unsigned port) {
  return list_of(entries).match(host, port) != nullptr;
}

TEST(NetAllowlist, AnExactNameIsThatNameOnly) {
  EXPECT_TRUE(allows({"api.example.com"}, "api.example.com", 443));
  EXPECT_FALSE(allows({"api.example.com"}, "example.com", 443));
  EXPECT_FALSE(allows({"api.example.com"}, "x.api.example.com", 443));
  EXPECT_FALSE(allows({"api.example.com"}, "api.example.com.evil.net", 443));
  EXPECT_FALSE(allows({"api.example.com"}, "apiXexample.com", 443));
}

TEST(NetAllowlist, AWildcardIsEverySubdomainButNotTheApex) {
  const std::vector<std::string> list{"*.example.org"};
  EXPECT_TRUE(allows(list, "a.example.org", 443));
  EXPECT_TRUE(allows(list, "a.b.example.org", 80));
  EXPECT_FALSE(allows(list, "example.org", 443));
  EXPECT_FALSE(allows(list, "badexample.org", 443));
  EXPECT_FALSE(allows(list, ".example.org", 443));
}

TEST(NetAllowlist, WithoutAPortOnly80And443WithOneThatPortOnly) {
  EXPECT_TRUE(allows({"example.com"}, "example.com", 80));
  EXPECT_TRUE(allows({"example.com"}, "example.com", 443));
  EXPECT_FALSE(allows({"example.com"}, "example.com", 22));
  EXPECT_FALSE(allows({"example.com"}, "example.com", 8443));
  EXPECT_TRUE(allows({"example.com:8443"}, "example.com", 8443));
  EXPECT_FALSE(allows({"example.com:8443"}, "example.com", 443));
  EXPECT_TRUE(allows({"*.example.org:8080"}, "a.example.org", 8080));
  EXPECT_FALSE(allows({"*.example.org:8080"}, "a.example.org", 80));
}

TEST(NetAllowlist, AddressesOnlyWhenListedThemselves) {
  EXPECT_TRUE(allows({"192.0.2.7"}, "192.0.2.7", 443));
  EXPECT_FALSE(allows({"192.0.2.7"}, "192.0.2.8", 443));
  EXPECT_TRUE(allows({"[2001:db8::1]:8443"}, "2001:db8:0::1", 8443));
  EXPECT_TRUE(allows({"2001:db8::1"}, "[2001:DB8::1]", 80));
  // No name or wildcard reaches an address, even one of its own.
  EXPECT_FALSE(allows({"example.com", "*.example.com"}, "93.184.215.14", 443));
  EXPECT_FALSE(allows({"*.0.0.127.in-addr.arpa"}, "127.0.0.1", 80));
  // An address is not a name: a wildcard over digits does not reach it either.
  EXPECT_FALSE(allows({"*.2.7"}, "192.0.2.7", 80));
}

TEST(NetAllowlist, CaseAndATrailingDotDoNotMatter) {
  EXPECT_TRUE(allows({"API.Example.COM"}, "api.example.com", 443));
  EXPECT_TRUE(allows({"api.example.com."}, "API.EXAMPLE.COM.", 443));
  EXPECT_TRUE(allows({"*.Example.org"}, "X.EXAMPLE.ORG.", 443));
}

TEST(NetAllowlist, NamesThatAreNotNamesNeverMatch) {
  EXPECT_FALSE(allows({"example.com"}, "example.com\r\nX: y", 443));
  EXPECT_FALSE(allows({"example.com"}, "", 443));
  EXPECT_FALSE(allows({"example.com"}, "example..com", 443));
}

TEST(NetAllowlist, OnlyEntriesNamingALocalPlaceMayReachOne) {
  const auto list = list_of({"localhost", "127.0.0.1:8080", "[::1]", "example.com", "*.test"});
  ASSERT_EQ(list.rules().size(), 5u);
  EXPECT_TRUE(list.rules()[0].local);
  EXPECT_TRUE(list.rules()[1].local);
  EXPECT_TRUE(list.rules()[2].local);
  EXPECT_FALSE(list.rules()[3].local);
  EXPECT_FALSE(list.rules()[4].local);
  EXPECT_EQ(list.rules()[1].port, 8080u);
  EXPECT_EQ(list.rules()[2].what, net_rule::kind::address);
  EXPECT_EQ(list.rules()[4].what, net_rule::kind::subdomains);
}

TEST(NetAllowlist, BadEntriesAreNamedWithWhy) {
  for (const std::string bad :
       {"", "*", "*.", "a.*.example.org", "example.com:0", "example.com:70000",
        "example.com:", "[::1", "[::1]x", "exa mple.com", "http://example.com", "*example.org"}) {
    const auto list = net_allowlist::parse({"ok.example", bad});
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_NE(list.error().message.find("\"" + bad + "\""), std::string::npos)
        << list.error().message;
  }
  EXPECT_NE(net_allowlist::parse({"a.*.b"}).error().message.find("first label"), std::string::npos);
}

TEST(NetAddresses, LoopbackLinkLocalAndUnspecifiedAreLocal) {
  for (const char* local :
       {"127.0.0.1", "127.1.2.3", "0.0.0.0", "0.1.2.3", "169.254.169.254", "::1", "::", "fe80::1",
        "febf::1", "::ffff:127.0.0.1", "::ffff:169.254.1.1"})
    EXPECT_TRUE(is_local_address(local)) << local;
  for (const char* remote : {"192.0.2.7", "10.0.0.1", "2001:db8::1", "fec0::1", "::2",
                             "::ffff:192.0.2.7", "not-an-address"})
    EXPECT_FALSE(is_local_address(remote)) << remote;
  EXPECT_EQ(canonical_address("[2001:DB8:0::1]"), "2001:db8::1");
  EXPECT_EQ(canonical_address("192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(canonical_address("127.1"), std::nullopt);  // getaddrinfo's shorthand is a name here
  EXPECT_EQ(canonical_address("example.com"), std::nullopt);
}

TEST(ProxyRequest, ConnectNamesHostAndPort) {
  const auto p = parse_proxy_request("CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\nTLS");
  ASSERT_EQ(p.status, proxy_parse::state::done) << p.problem;
  EXPECT_TRUE(p.request.tunnel);
  EXPECT_EQ(p.request.host, "api.example.com");
  EXPECT_EQ(p.request.port, 443u);
  EXPECT_EQ(p.head_size,
            std::string_view("CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").size());
  const auto v6 = parse_proxy_request("CONNECT [::1]:8443 HTTP/1.1\r\n\r\n");
  ASSERT_EQ(v6.status, proxy_parse::state::done);
  EXPECT_EQ(v6.request.host, "::1");
  EXPECT_EQ(v6.request.port, 8443u);
}

TEST(ProxyRequest, PlainHttpGoesOutInOriginFormWithItsOwnHostAndClose) {
  const auto p = parse_proxy_request(
      "GET http://Example.com:8080/a/b?c=1 HTTP/1.1\r\nHost: other.example\r\n"
      "Proxy-Connection: keep-alive\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n");
  ASSERT_EQ(p.status, proxy_parse::state::done) << p.problem;
  EXPECT_FALSE(p.request.tunnel);
  EXPECT_EQ(p.request.host, "Example.com");
  EXPECT_EQ(p.request.port, 8080u);
  EXPECT_EQ(p.request.origin_head,
            "GET /a/b?c=1 HTTP/1.1\r\nHost: Example.com:8080\r\nAccept: */*\r\n"
            "Connection: close\r\n\r\n");
  const auto bare = parse_proxy_request("HEAD http://example.com HTTP/1.0\r\n\r\n");
  ASSERT_EQ(bare.status, proxy_parse::state::done);
  EXPECT_EQ(bare.request.port, 80u);
  EXPECT_EQ(bare.request.origin_head,
            "HEAD / HTTP/1.0\r\nHost: example.com\r\nConnection: close\r\n\r\n");
}

TEST(ProxyRequest, IncompleteUntilTheBlankLine) {
  EXPECT_EQ(parse_proxy_request("CONNECT a:443 HTTP/1.1\r\nHost: a").status,
            proxy_parse::state::incomplete);
  EXPECT_EQ(parse_proxy_request("").status, proxy_parse::state::incomplete);
}

TEST(ProxyRequest, WhatItDoesNotServeIsBadWithAReason) {
  for (const char* head :
       {"GET /relative HTTP/1.1\r\n\r\n", "GET https://example.com/ HTTP/1.1\r\n\r\n",
        "CONNECT example.com HTTP/1.1\r\n\r\n", "CONNECT example.com:99999 HTTP/1.1\r\n\r\n",
        "GET http://user:pw@example.com/ HTTP/1.1\r\n\r\n", "GET http:///x HTTP/1.1\r\n\r\n",
        "GET http://example.com/ HTTP/2\r\n\r\n", "GARBAGE\r\n\r\n",
        "GET http://example.com/ HTTP/1.1\r\nno colon here\r\n\r\n",
        "GET http://example.com/ HTTP/1.1\r\n folded: x\r\n\r\n"}) {
    const auto p = parse_proxy_request(head);
    EXPECT_EQ(p.status, proxy_parse::state::bad) << head;
    EXPECT_FALSE(p.problem.empty()) << head;
  }
  EXPECT_NE(
      parse_proxy_request("GET https://example.com/ HTTP/1.1\r\n\r\n").problem.find("CONNECT"),
      std::string::npos);
}

TEST(ProxyAnswer, APlainAnswerSaysTheConnectionCloses) {
  EXPECT_EQ(closing_response("HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n"
                             "connection: keep-alive\r\n\r\nhi"),
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi");
  EXPECT_EQ(closing_response("HTTP/1.1 204 No Content\r\n\r\n"),
            "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(closing_response("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200"),
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200");
  EXPECT_EQ(closing_response("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"), std::nullopt);
}

}  // namespace
}  // namespace mcpmux
