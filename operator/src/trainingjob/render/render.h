// Pure rendering of the objects the operator owns for a TrainingJob: its headless Service and node pods.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "contract/pod_env.h"
#include "trainingjob/api/names.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

inline constexpr const char* kDefaultLauncherImage = "ghcr.io/kubedist/launcher:0.1.0";
inline constexpr const char* kLauncherPath = "/kubedist/bin/kubedist-launcher";
inline constexpr int kDefaultLauncherMetricsPort = 9402;
inline constexpr int kLauncherUser = 65532;  // the uid and gid the launcher init container runs as

// What every pod gets from the operator's configuration rather than from the job.
struct PodOptions {
  std::string launcher_image = kDefaultLauncherImage;
  int launcher_metrics_port = kDefaultLauncherMetricsPort;  // 0: the launchers serve no /metrics
  bool gang_by_default = false;  // jobs that leave spec.scheduling.gang unset are gang-scheduled
  // The launcher signs its rendezvous: the init container derives the job's secret from the namespace's Secret
  // kubedist-rendezvous (mounted there only) into the trainer's emptyDir, and the launcher is pointed at it.
  bool rdzv_secret = false;
  // With rdzv_secret: instead mount the job's own Secret J-rdzv into the trainer (a job an earlier operator
  // started with a Secret of its own, whose running pods sign with it).
  bool job_rdzv_secret = false;
};

inline constexpr const char* kRdzvSecretDir = "/kubedist/rdzv";  // the trainer's read-only mount of Secret J-rdzv
inline constexpr const char* kRdzvSecretKey = "secret";  // a rendezvous Secret's one key
inline constexpr const char* kNamespaceRdzvDir = "/kubedist/rendezvous";  // the init container's mount of it
// The job's secret as the init container derives it into the emptyDir the trainer mounts at /kubedist/bin.
inline std::string job_rdzv_secret_file() { return std::string("/kubedist/bin/") + contract::kJobSecretFileName; }

// The Workload API's group/version (Workloads and PodGroups), and the path its namespaced objects live under.
inline constexpr const char* kGangApiVersion = "scheduling.k8s.io/v1alpha2";
inline std::string gang_api_path() { return std::string("/apis/") + kGangApiVersion; }

// The gang size of the job's PodGroup, or nullopt when the job is not gang-scheduled (spec.scheduling.gang, else
// the operator's default): minReplicas, the fewest nodes the job can run on, so an elastic job still starts (and
// shrinks) down to it.
std::optional<int> gang_min_count(const TrainingJob& job, bool gang_by_default);

// Workload J (scheduling.k8s.io/v1alpha2): the job's scheduling policy, one pod group template "nodes" with a gang
// of min_count. PodGroup J: its runtime instance, which every pod names in spec.schedulingGroup.
nlohmann::json render_workload(const TrainingJob& job, int min_count);
nlohmann::json render_pod_group(const TrainingJob& job, int min_count);

// Secret kubedist-rendezvous of namespace ns: the secret each job's rendezvous secret is derived from (contract/
// signed_line.h), which signs the job's rendezvous lines (launcher-sidecar/src/rendezvous/auth.h) so that only the
// job's pods and the operator can join, leave or read it. secret: its text (random hex). Owned by nothing: it
// serves every job of the namespace, present and future, and one write serves them all.
nlohmann::json render_namespace_rdzv_secret(const std::string& ns, const std::string& secret);

// Service J: headless, publishes not-ready addresses (rendezvous starts before readiness), selects the job's pods.
nlohmann::json render_service(const TrainingJob& job);

// Pod J-node-<rank>: the user's template plus the launcher init container, the wrapped trainer command,
// the node env, hostname/subdomain for DNS, labels, the controller owner reference and restartPolicy Never.
// A gang-scheduled job's pods belong to PodGroup J (spec.schedulingGroup).
// With a launcher metrics port the launcher serves /metrics on the pod's IP there (port "kd-metrics"). With
// rdzv_secret, Secret J-rdzv is mounted read-only into the trainer and named by KUBEDIST_RDZV_SECRET_FILE.
// Requires a job without spec_error.
nlohmann::json render_pod(const TrainingJob& job, int rank, const PodOptions& options);

// The owner reference every object of the job carries (controller, blockOwnerDeletion).
nlohmann::json owner_reference(const TrainingJob& job);

}  // namespace kubedist::trainingjob
