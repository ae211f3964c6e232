#include "trainingjob/act/integrations.h"

#include "common/log.h"

namespace kubedist::trainingjob {
namespace {

// The resources the API server serves at a group version, from its discovery document.
ServedResources discovery(kube::Client& api) {
  return [&api](const std::string& group_version_path) -> std::optional<std::vector<std::string>> {
    auto r = api.get(group_version_path);
    if (!r) return std::nullopt;
    std::vector<std::string> names;
    for (const auto& res : r->value("resources", nlohmann::json::array())) {
      if (res.is_object() && res.contains("name") && res["name"].is_string()) names.push_back(res["name"]);
    }
    return names;
  };
}

}  // namespace

std::optional<AnyFacts> IntegrationCaches::get(const std::string& resource, const std::string& key) const {
  auto it = informers_.find(resource);
  return it != informers_.end() ? it->second->get(key) : std::nullopt;
}

std::vector<AnyFacts> IntegrationCaches::all(const std::string& resource) const {
  auto it = informers_.find(resource);
  // A kind without a job key indexes every object under "".
  return it != informers_.end() ? it->second->by_index("") : std::vector<AnyFacts>{};
}

std::vector<ConditionType> WatchedIntegrations::condition_types() const {
  std::vector<ConditionType> types = core_condition_types();
  for (const auto& integration : integrations_) {
    for (const auto& t : integration->condition_types()) types.push_back(t);
  }
  return types;
}

void WatchedIntegrations::watch(controller::Manager& mgr, kube::Client& api, const std::string& ns) {
  const ServedResources served = discovery(api);
  for (const auto& integration : integrations_) {
    const Watches watches = integration->watches(ns, served);
    std::string why = watches.unavailable;
    // An informer that may not list would never sync and keep the operator from ever starting.
    for (const auto& kind : watches.kinds) {
      if (!why.empty()) break;
      auto list = api.get(kind.path + "?limit=1");
      if (!list) {
        why = "the operator may not list " + kind.resource + " (HTTP " + std::to_string(list.error().http_status) + ")";
      }
    }
    if (!why.empty()) {
      const std::string line = why + ": " + integration->without();
      const bool not_installed = !watches.unavailable.empty() && !watches.warn;  // an add-on simply not there
      not_installed ? log_info("manager", line) : log_warn("manager", line);
      continue;
    }
    if (watches.kinds.empty()) continue;
    if (const std::string found = integration->found(); !found.empty()) log_info("manager", found);
    IntegrationCaches& caches = caches_[integration.get()];
    for (const auto& kind : watches.kinds) {
      const kube::InformerOptions options{kind.path, kind.label_selector};
      const kube::Informer<AnyFacts>* informer =
          kind.job_key ? &mgr.owns<AnyFacts>(options, kind.parse, kind.job_key)
                       : &mgr.watches<AnyFacts>(options, kind.parse, [](const AnyFacts&) { return std::string(); },
                                                mgr.enqueue_all());
      caches.add(kind.resource, informer);
    }
  }
}

std::vector<ObservedIntegration> WatchedIntegrations::observed() const {
  std::vector<ObservedIntegration> out;
  for (const auto& integration : integrations_) {
    auto it = caches_.find(integration.get());
    out.push_back({integration.get(), it != caches_.end() ? &it->second : nullptr});
  }
  return out;
}

}  // namespace kubedist::trainingjob
