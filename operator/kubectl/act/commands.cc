#include "kubectl/act/commands.h"

#include <ostream>

#include "kube/client.h"
#include "kubectl/act/cluster.h"
#include "kubectl/act/follow.h"
#include "kubectl/act/report.h"
#include "kubectl/render/job.h"

namespace kubedist::kubectl {
namespace {

using nlohmann::json;

int fail(std::ostream& err, const Error& e) {
  err << "kubectl-kubedist: " << e.message << "\n";
  return 1;
}

Result<Cluster> ready_cluster(const JobOptions& o) {
  auto c = connect(o.cluster);
  if (!c) return c.error();
  if (auto r = preflight(*c); !r) return r.error();
  return c;
}

}  // namespace

int logs_command(const JobOptions& o, const std::atomic<bool>& interrupted, std::ostream& out, std::ostream& err) {
  auto c = ready_cluster(o);
  if (!c) return fail(err, c.error());
  if (!o.follow) {
    auto r = print_logs(*c, o.job, o.node, out);
    return r ? 0 : fail(err, r.error());
  }
  auto r = follow_job(*c, o.job, FollowOptions{o.node, true}, interrupted, out);
  if (!r) return fail(err, r.error());
  if (r->interrupted) return 130;
  out << final_report(r->job, r->max_world_size);
  return exit_code_for(r->job);
}

int status_command(const JobOptions& o, std::ostream& out, std::ostream& err) {
  auto c = ready_cluster(o);
  if (!c) return fail(err, c.error());
  auto job = get_job(*c, o.job);
  if (!job) return fail(err, job.error());
  auto pods = c->client->get(c->pods_path("labelSelector=" + kube::query_escape("kubedist.io/job-name=" + o.job)));
  if (!pods) return fail(err, explain(*c, pods.error(), "listing the pods of " + o.job));
  std::vector<json> items((*pods)["items"].begin(), (*pods)["items"].end());
  out << status_report(*job, items, now_unix());
  return 0;
}

int list_command(const JobOptions& o, std::ostream& out, std::ostream& err) {
  auto c = ready_cluster(o);
  if (!c) return fail(err, c.error());
  auto jobs = c->client->get(c->jobs_path());
  if (!jobs) return fail(err, explain(*c, jobs.error(), "listing TrainingJobs"));
  std::vector<json> items((*jobs)["items"].begin(), (*jobs)["items"].end());
  if (items.empty()) {
    out << "no TrainingJobs in namespace " << c->ns << "\n";
    return 0;
  }
  out << list_table(items, now_unix());
  return 0;
}

int delete_command(const JobOptions& o, std::ostream& out, std::ostream& err) {
  auto c = ready_cluster(o);
  if (!c) return fail(err, c.error());
  auto r = c->client->remove(c->job_path(o.job), json{{"propagationPolicy", "Background"}});
  bool deleted = r.ok();
  if (!r && r.error().kind != Error::Kind::kNotFound) return fail(err, explain(*c, r.error(), "deleting " + o.job));
  auto cms = c->client->get(c->config_maps_path("labelSelector=" + kube::query_escape(std::string(kWorkdirLabel) + "=" + o.job)));
  if (cms) {
    for (const auto& cm : (*cms)["items"]) {
      auto d = c->client->remove(c->config_maps_path().substr(0) + "/" + cm["metadata"].value("name", ""));
      deleted = deleted || d.ok();
    }
  }
  if (!deleted) {
    return fail(err, Error::invalid("no TrainingJob " + o.job + " in namespace " + c->ns + " (kubectl kubedist list -n " +
                                    c->ns + ")"));
  }
  out << "trainingjob.kubedist.io/" << o.job << " deleted from " << c->ns << "\n";
  return 0;
}

}  // namespace kubedist::kubectl
