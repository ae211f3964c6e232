#include "trainingjob/gang/facts.h"

#include "trainingjob/api/facts.h"
#include "trainingjob/api/json_fields.h"

namespace kubedist::trainingjob {

using nlohmann::json;

PodGroupFacts parse_pod_group_facts(const json& pg) {
  PodGroupFacts f;
  const json md = pg.value("metadata", json::object());
  f.ns = string_at(md, "namespace");
  f.name = string_at(md, "name");
  f.owner_uid = controller_uid(pg);
  const json spec = pg.value("spec", json::object());
  const json policy = spec.is_object() ? spec.value("schedulingPolicy", json::object()) : json::object();
  const json gang = policy.is_object() ? policy.value("gang", json::object()) : json::object();
  if (gang.is_object() && gang.contains("minCount") && gang["minCount"].is_number_integer()) {
    f.min_count = gang["minCount"].get<int>();
  }
  const json st = pg.value("status", json::object());
  if (auto conds = st.find("conditions"); conds != st.end() && conds->is_array()) {
    for (const auto& c : *conds) {
      // v1alpha2's PodGroupScheduled; v1beta1's PodGroupInitiallyScheduled, which stays True once placed.
      const std::string type = c.is_object() ? string_at(c, "type") : "";
      if (type != "PodGroupScheduled" && type != "PodGroupInitiallyScheduled") continue;
      f.scheduled = string_at(c, "status");
      f.reason = string_at(c, "reason");
      f.message = first_line(string_at(c, "message"), kMaxTerminationMessage);
    }
  }
  return f;
}

}  // namespace kubedist::trainingjob
