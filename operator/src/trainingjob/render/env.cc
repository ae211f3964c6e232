#include "trainingjob/render/env.h"

#include <algorithm>

#include "contract/pod_env.h"

namespace kubedist::trainingjob {

using nlohmann::json;

std::string nnodes_value(const Spec& spec) {
  if (spec.min_replicas < spec.max_replicas) {
    return std::to_string(spec.min_replicas) + ":" + std::to_string(spec.max_replicas);
  }
  return std::to_string(spec.replicas);
}

std::vector<std::pair<std::string, std::string>> node_env(const TrainingJob& job, int rank) {
  using contract::pet_name;
  const std::string addr = master_addr(job.name, job.ns);
  const std::string port = std::to_string(job.spec.master_port);
  const std::string node_rank = std::to_string(rank);
  const std::string nnodes = nnodes_value(job.spec);
  const std::string nproc = job.spec.nproc_per_node.str();
  std::vector<std::pair<std::string, std::string>> env = {
      {contract::kMasterAddr, addr},
      {contract::kMasterPort, port},
      {contract::kNodeRank, node_rank},
      {contract::kNnodes, nnodes},
      {contract::kNprocPerNode, nproc},
      {contract::kJob, job.name},
      {pet_name(contract::kFlagMasterAddr), addr},
      {pet_name(contract::kFlagMasterPort), port},
      {pet_name(contract::kFlagNodeRank), node_rank},
      {pet_name(contract::kFlagNnodes), nnodes},
      {pet_name(contract::kFlagNprocPerNode), nproc},
      {pet_name(contract::kFlagMaxRestarts), std::to_string(job.spec.max_restarts)},
      {contract::kRestartPolicy, to_string(job.spec.restart_policy)},
  };
  // The launchers restart a group whose step stops advancing this long (the launcher's --hang-timeout).
  if (const auto hang = job.spec.hang_timeout_s) env.emplace_back(pet_name(contract::kFlagHangTimeout), std::to_string(*hang));
  // A spare pod (J-spare-<i>): its launcher waits in the rendezvous for a lost member's place (--spare).
  if (is_spare_rank(rank)) env.emplace_back(contract::kSpare, "1");
  return env;
}

long grace_seconds(const json& pod_spec) {
  const auto it = pod_spec.find("terminationGracePeriodSeconds");
  // Anything but a non-negative integer is the API server's to refuse when the pod is created.
  if (it != pod_spec.end() && it->is_number_integer() && it->get<long>() >= 0) return it->get<long>();
  return 30;  // Kubernetes' default
}

std::string launcher_stop_timeout(const json& pod_spec) {
  // The launcher takes no longer stop timeout.
  const long grace = std::min(grace_seconds(pod_spec), contract::kMaxDurationSeconds + 2);
  if (grace >= 4) return std::to_string(grace - 2);
  return grace % 2 == 0 ? std::to_string(grace / 2) : std::to_string(grace / 2) + ".5";
}

// Our variables win over user entries of the same name: the launcher's contract depends on them.
json trainer_env(const json& trainer, const TrainingJob& job, int rank, const PodOptions& options) {
  json ours = json::array();
  for (const auto& [k, v] : node_env(job, rank)) ours.push_back({{"name", k}, {"value", v}});
  const json& tmpl = *job.spec.template_;
  const json no_spec = json::object();
  const json& pod_spec = tmpl.is_object() && tmpl.contains("spec") && tmpl["spec"].is_object() ? tmpl["spec"] : no_spec;
  ours.push_back({{"name", contract::kStopTimeout}, {"value", launcher_stop_timeout(pod_spec)}});
  if (options.launcher_metrics_port > 0) {
    ours.push_back({{"name", contract::kMetricsPort}, {"value", std::to_string(options.launcher_metrics_port)}});
    // The pod's own address: in a pod it is where Prometheus scrapes, and it is the pod's alone.
    ours.push_back({{"name", contract::kMetricsAddr},
                    {"valueFrom", {{"fieldRef", {{"apiVersion", "v1"}, {"fieldPath", "status.podIP"}}}}}});
  }
  // The launcher of a failed job leaves one line (rank, host, exit, error) in the termination message file, which
  // the kubelet copies to the pod's terminated.message and the operator to status.lastFailure.
  const auto path = trainer.find("terminationMessagePath");
  ours.push_back({{"name", contract::kTerminationLog},
                  {"value", path != trainer.end() && path->is_string() && !path->get<std::string>().empty()
                                ? path->get<std::string>()
                                : std::string("/dev/termination-log")}});
  if (options.rdzv_secret) {
    ours.push_back({{"name", contract::kRdzvSecretFile},
                    {"value", options.job_rdzv_secret ? std::string(kRdzvSecretDir) + "/" + kRdzvSecretKey
                                                      : job_rdzv_secret_file()}});
    if (options.job_rdzv_secret && !options.rdzv_secret_fingerprint.empty())
      ours.push_back({{"name", contract::kRdzvSecretFingerprint}, {"value", options.rdzv_secret_fingerprint}});
  }
  if (const auto& c = job.spec.checkpoint) {  // render.cc mounts the claim there
    ours.push_back({{"name", contract::kCheckpointDir}, {"value", c->mount_path}});
    if (c->every_steps > 0) ours.push_back({{"name", contract::kCheckpointEverySteps}, {"value", std::to_string(c->every_steps)}});
    if (c->save_timeout_s > 0) ours.push_back({{"name", contract::kCheckpointTimeout}, {"value", std::to_string(c->save_timeout_s)}});
    ours.push_back({{"name", contract::kCheckpointKeep}, {"value", std::to_string(c->keep)}});
  }
  if (!job.spec.topology_key.empty() && options.topology_domains) {
    // render.cc's downward API volume: the node's domain, once the pod is bound
    ours.push_back({{"name", contract::kTopologyDomainFile},
                    {"value", std::string(kPodInfoDir) + "/" + kTopologyDomainFileName}});
  }
  json env = json::array();
  if (trainer.contains("env") && trainer["env"].is_array()) {
    for (const auto& e : trainer["env"]) {
      const std::string name = e.is_object() ? e.value("name", "") : "";
      bool overridden = false;
      for (const auto& o : ours) overridden = overridden || o["name"] == name;
      if (!overridden) env.push_back(e);
    }
  }
  for (auto& o : ours) env.push_back(std::move(o));
  return env;
}

}  // namespace kubedist::trainingjob
