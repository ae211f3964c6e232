#include "rendezvous/hosting.h"

#include "io/net.h"

namespace kubedist::launcher {
namespace {

// A literal 127.x.y.z (a name is not looked up here).
bool is_loopback_ipv4(const std::string& host) {
  auto ip = parse_ipv4(host);
  return ip && (ntohl(ip->s_addr) >> 24) == 127;
}

}  // namespace

bool hosting_depends_on_endpoint(const LaunchConfig& config) {
  return config.multi_node() && !config.node_rank_given;
}

HostingPlan plan_hosting(const LaunchConfig& config, bool endpoint_is_local) {
  HostingPlan plan;
  plan.host = hosting_depends_on_endpoint(config) ? endpoint_is_local : config.node_rank == 0;
  plan.listen = plan.host && config.multi_node();
  if (plan.listen && is_loopback_ipv4(config.rdzv_host)) plan.bind_address = config.rdzv_host;
  plan.must_bind = plan.listen && config.node_rank_given;
  return plan;
}

int node_rank_for_round(const LaunchConfig& config, const HostingPlan& plan, bool hosting) {
  if (config.node_rank_given || hosting) return config.node_rank;
  return plan.host ? 0 : 1;
}

}  // namespace kubedist::launcher
