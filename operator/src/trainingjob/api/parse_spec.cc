#include "trainingjob/api/parse_spec.h"

#include <regex>
#include <string>

#include "contract/pod_env.h"
#include "contract/torchrun_vocabulary.h"
#include "trainingjob/api/bounds.h"
#include "trainingjob/api/json_fields.h"
#include "trainingjob/api/names.h"
#include "trainingjob/api/status_json.h"
#include "trainingjob/api/template_check.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

std::string show(const json& v) { return v.dump(); }

// An integer field of `spec` (or of the object at `where`, such as "spec.checkpoint.").
Result<int64_t> read_int(const json& spec, const char* field, int64_t dflt, int64_t min, int64_t max,
                         const std::string& where = "spec.") {
  auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return dflt;
  if (!it->is_number_integer() && !(it->is_number_float() && it->get<double>() == static_cast<int64_t>(it->get<double>()))) {
    return Error::invalid(where + field + ": must be an integer, got " + show(*it));
  }
  int64_t v = it->is_number_integer() ? it->get<int64_t>() : static_cast<int64_t>(it->get<double>());
  if (v < min || v > max) {
    return Error::invalid(where + field + ": must be between " + std::to_string(min) + " and " +
                          std::to_string(max) + ", got " + std::to_string(v));
  }
  return v;
}

