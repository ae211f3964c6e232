#include "trainingjob/api/names.h"

#include "contract/pod_env.h"

namespace kubedist::trainingjob {

std::string pod_name(const std::string& job, int rank) {
  if (is_spare_rank(rank)) return job + "-spare-" + std::to_string(rank - contract::kSpareNodeRankBase);
  return job + "-node-" + std::to_string(rank);
}

bool is_spare_rank(int rank) { return rank >= contract::kSpareNodeRankBase; }

std::string rdzv_secret_name(const std::string& job) { return job + "-rdzv"; }

std::string master_addr(const std::string& job, const std::string& ns) {
  return pod_name(job, 0) + "." + job + "." + ns + ".svc";
}

}  // namespace kubedist::trainingjob
