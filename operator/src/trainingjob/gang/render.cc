#include "trainingjob/gang/render.h"

#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

json gang_policy(int min_count) { return {{"gang", {{"minCount", min_count}}}}; }

}  // namespace

std::optional<int> gang_min_count(const TrainingJob& job, bool gang_by_default) {
  const auto asked = job.spec.scheduling.find("gang");
  if (!(asked != job.spec.scheduling.end() ? asked->second : gang_by_default)) return std::nullopt;
  return job.spec.min_replicas;
}

json render_workload(const TrainingJob& job, int min_count, GangApi api) {
  return {{"apiVersion", gang_api_version(api)},
          {"kind", "Workload"},
          {"metadata", owned_metadata(job)},
          {"spec",
           {{"controllerRef", {{"apiGroup", kGroup}, {"kind", kKind}, {"name", job.name}}},
            {"podGroupTemplates", json::array({{{"name", "nodes"}, {"schedulingPolicy", gang_policy(min_count)}}})}}}};
}

json render_pod_group(const TrainingJob& job, int min_count, GangApi api) {
  json spec = {{"schedulingPolicy", gang_policy(min_count)}};
  if (api == GangApi::kV1Beta1) {
    spec["workloadRef"] = {{"workloadName", job.name}, {"templateName", "nodes"}};
  } else {
    spec["podGroupTemplateRef"] = {{"workload", {{"workloadName", job.name}, {"podGroupTemplateName", "nodes"}}}};
  }
  return {{"apiVersion", gang_api_version(api)}, {"kind", "PodGroup"}, {"metadata", owned_metadata(job)}, {"spec", spec}};
}

void join_pod_group(const TrainingJob& job, json& pod) { pod["spec"]["schedulingGroup"] = {{"podGroupName", job.name}}; }

}  // namespace kubedist::trainingjob
