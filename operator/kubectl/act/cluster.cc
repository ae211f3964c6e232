#include "kubectl/act/cluster.h"

#include "kube/config.h"

namespace kubedist::kubectl {

std::string Cluster::jobs_path() const {
  return "/apis/kubedist.io/v1alpha1/namespaces/" + ns + "/trainingjobs";
}
std::string Cluster::job_path(const std::string& job) const { return jobs_path() + "/" + job; }
std::string Cluster::pods_path(const std::string& query) const {
  return "/api/v1/namespaces/" + ns + "/pods" + (query.empty() ? "" : "?" + query);
}
std::string Cluster::config_maps_path(const std::string& query) const {
  return "/api/v1/namespaces/" + ns + "/configmaps" + (query.empty() ? "" : "?" + query);
}

Result<Cluster> connect(const ClusterOptions& options) {
  auto cfg = kube::load_default_config(options.kubeconfig, options.context);
  if (!cfg) {
    return Error::invalid("no usable kubeconfig: " + cfg.error().message +
                          " (set KUBECONFIG, pass --kubeconfig FILE, or write ~/.kube/config)");
  }
  if (cfg->server.empty()) return Error::invalid("the kubeconfig names no API server: set its cluster's server");
  // Fail fast: a person waits for this answer, the operator's patient retries would only delay it.
  auto client = kube::Client::create(*cfg, kube::RetryPolicy{2, std::chrono::milliseconds(200),
                                                             std::chrono::milliseconds(500)});
  if (!client) return Error::invalid(client.error().message);
  (*client)->set_user_agent("kubectl-kubedist/0.1");
  Cluster c;
  c.server = cfg->server;
  c.ns = options.ns.empty() ? (cfg->namespace_.empty() ? "default" : cfg->namespace_) : options.ns;
  c.client = std::move(*client);
  return c;
}

Error explain(const Cluster& cluster, const Error& e, const std::string& doing) {
  if (e.kind == Error::Kind::kRetryable && e.http_status == 0) {
    return Error::invalid("cannot reach the cluster at " + cluster.server + " (" + e.message +
                          "): is it up, and is KUBECONFIG the right one?");
  }
  if (e.kind == Error::Kind::kForbidden) {
    return Error{e.kind, doing + ": forbidden (" + e.message + "): ask for RBAC on trainingjobs, pods, pods/log and "
                         "configmaps in namespace " + cluster.ns, e.http_status};
  }
  return Error{e.kind, doing + ": " + e.message, e.http_status};
}

Result<void> preflight(Cluster& cluster) {
  auto crd = cluster.client->get(cluster.jobs_path() + "?limit=1");
  if (!crd) {
    if (crd.error().kind == Error::Kind::kNotFound) {
      // A 404 on a collection: either the resource is not served at all, or (rarely) the namespace path is odd.
      auto group = cluster.client->get("/apis/kubedist.io/v1alpha1");
      if (!group || !group->contains("resources")) {
        return Error::invalid("the cluster at " + cluster.server + " does not serve TrainingJobs: install kubedist "
                              "first (helm install kubedist helm/kubedist, or kubectl apply -f "
                              "crd/kubedist.io_trainingjobs.yaml)");
      }
    }
    return explain(cluster, crd.error(), "listing TrainingJobs in " + cluster.ns);
  }
  auto ns = cluster.client->get("/api/v1/namespaces/" + cluster.ns);
  if (!ns && ns.error().kind == Error::Kind::kNotFound) {
    return Error::invalid("namespace " + cluster.ns + " does not exist: kubectl create namespace " + cluster.ns +
                          ", or pick another with -n");
  }
  return {};  // a namespace we may not read (403) may still take jobs: the create will tell
}

Result<nlohmann::json> get_job(Cluster& cluster, const std::string& job) {
  auto r = cluster.client->get(cluster.job_path(job));
  if (!r && r.error().kind == Error::Kind::kNotFound) {
    return Error{Error::Kind::kNotFound, "no TrainingJob " + job + " in namespace " + cluster.ns +
                                             " (kubectl kubedist list -n " + cluster.ns + ")", 404};
  }
  if (!r) return explain(cluster, r.error(), "reading TrainingJob " + job);
  return r;
}

}  // namespace kubedist::kubectl
