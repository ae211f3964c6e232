#include "trainingjob/netpol/decide.h"

#include "trainingjob/netpol/render.h"

namespace kubedist::trainingjob {
namespace {

class NetworkPolicyHook final : public Hook {
 public:
  explicit NetworkPolicyHook(const NetworkPolicyJobFacts& facts) : facts_(facts) {}
  std::optional<Ending> prepare(DecideState& s) const override { return decide_network_policy(s, facts_); }

 private:
  const NetworkPolicyJobFacts& facts_;
};

}  // namespace

std::unique_ptr<Hook> NetworkPolicyJobFacts::hook(const TrainingJob&) const {
  return std::make_unique<NetworkPolicyHook>(*this);
}

std::optional<Ending> decide_network_policy(DecideState& s, const NetworkPolicyJobFacts& facts) {
  if (!facts.api) {
    return Ending{false, "NetworkPolicyUnavailable",
                  "the operator runs with --network-policy-per-job but may not list and watch NetworkPolicies "
                  "(networking.k8s.io): without NetworkPolicy " + s.job.name + " the job's pods would run open to "
                  "every pod of the cluster; grant it list, watch and create on networkpolicies, or turn the flag "
                  "off"};
  }
  if (facts.policy && facts.policy->owner_uid != s.job.uid) {
    return Ending{false, "NetworkPolicyConflict",
                  "NetworkPolicy " + s.job.name + " exists but is not this job's: delete it or rename the job"};
  }
  if (!facts.policy) {
    const nlohmann::json none = nlohmann::json::array();
    s.write({Write::Verb::kCreate, "NetworkPolicy", s.job.name,
             "/apis/networking.k8s.io/v1/namespaces/" + s.job.ns + "/networkpolicies",
             render_job_network_policy(s.job, facts.extra_ingress ? *facts.extra_ingress : none)});
  }
  return std::nullopt;
}

}  // namespace kubedist::trainingjob
