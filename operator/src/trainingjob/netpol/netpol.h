// Per-job network isolation (--network-policy-per-job), as an integration the act layer registers: each running
// job gets NetworkPolicy J, letting in its own pods only (facts.h, decide.h, render.h).
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "trainingjob/decide/integration.h"

namespace kubedist::trainingjob {

class NetworkPolicyIntegration final : public Integration {
 public:
  // extra_ingress: the rules each job's policy adds to its own pods' (check_ingress_rules has passed them).
  NetworkPolicyIntegration(bool enabled, nlohmann::json extra_ingress)
      : enabled_(enabled), extra_ingress_(std::make_shared<const nlohmann::json>(std::move(extra_ingress))) {}
  // With the flag: the NetworkPolicies carrying kubedist.io/job-name, each change queuing its job.
  Watches watches(const std::string& ns, const ServedResources& served) const override;
  std::string without() const override {
    return "jobs fail (NetworkPolicyUnavailable) until the operator may list, watch and create networkpolicies";
  }
  std::string found() const override { return "a NetworkPolicy per job (networking.k8s.io/v1)"; }
  std::vector<ConditionType> condition_types() const override { return {}; }
  // NetworkPolicyJobFacts (facts.h) for every job with the flag; null without.
  std::shared_ptr<const IntegrationFacts> observe(const TrainingJob& job, const Caches* caches) const override;

 private:
  const bool enabled_;
  const std::shared_ptr<const nlohmann::json> extra_ingress_;
};

}  // namespace kubedist::trainingjob
