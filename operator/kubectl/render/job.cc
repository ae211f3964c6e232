#include "kubectl/render/job.h"

#include <openssl/evp.h>

#include <regex>

#include <yaml-cpp/yaml.h>

#include "trainingjob/api/parse_spec.h"

namespace kubedist::kubectl {
namespace {

using nlohmann::json;

std::string base64(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// Unpacks the archive the ConfigMaps carry into the working directory, then installs the --pip packages (given as
// the script's arguments, so nothing needs quoting) into their volume; PIP_INDEX_URL and PIP_TRUSTED_HOST say where.
constexpr const char* kSetupScript =
    "set -e\n"
    "if [ -d /kubedist-run/code ]; then\n"
    "  cat /kubedist-run/code/workdir.tar.* | tar -x -f - -C /kubedist-run/workdir\n"
    "  echo \"kubedist-setup: working directory unpacked ($(find /kubedist-run/workdir -type f | wc -l) files)\"\n"
    "fi\n"
    "if [ \"$#\" -gt 0 ]; then\n"
    "  python3 -m pip install --no-cache-dir --disable-pip-version-check --no-warn-script-location "
    "--target /kubedist-run/pip \"$@\"\n"
    "fi\n";

std::string host_of(const std::string& url) {
  static const std::regex re("https?://([^/:]+).*");
  std::smatch m;
  return std::regex_match(url, m, re) ? m[1].str() : "";
}

void add_env(json& env, const std::string& name, const std::string& value) {
  for (auto& e : env)
    if (e["name"] == name) {
      e["value"] = value;
      return;
    }
  env.push_back({{"name", name}, {"value", value}});
}

std::string env_value(const json& env, const std::string& name) {
  for (const auto& e : env)
    if (e["name"] == name) return e.value("value", "");
  return "";
}

void emit(YAML::Emitter& out, const json& j) {
  switch (j.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key << k << YAML::Value;
        emit(out, v);
      }
      out << YAML::EndMap;
      return;
    case json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& v : j) emit(out, v);
      out << YAML::EndSeq;
      return;
    case json::value_t::null: out << YAML::Null; return;
    case json::value_t::string: {
      const std::string s = j.get<std::string>();
      static const std::regex plain_would_change(
          "|~|[-+]?[0-9.].*|(?:[Tt]rue|TRUE|[Ff]alse|FALSE|[Yy]es|YES|[Nn]o|NO|[Oo]n|ON|[Oo]ff|OFF|[Nn]ull|NULL|y|Y|n|N)");
      if (std::regex_match(s, plain_would_change)) out << YAML::DoubleQuoted << s;
      else if (!s.empty() && s.back() == '\n') out << YAML::Literal << s;  // a block keeps exactly one final newline
      else if (s.find('\n') != std::string::npos) out << YAML::DoubleQuoted << s;
      else out << s;
      return;
    }
    case json::value_t::boolean: out << (j.get<bool>() ? "true" : "false"); return;
    default: out << YAML::Value << j.dump(); return;
  }
}

}  // namespace

std::string workdir_config_map_name(const std::string& job, size_t k) { return job + "-workdir-" + std::to_string(k); }

std::vector<std::string> worker_command(const TrainingCommand& cmd, const std::string& program) {
  std::vector<std::string> out;
  if (cmd.no_python) {
    out.push_back(program);
  } else {
    out = {"python3", "-u"};
    if (cmd.module) out.push_back("-m");
    out.push_back(program);
  }
  out.insert(out.end(), cmd.program_args.begin(), cmd.program_args.end());
  return out;
}

