#include "trainingjob/env.h"

namespace kubedist::trainingjob {

std::string nnodes_value(const Spec& spec) {
  if (spec.min_replicas < spec.max_replicas) {
    return std::to_string(spec.min_replicas) + ":" + std::to_string(spec.max_replicas);
  }
  return std::to_string(spec.replicas);
}

std::string master_addr(const TrainingJob& job) {
  return job.name + "-node-0." + job.name + "." + job.ns + ".svc";
}

std::vector<std::pair<std::string, std::string>> node_env(const TrainingJob& job, int rank) {
  const std::string addr = master_addr(job);
  const std::string port = std::to_string(job.spec.master_port);
  const std::string node_rank = std::to_string(rank);
  const std::string nnodes = nnodes_value(job.spec);
  const std::string nproc = job.spec.nproc_per_node.str();
  return {
      {"MASTER_ADDR", addr},
      {"MASTER_PORT", port},
      {"NODE_RANK", node_rank},
      {"NNODES", nnodes},
      {"NPROC_PER_NODE", nproc},
      {"KUBEDIST_JOB", job.name},
      {"PET_MASTER_ADDR", addr},
      {"PET_MASTER_PORT", port},
      {"PET_NODE_RANK", node_rank},
      {"PET_NNODES", nnodes},
      {"PET_NPROC_PER_NODE", nproc},
      {"PET_MAX_RESTARTS", std::to_string(job.spec.max_restarts)},
      {"KUBEDIST_RESTART_POLICY", to_string(job.spec.restart_policy)},
  };
}

}  // namespace kubedist::trainingjob
