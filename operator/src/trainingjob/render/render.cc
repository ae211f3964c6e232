#include "trainingjob/render/render.h"

#include "contract/pod_env.h"
#include "trainingjob/render/env.h"

namespace kubedist::trainingjob {
namespace {

using nlohmann::json;

constexpr const char* kBinVolume = "kubedist-bin";
constexpr const char* kBinDir = "/kubedist/bin";
constexpr const char* kHostnameLabel = "kubernetes.io/hostname";

json labels_for(const TrainingJob& job) { return {{kJobNameLabel, job.name}}; }

void add_bin_mount(json& container) {
  if (!container.contains("volumeMounts") || !container["volumeMounts"].is_array()) {
    container["volumeMounts"] = json::array();
  }
  container["volumeMounts"].push_back({{"name", kBinVolume}, {"mountPath", kBinDir}});
}

// Pod Security "restricted" for the container the operator adds: the launcher image's non-root user (65532, as
// deploy/docker/Dockerfile sets it, named here so that an image without a USER still runs as non-root), no
// privilege escalation, no capability, the runtime's default seccomp profile, and a read-only root filesystem (it
// writes only to the emptyDir kubedist-bin).
json restricted_security_context() {
  return {{"runAsNonRoot", true},
          {"runAsUser", kLauncherUser},
          {"runAsGroup", kLauncherUser},
          {"allowPrivilegeEscalation", false},
          {"readOnlyRootFilesystem", true},
          {"capabilities", {{"drop", json::array({"ALL"})}}},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

void declare_port(json& container, const char* name, int port) {
  if (!container.contains("ports") || !container["ports"].is_array()) container["ports"] = json::array();
  for (const auto& p : container["ports"]) {
    if (p.is_object() && p.value("containerPort", 0) == port) return;
  }
  container["ports"].push_back({{"name", name}, {"containerPort", port}, {"protocol", "TCP"}});
}

// parent[key] as an object, made one when absent; null when it holds something else (which the API server refuses
// with its own message).
json* object_member(json& parent, const char* key) {
  json& member = parent[key];
  if (member.is_null()) member = json::object();
  return member.is_object() ? &member : nullptr;
}

// Whether the template pins the pod to a node (spec.nodeName): no scheduler places it, so no placement rule of the
// operator's applies (and a node affinity it cannot meet would make its kubelet refuse it each time).
bool pinned_to_node(const json& spec) {
  const auto pinned = spec.find("nodeName");
  return pinned != spec.end() && pinned->is_string() && !pinned->empty();
}

// Appends term to spec.affinity.<kind>.<list>, made where absent; nothing where the template gives any of them
// another shape, which the API server refuses with its own message.
void add_affinity_term(json& spec, const char* kind, const char* list, json term) {
  json* affinity = object_member(spec, "affinity");
  json* section = affinity ? object_member(*affinity, kind) : nullptr;
  if (section == nullptr) return;
  json& terms = (*section)[list];
  if (terms.is_null()) terms = json::array();
  if (terms.is_array()) terms.push_back(std::move(term));
}

// Keeps the pod off `nodes`: the required node affinity's terms are ORed, so each gets the exclusion (a template
// without one gets a term of its own); not a pod the template pins to a node. A template whose affinity has another
// shape is left as it is: the API server refuses it with its own message.
void avoid_nodes(json& spec, const std::vector<std::string>& nodes) {
  if (nodes.empty() || pinned_to_node(spec)) return;
  const json exclusion = {{"key", "metadata.name"}, {"operator", "NotIn"}, {"values", nodes}};
  json* affinity = object_member(spec, "affinity");
  json* node_affinity = affinity ? object_member(*affinity, "nodeAffinity") : nullptr;
  json* required = node_affinity ? object_member(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution")
                                 : nullptr;
  if (required == nullptr) return;
  json& terms = (*required)["nodeSelectorTerms"];
  if (terms.is_null() || (terms.is_array() && terms.empty())) {
    terms = json::array({{{"matchFields", json::array({exclusion})}}});
    return;
  }
  if (!terms.is_array()) return;
  for (json& term : terms) {
    if (!term.is_object()) continue;
    json& fields = term["matchFields"];
    if (fields.is_null()) fields = json::array();
    if (fields.is_array()) fields.push_back(exclusion);
  }
}

// One pod per node (spec.placement.onePodPerNode): a pod anti-affinity to the job's other pods by host name, added
// to the template's own terms (preferred with the greatest weight, or required); not for a pod the template pins to
// a node, which no scheduler places. A template whose affinity has another shape is left as it is: the API server
// refuses it with its own message.
void spread_over_nodes(json& spec, const TrainingJob& job) {
  if (job.spec.one_pod_per_node == OnePodPerNode::kNone || pinned_to_node(spec)) return;
  const json term = {{"labelSelector", {{"matchLabels", labels_for(job)}}}, {"topologyKey", kHostnameLabel}};
  if (job.spec.one_pod_per_node == OnePodPerNode::kRequired) {
    add_affinity_term(spec, "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", term);
  } else {
    add_affinity_term(spec, "podAntiAffinity", "preferredDuringSchedulingIgnoredDuringExecution",
                      {{"weight", 100}, {"podAffinityTerm", term}});
  }
}

// One domain (spec.placement.topologyKey): a preferred pod affinity to the job's other pods by that node label, so
// that the job's pods, and its spares among them, go to the domain (rack, NVLink domain) the job already runs in.
// Not for a pinned pod; a template's affinity of another shape is left for the API server to refuse.
void gather_in_domain(json& spec, const TrainingJob& job) {
  if (job.spec.topology_key.empty() || pinned_to_node(spec)) return;
  add_affinity_term(spec, "podAffinity", "preferredDuringSchedulingIgnoredDuringExecution",
                    {{"weight", 100},
                     {"podAffinityTerm",
                      {{"labelSelector", {{"matchLabels", labels_for(job)}}}, {"topologyKey", job.spec.topology_key}}}});
}

}  // namespace

json render_namespace_rdzv_secret(const std::string& ns, const std::string& secret) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata",
           {{"name", kNamespaceRdzvSecret},
            {"namespace", ns},
            {"labels", {{kNamespaceRdzvLabel, "namespace"}, {"app.kubernetes.io/managed-by", "kubedist"}}}}},
          {"type", "Opaque"},
          {"stringData", {{kRdzvSecretKey, secret}}}};
}

json owner_reference(const TrainingJob& job) {
  return {{"apiVersion", kApiVersion}, {"kind", kKind},           {"name", job.name},
          {"uid", job.uid},            {"controller", true}, {"blockOwnerDeletion", true}};
}

json owned_metadata(const TrainingJob& job) {
  return {{"name", job.name},
          {"namespace", job.ns},
          {"labels", labels_for(job)},
          {"ownerReferences", json::array({owner_reference(job)})}};
}

json render_job_rdzv_secret(const TrainingJob& job, const std::string& secret) {
  json md = owned_metadata(job);
  md["name"] = rdzv_secret_name(job.name);
  return {{"apiVersion", "v1"}, {"kind", "Secret"}, {"metadata", md}, {"type", "Opaque"},
          {"stringData", {{kRdzvSecretKey, secret}}}};
}

json render_service(const TrainingJob& job) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", owned_metadata(job)},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", labels_for(job)},
            // A headless Service needs no ports, but naming the store and rendezvous ports documents them.
            {"ports",
             json::array({{{"name", "master"}, {"port", job.spec.master_port}, {"protocol", "TCP"}},
                          {{"name", "rendezvous"},
                           {"port", job.spec.master_port + contract::kRendezvousPortOffset},
                           {"protocol", "TCP"}}})}}}};
}

