// Resolver: IPv4 host name resolution without glibc's NSS (the launcher is linked statically): /etc/hosts, then
// DNS over UDP to the nameservers of /etc/resolv.conf, honouring search domains and ndots.
#pragma once

#include <netinet/in.h>

#include <optional>
#include <string>
#include <vector>

#include "util/result.h"

namespace kubedist::launcher {

struct Nameserver {
  in_addr addr{};
  int port = 53;
};

struct ResolverConfig {
  std::vector<Nameserver> nameservers;
  std::vector<std::string> search;
  int ndots = 1;
  int timeout_ms = 2000;  // per query
  int attempts = 2;
  std::string hosts_file = "/etc/hosts";
};

ResolverConfig parse_resolv_conf(const std::string& text);
std::optional<in_addr> lookup_hosts(const std::string& hosts_text, const std::string& name);
// The names to query, in order, for name under the search list and ndots rule.
std::vector<std::string> candidate_names(const std::string& name, const std::vector<std::string>& search, int ndots);
std::string build_query(unsigned short id, const std::string& name);
// The first A record of a response to query `id`; an error names NXDOMAIN, other rcodes or malformed answers.
Result<in_addr> parse_response(unsigned short id, const std::string& response);

// Numeric addresses, then the hosts file, then DNS. Blocks for at most the configured timeouts.
Result<in_addr> resolve_ipv4(const std::string& name, const ResolverConfig& config);
ResolverConfig system_resolver_config();  // /etc/resolv.conf and /etc/hosts

}  // namespace kubedist::launcher