Result<RenderedJob> render_job(const JobInputs& in) {
  RenderedJob r;
  const RunOptions& o = in.options;
  const TrainingCommand& cmd = in.command;

  json env = json::array();
  for (const auto& [k, v] : cmd.env) add_env(env, k, v);
  for (const auto& [k, v] : o.env) {
    auto check = check_user_env(k);
    if (!check) return Error::invalid("-e " + check.error().message);
    if (*check) r.notes.push_back(**check);
    else add_env(env, k, v);
  }
  add_env(env, "PYTHONUNBUFFERED", "1");
  for (const auto& [k, v] : cmd.launcher_env) add_env(env, k, v);
  // The launcher prefixes each worker's lines with [rank N] when it tees them: the logs name the rank.
  if (!cmd.tee_or_redirects) add_env(env, "PET_TEE", "3");

  json trainer = {{"name", "trainer"}, {"image", in.image}, {"command", worker_command(cmd, in.program)}};
  json volumes = json::array();
  json mounts = json::array();
  json setup_mounts = json::array();
  const bool ship = !in.chunks.empty();
  const bool pip = !o.pip.empty();
  if (ship) {
    json sources = json::array();
    for (size_t k = 0; k < in.chunks.size(); ++k) {
      json cm = {{"apiVersion", "v1"},
                 {"kind", "ConfigMap"},
                 {"metadata",
                  {{"name", workdir_config_map_name(in.name, k)},
                   {"namespace", in.ns},
                   {"labels", {{kWorkdirLabel, in.name}}}}},
                 {"immutable", true},
                 {"binaryData", {{kChunkKeyPrefix + std::string(k < 10 ? "00" : "0") + std::to_string(k),
                                  base64(in.chunks[k])}}}};
      r.config_maps.push_back(std::move(cm));
      sources.push_back({{"configMap", {{"name", workdir_config_map_name(in.name, k)}}}});
    }
    volumes.push_back({{"name", "kubedist-code"}, {"projected", {{"sources", sources}}}});
    volumes.push_back({{"name", "kubedist-workdir"}, {"emptyDir", json::object()}});
    setup_mounts.push_back({{"name", "kubedist-code"}, {"mountPath", kCodePath}, {"readOnly", true}});
    setup_mounts.push_back({{"name", "kubedist-workdir"}, {"mountPath", kWorkdirPath}});
    mounts.push_back({{"name", "kubedist-workdir"}, {"mountPath", kWorkdirPath}});
    trainer["workingDir"] = kWorkdirPath;
  }
  json setup_env = json::array();
  if (pip) {
    volumes.push_back({{"name", "kubedist-pip"}, {"emptyDir", json::object()}});
    setup_mounts.push_back({{"name", "kubedist-pip"}, {"mountPath", kPipPath}});
    mounts.push_back({{"name", "kubedist-pip"}, {"mountPath", kPipPath}, {"readOnly", true}});
    const std::string user_path = env_value(env, "PYTHONPATH");
    add_env(env, "PYTHONPATH", user_path.empty() ? kPipPath : std::string(kPipPath) + ":" + user_path);
    if (!o.pip_index_url.empty()) {
      setup_env.push_back({{"name", "PIP_INDEX_URL"}, {"value", o.pip_index_url}});
      // pip ignores a plain-http index unless its host is trusted: the user named it, so it is.
      if (o.pip_index_url.rfind("http://", 0) == 0) {
        setup_env.push_back({{"name", "PIP_TRUSTED_HOST"}, {"value", host_of(o.pip_index_url)}});
      }
    }
  }
  trainer["env"] = env;
  if (!mounts.empty()) trainer["volumeMounts"] = mounts;
  json resources = json::object();
  if (o.gpus_per_node > 0) resources["limits"]["nvidia.com/gpu"] = o.gpus_per_node;
  if (!o.cpu.empty()) resources["requests"]["cpu"] = o.cpu;
  if (!o.memory.empty()) {
    resources["requests"]["memory"] = o.memory;
    resources["limits"]["memory"] = o.memory;
  }
  if (!resources.empty()) trainer["resources"] = resources;

  json pod_spec = {{"containers", json::array({trainer})}};
  for (const auto& [key, value] : o.node_selector) pod_spec["nodeSelector"][key] = value;
  if (ship || pip) {
    json setup = {{"name", kSetupContainer}, {"image", in.image}, {"command", {"sh", "-c", kSetupScript, "sh"}},
                  {"volumeMounts", setup_mounts}};
    for (const auto& p : o.pip) setup["command"].push_back(p);
    if (!setup_env.empty()) setup["env"] = setup_env;
    pod_spec["initContainers"] = json::array({setup});
    pod_spec["volumes"] = volumes;
  }

  json spec = {{"replicas", cmd.max_nodes},
               {"nprocPerNode", cmd.nproc_per_node == "auto" || cmd.nproc_per_node == "gpu" ||
                                        cmd.nproc_per_node == "cpu"
                                    ? json(cmd.nproc_per_node)
                                    : json(std::stoi(cmd.nproc_per_node))},
               {"maxRestarts", cmd.max_restarts.value_or(0)},
               {"template", {{"spec", pod_spec}}}};
  if (cmd.min_nodes < cmd.max_nodes) {
    spec["minReplicas"] = cmd.min_nodes;
    spec["maxReplicas"] = cmd.max_nodes;
  }
  // torchrun with --max-restarts 0 (its default) ends at a worker's failure. A pod ending with 1-127 (the
  // program's own verdict) then ends the job, as the command would have; signals and node loss (128+) still
  // recreate the pod. With restarts, the launcher's in-place restarts come first (OnFailure).
  if (cmd.max_restarts.value_or(0) == 0) spec["restartPolicy"] = "ExitCode";
  if (o.gang) spec["scheduling"] = {{"gang", true}};
  if (o.spares > 0) spec["spares"] = o.spares;
  if (!o.topology_key.empty()) spec["placement"] = {{"topologyKey", o.topology_key}};

  std::string line;
  for (const auto& w : o.command) line += (line.empty() ? "" : " ") + w;
  json md = {{"name", in.name},
             {"namespace", in.ns},
             {"labels", {{"app.kubernetes.io/created-by", "kubectl-kubedist"}}},
             {"annotations", {{"kubedist.io/command", line}}}};
  if (!o.queue.empty()) md["labels"]["kueue.x-k8s.io/queue-name"] = o.queue;
  r.job = {{"apiVersion", "kubedist.io/v1alpha1"}, {"kind", "TrainingJob"}, {"metadata", md}, {"spec", spec}};

  if (in.ns.empty()) {  // --dry-run without -n: kubectl apply puts them in its current namespace
    r.job["metadata"].erase("namespace");
    for (auto& cm : r.config_maps) cm["metadata"].erase("namespace");
  }
  // What the operator would refuse is said now, before anything exists.
  if (auto parsed = trainingjob::parse_spec(spec, in.name); !parsed) return parsed.error();
  return r;
}

json owned_by_job(json config_map, const json& job) {
  config_map["metadata"]["ownerReferences"] = json::array(
      {{{"apiVersion", "kubedist.io/v1alpha1"},
        {"kind", "TrainingJob"},
        {"name", job["metadata"]["name"]},
        {"uid", job["metadata"]["uid"]},
        {"blockOwnerDeletion", true}}});
  return config_map;
}

std::string to_yaml(const std::vector<json>& docs) {
  std::string out;
  for (const auto& d : docs) {
    YAML::Emitter e;
    e.SetIndent(2);
    emit(e, d);
    out += "---\n";
    out += e.c_str();
    out += "\n";
  }
  return out;
}

}  // namespace kubedist::kubectl
