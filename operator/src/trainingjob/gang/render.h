// What gang scheduling writes: a gang-scheduled job's Workload and PodGroup (scheduling.k8s.io), and its pods'
// membership of the PodGroup.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"
#include "trainingjob/gang/workload_api.h"

namespace kubedist::trainingjob {

// The gang size of the job's PodGroup, or nullopt when the job is not gang-scheduled (spec.scheduling.gang, else
// the operator's default): minReplicas, the fewest nodes the job can run on, so an elastic job still starts (and
// shrinks) down to it.
std::optional<int> gang_min_count(const TrainingJob& job, bool gang_by_default);

// Workload J, in the Workload API version api: the job's scheduling policy, one pod group template "nodes" with a
// gang of min_count. PodGroup J: its runtime instance, which every pod names in spec.schedulingGroup; it names the
// Workload's template as its version spells it (v1alpha2 spec.podGroupTemplateRef.workload, v1beta1
// spec.workloadRef).
nlohmann::json render_workload(const TrainingJob& job, int min_count, GangApi api);
nlohmann::json render_pod_group(const TrainingJob& job, int min_count, GangApi api);

// A gang-scheduled job's pod belongs to PodGroup J (spec.schedulingGroup).
void join_pod_group(const TrainingJob& job, nlohmann::json& pod);

}  // namespace kubedist::trainingjob
