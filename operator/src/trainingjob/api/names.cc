#include "trainingjob/api/names.h"

#include <regex>

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

bool is_label_value(const std::string& s) { return s.empty() || contract::is_topology_domain(s); }

bool is_label_key(const std::string& s) {
  const auto slash = s.find('/');
  const std::string name = slash == std::string::npos ? s : s.substr(slash + 1);
  if (name.empty() || !is_label_value(name)) return false;
  if (slash == std::string::npos) return true;
  static const std::regex prefix("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  return slash <= 253 && std::regex_match(s.substr(0, slash), prefix);
}

}  // namespace kubedist::trainingjob