// spec.checkpoint: a PVC of the namespace mounted in the trainer (not where the trainer mounts a volume of its own,
// not under /kubedist), the helper's schedule and budget; nullopt without one.
Result<std::optional<CheckpointSpec>> read_checkpoint(const json& spec, const json& tmpl, int trainer_index) {
  auto it = spec.find("checkpoint");
  if (it == spec.end() || it->is_null()) return std::optional<CheckpointSpec>();
  const std::string where = "spec.checkpoint.";
  if (!it->is_object()) return Error::invalid("spec.checkpoint: must be an object, got " + show(*it));
  CheckpointSpec c;
  const auto claim = it->find("claimName");
  static const std::regex subdomain("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
  if (claim == it->end() || !claim->is_string() || claim->get<std::string>().size() > 253 ||
      !std::regex_match(claim->get<std::string>(), subdomain)) {
    return Error::invalid(where + "claimName: must name a PersistentVolumeClaim of the job's namespace, got " +
                          (claim == it->end() ? std::string("nothing") : show(*claim)));
  }
  c.claim_name = claim->get<std::string>();
  if (const auto path = it->find("mountPath"); path != it->end() && !path->is_null()) {
    const std::string p = path->is_string() ? path->get<std::string>() : "";
    if (p.empty() || p.front() != '/' || p.size() > 1024 || p == "/kubedist" || p.rfind("/kubedist/", 0) == 0) {
      return Error::invalid(where + "mountPath: must be an absolute path not under /kubedist, got " + show(*path));
    }
    c.mount_path = p;
  }
  const json& trainer = tmpl["spec"]["containers"][static_cast<size_t>(trainer_index)];
  if (const auto mounts = trainer.find("volumeMounts"); mounts != trainer.end() && mounts->is_array()) {
    for (const auto& m : *mounts) {
      if (m.is_object() && m.value("mountPath", std::string()) == c.mount_path) {
        return Error::invalid(where + "mountPath: the trainer container mounts volume " + show(m.value("name", json())) +
                              " at " + c.mount_path + " already; give the checkpoints another path");
      }
    }
  }
  if (const auto volumes = tmpl["spec"].find("volumes"); volumes != tmpl["spec"].end() && volumes->is_array()) {
    for (const auto& v : *volumes) {
      if (v.is_object() && v.value("name", std::string()) == kCheckpointVolume) {
        return Error::invalid(std::string("spec.template.spec.volumes: the name ") + kCheckpointVolume +
                              " is the operator's (spec.checkpoint's volume)");
      }
    }
  }
  auto every = read_int(*it, "everySteps", 0, 1, 1000000000, where);
  if (!every) return every.error();
  c.every_steps = *every;
  auto timeout = read_int(*it, "saveTimeoutSeconds", 0, 1, 86400, where);
  if (!timeout) return timeout.error();
  c.save_timeout_s = static_cast<int>(*timeout);
  auto keep = read_int(*it, "keep", 2, 1, 100, where);
  if (!keep) return keep.error();
  c.keep = static_cast<int>(*keep);
  return std::optional<CheckpointSpec>(c);
}

Result<std::optional<int64_t>> read_optional_int(const json& spec, const char* field, int64_t min) {
  auto it = spec.find(field);
  if (it == spec.end() || it->is_null()) return std::optional<int64_t>();
  auto v = read_int(spec, field, 0, min, INT64_MAX / 2);
  if (!v) return v.error();
  return std::optional<int64_t>(*v);
}

// spec.hangTimeout: a duration of whole hours, minutes and seconds ("90s", "10m", "1h30m"), 1 s to 30 days.
Result<std::optional<int64_t>> read_hang_timeout(const json& spec) {
  auto it = spec.find("hangTimeout");
  if (it == spec.end() || it->is_null()) return std::optional<int64_t>();
  const std::string err = "spec.hangTimeout: must be a duration from 1s to 720h such as 90s, 10m or 1h30m, got ";
  if (!it->is_string()) return Error::invalid(err + show(*it));
  static const std::regex re("([0-9]{1,9}[hms])+");
  const std::string text = it->get<std::string>();
  if (!std::regex_match(text, re)) return Error::invalid(err + show(*it));
  int64_t seconds = 0;
  for (size_t i = 0; i < text.size();) {
    size_t unit = text.find_first_of("hms", i);
    const int64_t n = std::stoll(text.substr(i, unit - i));
    seconds += n * (text[unit] == 'h' ? 3600 : text[unit] == 'm' ? 60 : 1);
    i = unit + 1;
  }
  if (seconds < 1 || seconds > 720 * 3600) return Error::invalid(err + show(*it));
  return std::optional<int64_t>(seconds);
}

bool is_dns1035_label(const std::string& s) {
  static const std::regex re("[a-z]([-a-z0-9]*[a-z0-9])?");
  return s.size() <= 63 && std::regex_match(s, re);
}

Result<NprocPerNode> read_nproc(const json& spec) {
  NprocPerNode n;
  auto it = spec.find("nprocPerNode");
  if (it == spec.end() || it->is_null()) return n;
  const std::string err = "spec.nprocPerNode: must be " + contract::nproc_per_node_expected() + ", got " + show(*it);
  if (it->is_number_integer()) {
    if (it->get<int64_t>() < 1 || it->get<int64_t>() > contract::kMaxNprocPerNode) return Error::invalid(err);
    n.count = it->get<int>();
    return n;
  }
  if (!it->is_string()) return Error::invalid(err);
  const auto s = it->get<std::string>();
  if (contract::is_nproc_mode(s)) {
    n.mode = s;
    return n;
  }
  static const std::regex digits("[1-9][0-9]{0,3}");
  if (std::regex_match(s, digits)) {
    n.count = std::stoi(s);
    return n;
  }
  return Error::invalid(err);
}

Result<int> find_trainer(const json& tmpl) {
  if (!tmpl.is_object()) return Error::invalid("spec.template: required, must be a pod template object");
  auto spec = tmpl.find("spec");
  if (spec == tmpl.end() || !spec->is_object()) return Error::invalid("spec.template.spec: required");
  auto containers = spec->find("containers");
  if (containers == spec->end() || !containers->is_array() || containers->empty()) {
    return Error::invalid("spec.template.spec.containers: at least one container is required");
  }
  if (auto checked = check_template(tmpl); !checked) return checked.error();
  int trainer = -1;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || c["name"].get<std::string>().empty()) {
      return Error::invalid("spec.template.spec.containers[" + std::to_string(i) + "]: a name is required");
    }
    if (c["name"] == "trainer" && trainer < 0) trainer = static_cast<int>(i);
  }
  // One container is the trainer whatever its name; of several, the launcher must be told which (the schema's CEL
  // rule refuses such a template already; this covers objects stored before it).
  if (trainer < 0 && containers->size() > 1) {
    return Error::invalid("spec.template.spec.containers: " + std::to_string(containers->size()) +
                          " containers and none named \"trainer\": name the one that runs under the launcher "
                          "\"trainer\"");
  }
  if (trainer < 0) trainer = 0;
  const json& c = (*containers)[trainer];
  const std::string where = "spec.template.spec.containers[" + std::to_string(trainer) + "] (" +
                            c["name"].get<std::string>() + ")";
  auto cmd = c.find("command");
  if (cmd == c.end() || !cmd->is_array() || cmd->empty()) {
    return Error::invalid(where +
                          ": command is required; the operator runs it under the launcher and cannot wrap the "
                          "image's entrypoint");
  }
  for (const auto& part : *cmd) {
    if (!part.is_string()) return Error::invalid(where + ".command: every element must be a string");
  }
  if (c.contains("args") && !c["args"].is_null()) {
    if (!c["args"].is_array()) return Error::invalid(where + ".args: must be a list of strings");
    for (const auto& part : c["args"]) {
      if (!part.is_string()) return Error::invalid(where + ".args: every element must be a string");
    }
  }
  return trainer;
}

}  // namespace

const char* to_string(RestartPolicy p) {
  switch (p) {
    case RestartPolicy::kOnFailure: return "OnFailure";
    case RestartPolicy::kNever: return "Never";
    case RestartPolicy::kExitCode: return "ExitCode";
  }
  return "?";
}

