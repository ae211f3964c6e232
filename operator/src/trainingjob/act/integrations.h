// The act layer's side of the integrations (decide/integration.h): watching the kinds each needs, where the
// cluster serves them and the operator may list them, and handing their caches to each integration's observe().
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "controller/manager.h"
#include "kube/client.h"
#include "kube/informer.h"
#include "trainingjob/decide/integration.h"

namespace kubedist::trainingjob {

// An integration as the reconciler observes it: with its caches, or none (it cannot work here, or watches nothing).
struct ObservedIntegration {
  const Integration* integration = nullptr;
  const Caches* caches = nullptr;
};

// The caches of one integration's kinds, by resource.
class IntegrationCaches final : public Caches {
 public:
  void add(const std::string& resource, const kube::Informer<AnyFacts>* informer) { informers_[resource] = informer; }
  std::optional<AnyFacts> get(const std::string& resource, const std::string& key) const override;
  std::vector<AnyFacts> all(const std::string& resource) const override;

 private:
  std::map<std::string, const kube::Informer<AnyFacts>*> informers_;
};

class WatchedIntegrations {
 public:
  explicit WatchedIntegrations(std::vector<std::unique_ptr<Integration>> integrations)
      : integrations_(std::move(integrations)) {}

  // The condition types the status reader keeps: the core's and every integration's.
  std::vector<ConditionType> condition_types() const;
  // Registers each integration's informers with mgr (namespace ns, "" = all) where the API server serves its kinds
  // and the operator may list them; logs why not, and what that means, for the others.
  void watch(controller::Manager& mgr, kube::Client& api, const std::string& ns);
  // Each integration with its caches (none where it watches nothing), in registration order.
  std::vector<ObservedIntegration> observed() const;

 private:
  std::vector<std::unique_ptr<Integration>> integrations_;
  std::map<const Integration*, IntegrationCaches> caches_;
};

}  // namespace kubedist::trainingjob
