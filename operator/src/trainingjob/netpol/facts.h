// What per-job network isolation reads: the job's own NetworkPolicy (networking.k8s.io/v1), and its facts about a
// job for decide().
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"
#include "trainingjob/decide/hook.h"

namespace kubedist::trainingjob {

// What the operator needs to know of NetworkPolicy J: that it exists and who controls it. Its rules are not
// compared: whoever may edit it may as well add a policy of their own, and NetworkPolicies only add to each other.
struct NetworkPolicyFacts {
  std::string ns;
  std::string name;
  std::string owner_uid;
  bool operator==(const NetworkPolicyFacts&) const = default;
};

NetworkPolicyFacts parse_network_policy_facts(const nlohmann::json& policy);
inline std::string job_key_of(const NetworkPolicyFacts& p) { return p.ns + "/" + p.name; }

// Per-job isolation's facts about one job (decide/hook.h).
struct NetworkPolicyJobFacts final : IntegrationFacts {
  bool api = false;  // the operator watches NetworkPolicies (it may list them)
  std::optional<NetworkPolicyFacts> policy;  // NetworkPolicy J, when it exists
  // The rules every job's policy adds to its own pods' (--network-policy-ingress); null: none.
  std::shared_ptr<const nlohmann::json> extra_ingress;
  std::unique_ptr<Hook> hook(const TrainingJob& job) const override;
};

}  // namespace kubedist::trainingjob
