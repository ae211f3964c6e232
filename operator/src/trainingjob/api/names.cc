#include "trainingjob/api/names.h"

namespace kubedist::trainingjob {

std::string pod_name(const std::string& job, int rank) { return job + "-node-" + std::to_string(rank); }

std::string rdzv_secret_name(const std::string& job) { return job + "-rdzv"; }

std::string master_addr(const std::string& job, const std::string& ns) {
  return pod_name(job, 0) + "." + job + "." + ns + ".svc";
}

}  // namespace kubedist::trainingjob