json render_pod(const TrainingJob& job, int rank, const PodOptions& options) {
  const std::string name = pod_name(job.name, rank);
  json tmpl_md = job.spec.template_->value("metadata", json::object());
  json spec = job.spec.template_->value("spec", json::object());

  json md = json::object();
  md["name"] = name;
  md["namespace"] = job.ns;
  md["labels"] = tmpl_md.value("labels", json::object());
  if (!md["labels"].is_object()) md["labels"] = json::object();
  md["labels"][kJobNameLabel] = job.name;
  md["labels"][kNodeRankLabel] = std::to_string(rank);
  if (tmpl_md.contains("annotations") && tmpl_md["annotations"].is_object()) {
    md["annotations"] = tmpl_md["annotations"];
    md["annotations"].erase(kRdzvKeyAnnotation);  // the operator's alone: it says which key the pod derives from
    md["annotations"].erase(contract::kTopologyDomainAnnotation);  // the operator's: written once the pod is bound
  }
  md["ownerReferences"] = json::array({owner_reference(job)});

  spec["hostname"] = name;
  spec["subdomain"] = job.name;
  // The operator decides when a node's pod is recreated, so the kubelet never restarts it.
  spec["restartPolicy"] = "Never";

  if (!spec.contains("volumes") || !spec["volumes"].is_array()) spec["volumes"] = json::array();
  spec["volumes"].push_back({{"name", kBinVolume}, {"emptyDir", json::object()}});

  // The launcher image holds nothing but the static launcher (no shell, no cp): it copies itself.
  json init = {{"name", "kubedist-launcher"},
               {"image", options.launcher_image},
               {"command", json::array({"/kubedist-launcher", "--install", kBinDir})},
               {"securityContext", restricted_security_context()}};
  add_bin_mount(init);
  const bool namespace_secret = options.rdzv_secret && !options.job_rdzv_secret;
  if (namespace_secret) {
    // Only the init container sees the namespace's secret; the trainer gets the job's, derived from it.
    init["command"].push_back("--rdzv-secret-from");
    init["command"].push_back(std::string(kNamespaceRdzvDir) + "/" + kRdzvSecretKey);
    init["command"].push_back("--rdzv-job");
    init["command"].push_back(job.uid);
    spec["volumes"].push_back(
        {{"name", kNamespaceRdzvSecret}, {"secret", {{"secretName", kNamespaceRdzvSecret}, {"defaultMode", 0444}}}});
    init["volumeMounts"].push_back({{"name", kNamespaceRdzvSecret}, {"mountPath", kNamespaceRdzvDir}, {"readOnly", true}});
    if (!options.rdzv_key.empty()) {
      if (!md.contains("annotations")) md["annotations"] = json::object();
      md["annotations"][kRdzvKeyAnnotation] = options.rdzv_key;
    }
  }
  json inits = json::array({init});
  if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
    for (const auto& c : spec["initContainers"]) inits.push_back(c);
  }
  spec["initContainers"] = inits;

  json& trainer = spec["containers"][job.spec.trainer_index];
  json command = json::array({kLauncherPath, "--no-python", "--"});
  for (const auto& part : trainer["command"]) command.push_back(part);
  if (trainer.contains("args") && trainer["args"].is_array()) {
    for (const auto& part : trainer["args"]) command.push_back(part);
  }
  trainer["command"] = command;
  trainer.erase("args");
  add_bin_mount(trainer);
  if (options.rdzv_secret && options.job_rdzv_secret) {
    // World-readable inside the pod: the trainer may run as any user, and the pod is the job's alone.
    spec["volumes"].push_back(
        {{"name", kRdzvSecretVolume}, {"secret", {{"secretName", rdzv_secret_name(job.name)}, {"defaultMode", 0444}}}});
    trainer["volumeMounts"].push_back({{"name", kRdzvSecretVolume}, {"mountPath", kRdzvSecretDir}, {"readOnly", true}});
  }
  if (!job.spec.topology_key.empty() && options.topology_domains) {
    // The node's topology domain, which the operator writes into the pod's annotation once it is bound; the kubelet
    // keeps the file up to date, and the launcher reads it at each JOIN (it waits for it at its start).
    spec["volumes"].push_back(
        {{"name", kPodInfoVolume},
         {"downwardAPI",
          {{"items", json::array({{{"path", kTopologyDomainFileName},
                                   {"fieldRef",
                                    {{"apiVersion", "v1"},
                                     {"fieldPath", std::string("metadata.annotations['") +
                                                       contract::kTopologyDomainAnnotation + "']"}}}}})}}}});
    trainer["volumeMounts"].push_back({{"name", kPodInfoVolume}, {"mountPath", kPodInfoDir}, {"readOnly", true}});
  }
  if (const auto& c = job.spec.checkpoint) {
    // spec.checkpoint's claim, where the kubedist.checkpoint helper saves and resumes (KUBEDIST_CHECKPOINT_DIR).
    spec["volumes"].push_back({{"name", kCheckpointVolume}, {"persistentVolumeClaim", {{"claimName", c->claim_name}}}});
    trainer["volumeMounts"].push_back({{"name", kCheckpointVolume}, {"mountPath", c->mount_path}});
    // Just in time: on SIGTERM the launcher first waits for its workers' checkpoint, then stops them within the
    // grace the template asked for (KUBEDIST_STOP_TIMEOUT): the pod's grace period is both.
    spec["terminationGracePeriodSeconds"] = grace_seconds(spec) + contract::checkpoint_wait_seconds(c->save_timeout_s);
  }
  trainer["env"] = trainer_env(trainer, job, rank, options);  // env.h decides it
  declare_port(trainer, "master", job.spec.master_port);
  declare_port(trainer, "rendezvous", job.spec.master_port + contract::kRendezvousPortOffset);
  if (options.launcher_metrics_port > 0) declare_port(trainer, "kd-metrics", options.launcher_metrics_port);
  avoid_nodes(spec, options.avoided_nodes);
  spread_over_nodes(spec, job);
  gather_in_domain(spec, job);

  return {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", md}, {"spec", spec}};
}

}  // namespace kubedist::trainingjob
