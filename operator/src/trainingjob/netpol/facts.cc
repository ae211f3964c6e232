#include "trainingjob/netpol/facts.h"

#include "trainingjob/api/facts.h"
#include "trainingjob/api/json_fields.h"

namespace kubedist::trainingjob {

NetworkPolicyFacts parse_network_policy_facts(const nlohmann::json& policy) {
  NetworkPolicyFacts f;
  const nlohmann::json md = policy.value("metadata", nlohmann::json::object());
  f.ns = string_at(md, "namespace");
  f.name = string_at(md, "name");
  f.owner_uid = controller_uid(policy);
  return f;
}

}  // namespace kubedist::trainingjob
