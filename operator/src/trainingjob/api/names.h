// The names of a job's objects and the address its nodes find node 0 at: J-node-<rank>, J-rdzv, J-node-0.J.NS.svc.
#pragma once

#include <string>

namespace kubedist::trainingjob {

// Pod J-node-<rank>, also its hostname (the headless Service J is its subdomain); a spare's (a rank from
// contract::kSpareNodeRankBase on) is J-spare-<rank - base>.
std::string pod_name(const std::string& job, int rank);
bool is_spare_rank(int rank);
std::string rdzv_secret_name(const std::string& job);  // J-rdzv
// J-node-0.J.NS.svc: resolvable through the headless Service J once node 0 has an IP.
std::string master_addr(const std::string& job, const std::string& ns);

// A label's key ([prefix/]name) and value, by Kubernetes' rules: spec.placement.topologyKey, the kubectl plugin's
// node selectors. A non-empty value is contract::is_topology_domain's grammar.
bool is_label_key(const std::string& s);
bool is_label_value(const std::string& s);

}  // namespace kubedist::trainingjob