const char* to_string(CleanPodPolicy p) {
  switch (p) {
    case CleanPodPolicy::kRunning: return "Running";
    case CleanPodPolicy::kAll: return "All";
    case CleanPodPolicy::kNone: return "None";
  }
  return "?";
}

const char* to_string(OnePodPerNode p) {
  switch (p) {
    case OnePodPerNode::kPreferred: return "Preferred";
    case OnePodPerNode::kRequired: return "Required";
    case OnePodPerNode::kNone: return "None";
  }
  return "?";
}

Result<Spec> parse_spec(const json& spec, const std::string& job_name) {
  if (!spec.is_object()) return Error::invalid("spec: required, must be an object");
  Spec s;
  auto replicas = read_int(spec, "replicas", 1, 1, 10000);
  if (!replicas) return replicas.error();
  s.replicas = static_cast<int>(*replicas);
  auto min = read_int(spec, "minReplicas", s.replicas, 1, 10000);
  if (!min) return min.error();
  auto max = read_int(spec, "maxReplicas", s.replicas, 1, 10000);
  if (!max) return max.error();
  s.min_replicas = static_cast<int>(*min);
  s.max_replicas = static_cast<int>(*max);
  if (!(s.min_replicas <= s.replicas && s.replicas <= s.max_replicas)) {
    return Error::invalid("spec: minReplicas <= replicas <= maxReplicas must hold, got " +
                          std::to_string(s.min_replicas) + " <= " + std::to_string(s.replicas) + " <= " +
                          std::to_string(s.max_replicas));
  }
  auto spares = read_int(spec, "spares", 0, 0, contract::kMaxSpares);
  if (!spares) return spares.error();
  s.spares = static_cast<int>(*spares);
  if (s.spares > 0 && s.max_replicas < 2) {
    return Error::invalid("spec.spares: a spare takes the place of a lost node other than node 0 (which hosts the "
                          "rendezvous), so it needs a job of 2 or more nodes (replicas or maxReplicas)");
  }
  auto nproc = read_nproc(spec);
  if (!nproc) return nproc.error();
  s.nproc_per_node = *nproc;
  // The launcher's rendezvous listens on masterPort + 1, so that must be a port too.
  auto port = read_int(spec, "masterPort", 29500, 1, 65534);
  if (!port) return port.error();
  s.master_port = static_cast<int>(*port);
  auto max_restarts = read_int(spec, "maxRestarts", 3, 0, contract::kMaxRestartsUpperBound);
  if (!max_restarts) return max_restarts.error();
  s.max_restarts = static_cast<int>(*max_restarts);
  auto backoff = read_int(spec, "backoffLimit", 6, 0, contract::kMaxRestartsUpperBound);
  if (!backoff) return backoff.error();
  s.backoff_limit = static_cast<int>(*backoff);

  if (auto it = spec.find("restartPolicy"); it != spec.end() && !it->is_null()) {
    if (*it == "OnFailure") s.restart_policy = RestartPolicy::kOnFailure;
    else if (*it == "Never") s.restart_policy = RestartPolicy::kNever;
    else if (*it == "ExitCode") s.restart_policy = RestartPolicy::kExitCode;
    else return Error::invalid("spec.restartPolicy: must be OnFailure, Never or ExitCode, got " + show(*it));
  }
  if (auto it = spec.find("cleanPodPolicy"); it != spec.end() && !it->is_null()) {
    if (*it == "Running") s.clean_pod_policy = CleanPodPolicy::kRunning;
    else if (*it == "All") s.clean_pod_policy = CleanPodPolicy::kAll;
    else if (*it == "None") s.clean_pod_policy = CleanPodPolicy::kNone;
    else return Error::invalid("spec.cleanPodPolicy: must be Running, All or None, got " + show(*it));
  }
  if (auto it = spec.find("scheduling"); it != spec.end() && !it->is_null()) {
    if (!it->is_object()) return Error::invalid("spec.scheduling: must be an object, got " + show(*it));
    for (const auto& [name, value] : it->items()) {
      if (value.is_null()) continue;
      if (!value.is_boolean()) {
        return Error::invalid("spec.scheduling." + name + ": must be true or false, got " + show(value));
      }
      s.scheduling[name] = value.get<bool>();
    }
  }
  if (auto it = spec.find("placement"); it != spec.end() && !it->is_null()) {
    if (!it->is_object()) return Error::invalid("spec.placement: must be an object, got " + show(*it));
    if (auto one = it->find("onePodPerNode"); one != it->end() && !one->is_null()) {
      if (*one == "Preferred") s.one_pod_per_node = OnePodPerNode::kPreferred;
      else if (*one == "Required") s.one_pod_per_node = OnePodPerNode::kRequired;
      else if (*one == "None") s.one_pod_per_node = OnePodPerNode::kNone;
      else return Error::invalid("spec.placement.onePodPerNode: must be Preferred, Required or None, got " + show(*one));
    }
    if (auto key = it->find("topologyKey"); key != it->end() && !key->is_null()) {
      if (!key->is_string() || !is_label_key(key->get<std::string>())) {
        return Error::invalid(
            "spec.placement.topologyKey: must be a node label key (such as topology.kubernetes.io/zone), got " +
            show(*key));
      }
      s.topology_key = key->get<std::string>();
    }
  }
  if (auto it = spec.find("suspend"); it != spec.end() && !it->is_null()) {
    if (!it->is_boolean()) return Error::invalid("spec.suspend: must be true or false, got " + show(*it));
    s.suspend = it->get<bool>();
  }
  auto ads = read_optional_int(spec, "activeDeadlineSeconds", 1);
  if (!ads) return ads.error();
  s.active_deadline_seconds = *ads;
  auto hang = read_hang_timeout(spec);
  if (!hang) return hang.error();
  s.hang_timeout_s = *hang;
  auto ttl = read_optional_int(spec, "ttlSecondsAfterFinished", 0);
  if (!ttl) return ttl.error();
  s.ttl_seconds_after_finished = *ttl;

  auto tmpl = spec.find("template");
  if (tmpl == spec.end() || tmpl->is_null()) return Error::invalid("spec.template: required");
  if (json_bytes_up_to(*tmpl, kMaxTemplateBytes) > kMaxTemplateBytes) {
    return Error::invalid("spec.template: over " + std::to_string(kMaxTemplateBytes) +
                          " bytes; the operator keeps it for every pod it makes: keep large data (environment values, "
                          "files) in a ConfigMap or a volume");
  }
  auto trainer = find_trainer(*tmpl);
  if (!trainer) return trainer.error();
  s.trainer_index = *trainer;
  s.template_ = SharedJson(*tmpl);
  auto checkpoint = read_checkpoint(spec, *tmpl, s.trainer_index);
  if (!checkpoint) return checkpoint.error();
  s.checkpoint = *checkpoint;

  // Pod J-node-i must be a valid hostname and the Service J a DNS-1035 label.
  std::string longest = pod_name(job_name, s.max_replicas - 1);
  // A new spare takes the first index no pod of the job holds: at most 2 * spares while lost ones go.
  if (s.spares > 0 && pod_name(job_name, contract::kSpareNodeRankBase + 2 * s.spares - 1).size() > longest.size())
    longest = pod_name(job_name, contract::kSpareNodeRankBase + 2 * s.spares - 1);
  if (!is_dns1035_label(job_name) || longest.size() > 63) {
    return Error::invalid("metadata.name: \"" + job_name +
                          "\" must be a DNS-1035 label (lower-case letters, digits, '-', starting with a letter) "
                          "short enough that pod hostname \"" + longest + "\" fits in 63 characters");
  }
  return s;
}

