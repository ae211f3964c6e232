// Name resolution without NSS: resolv.conf, hosts file, search/ndots order and DNS message parsing.
#include "io/resolver.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace kubedist::launcher {
namespace {

std::string ip(in_addr a) { return inet_ntoa(a); }

TEST(Resolver, ParsesKubernetesResolvConf) {
  auto c = parse_resolv_conf(
      "# generated\nsearch team-a.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\n"
      "nameserver fe80::1\noptions ndots:5 timeout:1 attempts:3\n");
  ASSERT_EQ(c.nameservers.size(), 1u);
  EXPECT_EQ(ip(c.nameservers[0].addr), "10.96.0.10");
  EXPECT_EQ(c.search, (std::vector<std::string>{"team-a.svc.cluster.local", "svc.cluster.local", "cluster.local"}));
  EXPECT_EQ(c.ndots, 5);
  EXPECT_EQ(c.timeout_ms, 1000);
  EXPECT_EQ(c.attempts, 3);
}

TEST(Resolver, HostsFileLookupIsCaseInsensitiveAndSkipsIpv6) {
  const std::string hosts = "127.0.0.1 localhost\n::1 localhost ip6-localhost\n10.1.2.3 j-node-0.j.ns.svc J-Node-0 # pod\n";
  EXPECT_EQ(ip(*lookup_hosts(hosts, "localhost")), "127.0.0.1");
  EXPECT_EQ(ip(*lookup_hosts(hosts, "j-node-0")), "10.1.2.3");
  EXPECT_EQ(ip(*lookup_hosts(hosts, "J-NODE-0.j.ns.svc.")), "10.1.2.3");
  EXPECT_FALSE(lookup_hosts(hosts, "ip6-localhost"));
  EXPECT_FALSE(lookup_hosts(hosts, "pod"));
}

TEST(Resolver, SearchOrderFollowsNdots) {
  std::vector<std::string> search = {"ns.svc.cluster.local", "svc.cluster.local"};
  EXPECT_EQ(candidate_names("j-node-0.j.ns.svc", search, 5),
            (std::vector<std::string>{"j-node-0.j.ns.svc.ns.svc.cluster.local", "j-node-0.j.ns.svc.svc.cluster.local",
                                      "j-node-0.j.ns.svc"}));
  EXPECT_EQ(candidate_names("a.b", search, 1),
            (std::vector<std::string>{"a.b", "a.b.ns.svc.cluster.local", "a.b.svc.cluster.local"}));
  EXPECT_EQ(candidate_names("abs.name.", search, 5), (std::vector<std::string>{"abs.name"}));
}

TEST(Resolver, BuildsAQueryAndParsesAnAnswerWithCompression) {
  auto q = build_query(0x1234, "a.bc");
  EXPECT_EQ(q, std::string("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x01" "a\x02" "bc\x00\x00\x01\x00\x01", 22));
  std::string r = q;
  r[2] = static_cast<char>(0x81);
  r[3] = static_cast<char>(0x80);
  r[7] = 2;  // two answers: a CNAME, then the A record
  r += std::string("\xc0\x0c\x00\x05\x00\x01\x00\x00\x00\x3c\x00\x02\xc0\x0c", 14);
  r += std::string("\xc0\x0c\x00\x01\x00\x01\x00\x00\x00\x3c\x00\x04\x0a\x00\x00\x07", 16);
  auto a = parse_response(0x1234, r);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(ip(*a), "10.0.0.7");
}

TEST(Resolver, ReportsNxdomainAndRejectsMalformedOrForeignAnswers) {
  auto q = build_query(7, "x");
  std::string nx = q;
  nx[2] = static_cast<char>(0x81);
  nx[3] = static_cast<char>(0x83);
  EXPECT_NE(parse_response(7, nx).error().find("NXDOMAIN"), std::string::npos);
  EXPECT_FALSE(parse_response(8, nx).ok());
  EXPECT_FALSE(parse_response(7, "abc").ok());
  std::string truncated = q;
  truncated[2] = static_cast<char>(0x81);
  truncated[7] = 1;
  truncated += "\xc0";
  EXPECT_FALSE(parse_response(7, truncated).ok());
}

TEST(Resolver, NumericAddressesNeedNoLookup) {
  ResolverConfig none;
  none.hosts_file = "/nonexistent";
  EXPECT_EQ(ip(*resolve_ipv4("192.168.1.9", none)), "192.168.1.9");
  auto r = resolve_ipv4("no-such-host", none);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("no nameserver"), std::string::npos);
}

}  // namespace
}  // namespace kubedist::launcher
