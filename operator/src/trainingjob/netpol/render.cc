#include "trainingjob/netpol/render.h"

#include "trainingjob/render/render.h"

namespace kubedist::trainingjob {

nlohmann::json render_job_network_policy(const TrainingJob& job, const nlohmann::json& extra_ingress) {
  const nlohmann::json the_job = {{"matchLabels", {{kJobNameLabel, job.name}}}};
  nlohmann::json ingress = nlohmann::json::array({{{"from", {{{"podSelector", the_job}}}}}});
  if (extra_ingress.is_array()) {
    for (const auto& rule : extra_ingress) ingress.push_back(rule);
  }
  return {{"apiVersion", "networking.k8s.io/v1"},
          {"kind", "NetworkPolicy"},
          {"metadata", owned_metadata(job)},
          {"spec", {{"podSelector", the_job}, {"policyTypes", {"Ingress"}}, {"ingress", std::move(ingress)}}}};
}

std::optional<std::string> check_ingress_rules(const nlohmann::json& rules) {
  if (!rules.is_array()) return "not a JSON array";
  for (size_t i = 0; i < rules.size(); ++i) {
    const std::string at = "rule " + std::to_string(i);
    if (!rules[i].is_object()) return at + " is not an object";
    for (const auto& [field, value] : rules[i].items()) {
      if (field != "from" && field != "ports") return at + " has \"" + field + "\" (a rule has only from and ports)";
      if (!value.is_array()) return at + ": " + field + " is not an array";
      for (const auto& item : value) {
        if (!item.is_object()) return at + ": an item of " + field + " is not an object";
      }
    }
  }
  return std::nullopt;
}

}  // namespace kubedist::trainingjob