Result<TrainingJob> parse_training_job(const json& obj, const std::vector<ConditionType>& kept_conditions) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) {
    return Error::invalid("TrainingJob without metadata");
  }
  const json& md = obj["metadata"];
  TrainingJob job;
  job.name = string_at(md, "name");
  job.ns = string_at(md, "namespace");
  if (job.name.empty() || job.ns.empty()) return Error::invalid("TrainingJob without name or namespace");
  job.uid = string_at(md, "uid");
  job.resource_version = string_at(md, "resourceVersion");
  job.generation = md.contains("generation") && md["generation"].is_number_integer() ? md["generation"].get<int64_t>() : 0;
  job.deleting = md.contains("deletionTimestamp") && !md["deletionTimestamp"].is_null();
  if (auto labels = md.find("labels"); labels != md.end() && labels->is_object()) {
    for (const auto& [key, value] : labels->items()) {
      if (value.is_string()) job.labels[key] = value.get<std::string>();
    }
  }
  job.status = parse_status(obj.value("status", json::object()), kept_conditions);
  // Whatever the spec holds, the job stays in the cache with a reason, so that its status can say why it cannot
  // run: a reader that throws on a type it did not expect is a spec error too, never a dropped job.
  try {
    auto spec = parse_spec(obj.value("spec", json()), job.name);
    if (spec) {
      job.spec = std::move(*spec);
    } else {
      job.spec_error = spec.error().message;
    }
  } catch (const std::exception& e) {
    // A copy of defaults made once, not Spec{}: GCC 12's Release build warns falsely (-Wmaybe-uninitialized) of the
    // temporary's strings here.
    static const Spec kDefaults;
    job.spec = kDefaults;
    job.spec_error = std::string("spec: cannot be read: ") + e.what();
  }
  return job;
}

}  // namespace kubedist::trainingjob

