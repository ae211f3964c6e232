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
  if (!config.multi_node()) return config.rdzv_endpoint_given;
  return !config.node_rank_given;
}

HostingPlan plan_hosting(const LaunchConfig& config, bool endpoint_is_local) {
  HostingPlan plan;
  plan.node_rank = config.node_rank;
  if (!config.multi_node()) {
    plan.host = true;
    if (config.rdzv_endpoint_given) plan.store_address = endpoint_is_local ? config.rdzv_host : "127.0.0.1";
    return plan;
  }
  plan.host = config.node_rank_given ? config.node_rank == 0 : endpoint_is_local;
  plan.listen = plan.host;
  if (plan.listen && is_loopback_ipv4(config.rdzv_host)) plan.bind_address = config.rdzv_host;
  plan.must_bind = plan.listen && config.node_rank_given;
  // Without --master-addr the other nodes' workers could only guess 127.0.0.1: each round names the store.
  // --local-addr is where the other nodes reach this one (torchrun's node address in the rendezvous).
  if (plan.listen) plan.store_address = config.local_addr.empty() ? config.rdzv_host : config.local_addr;
  if (!config.node_rank_given) plan.node_rank = plan.host ? 0 : 1;
  return plan;
}

}  // namespace kubedist::launcher
