#include "kubectl/act/run.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "kube/client.h"
#include "kube/config.h"
#include "kubectl/act/cluster.h"
#include "kubectl/act/follow.h"
#include "kubectl/act/report.h"
#include "kubectl/render/terminal_safe.h"
#include "kubectl/render/workdir.h"

namespace kubedist::kubectl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string kib(size_t bytes) { return std::to_string((bytes + 1023) / 1024) + " KiB"; }

// The namespace for --dry-run: -n, else none (kubectl apply puts the objects in its own current namespace).
std::string dry_run_namespace(const RunOptions& o) { return o.cluster.ns; }

// The notes, then what is shipped: on stderr, so that stdout stays the objects (--dry-run) or the job's lines.
void print_plan(const RunPlan& plan, std::ostream& err) {
  for (const auto& n : plan.notes) err << "kubectl-kubedist: " << n << "\n";
  for (const auto& l : plan.shipment) err << (l.rfind("  ", 0) == 0 ? "" : "kubectl-kubedist: ") << l << "\n";
  err << std::flush;
}

}  // namespace

int run_command(const RunOptions& o, const std::atomic<bool>& interrupted, std::ostream& out, std::ostream& err) {
  auto fail = [&](const Error& e) {
    err << "kubectl-kubedist: " << e.message << "\n";
    return 1;
  };
  const std::string cwd = fs::current_path().string();

  if (o.dry_run) {
    auto plan = plan_run(o, cwd, dry_run_namespace(o));
    if (!plan) return fail(plan.error());
    print_plan(*plan, err);
    std::vector<json> docs = {plan->rendered.job};
    for (const auto& cm : plan->rendered.config_maps) docs.push_back(cm);
    if (o.output == "json") {
      out << json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", docs}}).dump(2) << "\n";
    } else {
      out << to_yaml(docs);
    }
    return 0;
  }

  auto cluster = connect(o.cluster);
  if (!cluster) return fail(cluster.error());
  // Everything that can be checked without the cluster is, before the first request.
  auto plan = plan_run(o, cwd, cluster->ns);
  if (!plan) return fail(plan.error());
  if (auto r = preflight(*cluster); !r) return fail(r.error());
  print_plan(*plan, err);  // before the first object is created

  const std::string name = plan->inputs.name;
  auto created = cluster->client->create(cluster->jobs_path(), plan->rendered.job);
  if (!created) {
    if (created.error().kind == Error::Kind::kAlreadyExists) {
      return fail(Error::invalid("a TrainingJob named " + name + " already exists in " + cluster->ns +
                                 ": pick another --name, or kubectl kubedist delete " + name));
    }
    return fail(explain(*cluster, created.error(), "creating TrainingJob " + name));
  }
  for (const auto& cm : plan->rendered.config_maps) {
    auto r = cluster->client->create(cluster->config_maps_path(), owned_by_job(cm, *created));
    if (!r) {
      // The job would wait for its code forever: take it back (its owned ConfigMaps go with it).
      (void)cluster->client->remove(cluster->job_path(name), json{{"propagationPolicy", "Background"}});
      const std::string cm_name = cm["metadata"]["name"];
      if (r.error().kind == Error::Kind::kAlreadyExists) {
        return fail(Error::invalid("ConfigMap " + cm_name + " already exists in " + cluster->ns +
                                   " (from an earlier --dry-run apply?): kubectl kubedist delete " + name +
                                   ", or pick another --name"));
      }
      return fail(explain(*cluster, r.error(), "creating ConfigMap " + cm_name + " (the job was deleted again)"));
    }
  }
  const json& spec = plan->rendered.job["spec"];
  out << "trainingjob.kubedist.io/" << name << " created in " << cluster->ns << ": " << spec["replicas"].dump()
      << (spec.contains("minReplicas") ? " (elastic " + spec["minReplicas"].dump() + ".." + spec["replicas"].dump() + ")"
                                       : "")
      << " node(s) x " << spec["nprocPerNode"].dump() << " process(es), image " << plan->inputs.image;
  if (!plan->workdir.empty()) {
    out << ", " << terminal_safe(plan->workdir) << " shipped (" << plan->files << " files, " << kib(plan->bytes)
        << " in " << plan->rendered.config_maps.size() << " ConfigMap"
        << (plan->rendered.config_maps.size() > 1 ? "s" : "") << ")";
  }
  out << "\n" << std::flush;
  const std::string ns_flag = " -n " + cluster->ns;
  if (o.detach) {
    out << "follow it: kubectl kubedist logs " << name << " -f" << ns_flag << "; its state: kubectl kubedist status "
        << name << ns_flag << "\n";
    return 0;
  }
  auto followed = follow_job(*cluster, name, FollowOptions{}, interrupted, out);
  if (!followed) return fail(followed.error());
  if (followed->interrupted) {
    err << "\nkubectl-kubedist: detached; tj/" << name << " keeps running. Follow it again: kubectl kubedist logs "
        << name << " -f" << ns_flag << "; its state: kubectl kubedist status " << name << ns_flag
        << "; stop it: kubectl kubedist delete " << name << ns_flag << "\n";
    return 130;
  }
  out << final_report(followed->job, followed->max_world_size) << std::flush;
  return exit_code_for(followed->job);
}

}  // namespace kubedist::kubectl
