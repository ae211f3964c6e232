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

}  // namespace kubedist::trainingjob
