#include "kubectl/act/run.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "kube/client.h"
#include "kube/config.h"
#include "kubectl/act/cluster.h"
#include "kubectl/act/follow.h"
#include "kubectl/act/report.h"
#include "kubectl/render/workdir.h"

namespace kubedist::kubectl {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::optional<std::string> read_local(const std::string& cwd, const std::string& path) {
  std::ifstream in(fs::path(cwd) / path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string random_suffix() {
  static const char* alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::random_device rd;
  std::string s;
  for (int i = 0; i < 5; ++i) s += alphabet[rd() % 36];
  return s;
}

std::string kib(size_t bytes) { return std::to_string((bytes + 1023) / 1024) + " KiB"; }

// The namespace for --dry-run: -n, else none (kubectl apply puts the objects in its own current namespace).
std::string dry_run_namespace(const RunOptions& o) { return o.cluster.ns; }

}  // namespace

std::string default_job_name(const std::string& program, const std::string& suffix) {
  std::string stem = fs::path(program).stem().string();
  if (const auto dot = stem.rfind('.'); dot != std::string::npos) stem = stem.substr(dot + 1);  // pkg.train
  std::string out;
  for (char c : stem) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) out += l;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty() || !(out[0] >= 'a' && out[0] <= 'z')) out = "job" + (out.empty() ? "" : "-" + out);
  if (out.size() > 40) out.resize(40);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out + "-" + suffix;
}

Result<RunPlan> plan_run(const RunOptions& o, const std::string& cwd, const std::string& ns) {
  RunPlan plan;
  auto cmd = parse_training_command(o.command, [&](const std::string& p) { return read_local(cwd, p); });
  if (!cmd) return cmd.error();
  plan.notes = cmd->notes;

  std::string program = cmd->program;
  std::string workdir;
  if (!o.no_workdir) {
    if (cmd->module) {
      workdir = o.workdir.empty() ? cwd : (fs::path(cwd) / o.workdir).lexically_normal().string();
    } else {
      const fs::path local = (fs::path(cwd) / cmd->program).lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(local, ec)) {
        if (!o.image.empty() && o.workdir.empty()) {  // the script is in the image
          plan.notes.push_back(cmd->program + " is not here: the pods run it from image " + o.image + "'s own files");
        } else {
          return Error::invalid(cmd->program + ": no such file in " + cwd + "; run from the directory that holds it, "
                                "pass --workdir DIR, or --image IMAGE for a script inside an image");
        }
      } else {
        workdir = o.workdir.empty() ? local.parent_path().string()
                                    : (fs::path(cwd) / o.workdir).lexically_normal().string();
        const fs::path rel = local.lexically_relative(workdir);
        if (rel.empty() || rel.begin()->string() == "..") {
          return Error::invalid(cmd->program + " is outside the working directory " + workdir +
                                ": pass a --workdir that holds it");
        }
        program = rel.string();
        if (cmd->no_python && program.find('/') == std::string::npos) program = "./" + program;
      }
    }
  }
  std::vector<std::string> chunks;
  if (!workdir.empty()) {
    auto archive = archive_workdir(workdir);
    if (!archive) return archive.error();
    chunks = split_chunks(archive->tar);
    plan.workdir = workdir;
    plan.files = archive->files;
    plan.bytes = archive->tar.size();
  }

  JobInputs& in = plan.inputs;
  in.name = o.name.empty() ? default_job_name(cmd->program, random_suffix()) : o.name;
  if (auto r = check_job_name(in.name, cmd->max_nodes); !r) return r.error();
  in.ns = ns;
  const char* env_image = std::getenv("KUBEDIST_IMAGE");
  in.image = !o.image.empty() ? o.image : (env_image && *env_image ? env_image : kDefaultImage);
  in.options = o;
  in.command = *cmd;
  in.program = program;
  in.chunks = std::move(chunks);
  auto rendered = render_job(in);
  if (!rendered) return rendered.error();
  plan.rendered = std::move(*rendered);
  for (const auto& n : plan.rendered.notes) plan.notes.push_back(n);
  return plan;
}

int run_command(const RunOptions& o, const std::atomic<bool>& interrupted, std::ostream& out, std::ostream& err) {
  auto fail = [&](const Error& e) {
    err << "kubectl-kubedist: " << e.message << "\n";
    return 1;
  };
  const std::string cwd = fs::current_path().string();

  if (o.dry_run) {
    auto plan = plan_run(o, cwd, dry_run_namespace(o));
    if (!plan) return fail(plan.error());
    for (const auto& n : plan->notes) err << "kubectl-kubedist: " << n << "\n";
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
  for (const auto& n : plan->notes) err << "kubectl-kubedist: " << n << "\n";

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
    out << ", " << plan->workdir << " shipped (" << plan->files << " files, " << kib(plan->bytes) << " in "
        << plan->rendered.config_maps.size() << " ConfigMap" << (plan->rendered.config_maps.size() > 1 ? "s" : "")
        << ")";
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
