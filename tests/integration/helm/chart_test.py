#!/usr/bin/python3
"""The Helm chart, rendered and linted by the real helm, then installed into the real local control plane.

Checks that the chart's CRD and dashboard are the very files in crd/ and deploy/ (no copy that can drift),
that default and non-default values render what they promise, and that the ServiceAccount the chart
creates is allowed exactly what the operator needs (asked of the API server's own RBAC evaluation).
"""
import json
import os
import sys
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "lib"))
from kube import run  # noqa: E402

SRC = os.environ["KUBEDIST_SOURCE_DIR"]
CHART = os.path.join(SRC, "helm", "kubedist")
failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


def render(*sets, include_crds=False, set_json=()):
    args = ["helm", "template", "kd", CHART, "--namespace", "kubedist-system"]
    if include_crds:
        args.append("--include-crds")
    for s in sets:
        args += ["--set", s]
    for s in set_json:
        args += ["--set-json", s]
    return [d for d in yaml.safe_load_all(run(*args).stdout) if d]


def find(docs, kind, name=None):
    return [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]


def operator_args(docs):
    dep = find(docs, "Deployment")[0]
    return dep["spec"]["template"]["spec"]["containers"][0]["args"]


# helm lint: no warnings, no errors.
lint = run("helm", "lint", "--strict", CHART, check=False)
check(lint.returncode == 0 and "[WARNING]" not in lint.stdout and "[ERROR]" not in lint.stdout,
      "helm lint --strict is clean" + ("" if lint.returncode == 0 else ": " + lint.stdout + lint.stderr))

# kubeVersion: the chart installs on the oldest release the version matrix tests (deploy/local/versions.sh) and
# newer, vendors' builds of them included, and refuses an older cluster, saying which releases it needs.
with open(os.path.join(SRC, "deploy", "local", "versions.sh")) as f:
    matrix = next(line for line in f if line.startswith("KUBERNETES_MATRIX_VERSIONS=")).split("=", 1)[1]
oldest_minor = min(int(v.split(".")[1]) for v in matrix.strip().strip('"').split())
with open(os.path.join(CHART, "Chart.yaml")) as f:
    kube_version = yaml.safe_load(f)["kubeVersion"]
check(kube_version == f">=1.{oldest_minor}.0-0",
      f"Chart.yaml's kubeVersion {kube_version} starts at the matrix's oldest release 1.{oldest_minor}")
for v in (f"v1.{oldest_minor}.0", f"v1.{oldest_minor}.2-eks-4096f2b", "v1.37.2", "v1.40.0"):
    p = run("helm", "template", "kd", CHART, "--kube-version", v, check=False)
    check(p.returncode == 0, f"the chart renders for Kubernetes {v}" + ("" if p.returncode == 0 else ": " + p.stderr))
too_old = f"v1.{oldest_minor - 1}.9"
p = run("helm", "template", "kd", CHART, "--kube-version", too_old, check=False)
check(p.returncode != 0 and f"chart requires kubeVersion: {kube_version}" in p.stderr and too_old in p.stderr,
      f"the chart refuses Kubernetes {too_old}, naming the releases it needs: {p.stderr.strip()}")

# The chart's CRD is crd/kubedist.io_trainingjobs.yaml itself.
with open(os.path.join(SRC, "crd", "kubedist.io_trainingjobs.yaml")) as f:
    crd_file = yaml.safe_load(f)
docs = render(include_crds=True)
crds = find(docs, "CustomResourceDefinition")
check(len(crds) == 1 and crds[0] == crd_file, "the chart installs exactly crd/kubedist.io_trainingjobs.yaml")
check(os.path.realpath(os.path.join(CHART, "crds", "kubedist.io_trainingjobs.yaml")) ==
      os.path.realpath(os.path.join(SRC, "crd", "kubedist.io_trainingjobs.yaml")),
      "helm/kubedist/crds links to crd/ rather than copying it")

# Defaults: cluster-wide RBAC, leader election, metrics Service, dashboard; no Prometheus Operator objects.
docs = render()
main_roles = [r for r in find(docs, "ClusterRole") if not r["metadata"]["name"].endswith("-kueue")]
check(len(main_roles) == 1 and len(find(docs, "ClusterRoleBinding")) == 2,
      "default values grant a ClusterRole (and one for Kueue's cluster-scoped objects)")
args = operator_args(docs)
check("--leader-elect" in args and "--leader-election-namespace=kubedist-system" in args,
      "leader election is on by default")
check(not any(a.startswith("--namespace=") for a in args), "default values watch all namespaces")
check("--launcher-metrics-port=9402" in args, "the launchers serve metrics at port 9402 by default")
check("--gang-scheduling=per-job" in args, "jobs asking for gang scheduling get it by default")
policy, binding = find(docs, "ValidatingAdmissionPolicy"), find(docs, "ValidatingAdmissionPolicyBinding")
check(len(policy) == 1 and len(binding) == 1 and binding[0]["spec"]["policyName"] == policy[0]["metadata"]["name"]
      and binding[0]["spec"]["validationActions"] == ["Deny"]
      and policy[0]["spec"]["matchConstraints"]["resourceRules"][0]["resources"] == ["pods/ephemeralcontainers"],
      "by default a ValidatingAdmissionPolicy keeps ephemeral containers off the namespace key's volume")
off = render("protectRendezvousKey=false")
check(not find(off, "ValidatingAdmissionPolicy") and not find(off, "ValidatingAdmissionPolicyBinding"),
      "protectRendezvousKey=false renders no policy")
kueue_rules = [r for r in main_roles[0]["rules"] if "kueue.x-k8s.io" in r["apiGroups"]]
kueue_role = find(docs, "ClusterRole", main_roles[0]["metadata"]["name"] + "-kueue")
check(sorted(r for rule in kueue_rules for r in rule["resources"]) == ["workloads", "workloads/status"]
      and kueue_role and kueue_role[0]["rules"][0]["resources"] == ["resourceflavors", "workloadpriorityclasses"]
      and "create" in kueue_rules[0]["verbs"] and "patch" in kueue_rules[1]["verbs"]
      and "create" not in kueue_role[0]["rules"][0]["verbs"],
      "Kueue admission is on by default: Workloads and their status, read-only flavors and priority classes")
no_kueue = render("kueue.enabled=false")
check(not any("kueue.x-k8s.io" in r["apiGroups"] for d in find(no_kueue, "ClusterRole") for r in d["rules"])
      and len(find(no_kueue, "ClusterRole")) == 1, "kueue.enabled=false drops Kueue from the RBAC")
ns_kueue = render("watchNamespace=team-a")
check(len(find(ns_kueue, "ClusterRole")) == 1 and find(ns_kueue, "ClusterRole")[0]["metadata"]["name"].endswith("-kueue")
      and any("kueue.x-k8s.io" in r["apiGroups"] for r in find(ns_kueue, "Role")[0]["rules"]),
      "a namespaced install reads Kueue's cluster-scoped flavors and priority classes through its own ClusterRole")
check(not any("scheduling.k8s.io" in r["apiGroups"] for r in find(render("gangScheduling=off"), "ClusterRole")[0]["rules"])
      and "--gang-scheduling=off" in operator_args(render("gangScheduling=off")),
      "gangScheduling=off reaches the operator and drops the Workload API from its RBAC")
check(len(find(docs, "Service")) == 1 and not find(docs, "ServiceMonitor") and not find(docs, "PrometheusRule")
      and not find(docs, "PodMonitor"), "default values: metrics Service, no ServiceMonitor, PodMonitor or PrometheusRule")
# The operator survives the loss of its own node: two replicas behind the lease, preferring different nodes, a
# PodDisruptionBudget, and 30 s (not 300 s) on a NotReady or unreachable node before its pod moves.
deployment = find(docs, "Deployment")[0]
selector = deployment["spec"]["selector"]["matchLabels"]
pod = deployment["spec"]["template"]["spec"]
spread = pod.get("affinity", {}).get("podAntiAffinity", {}).get("preferredDuringSchedulingIgnoredDuringExecution", [])
check(deployment["spec"]["replicas"] == 2 and
      any(t["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname" and
          t["podAffinityTerm"]["labelSelector"]["matchLabels"] == selector for t in spread),
      "default values run 2 replicas that prefer different nodes (pod anti-affinity on the hostname)")
tolerations = {(t["key"], t.get("effect"), t.get("tolerationSeconds")) for t in pod.get("tolerations", [])}
check({("node.kubernetes.io/not-ready", "NoExecute", 30), ("node.kubernetes.io/unreachable", "NoExecute", 30)} <= tolerations,
      "the operator's pod leaves a NotReady or unreachable node after 30 s")
pdb = find(docs, "PodDisruptionBudget")
check(len(pdb) == 1 and pdb[0]["spec"]["maxUnavailable"] == 1 and pdb[0]["spec"]["selector"]["matchLabels"] == selector,
      "a PodDisruptionBudget lets a drain take one operator replica at a time")
check(not find(render("replicaCount=1"), "PodDisruptionBudget"), "one replica: no PodDisruptionBudget")
custom = render("affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool",
                "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists")
check(list(find(custom, "Deployment")[0]["spec"]["template"]["spec"]["affinity"]) == ["nodeAffinity"],
      "a user's affinity replaces the default spread")
lone = run("helm", "template", "kd", CHART, "--set", "leaderElection.enabled=false", check=False)
check(lone.returncode != 0 and "leaderElection.enabled" in lone.stderr,
      "two replicas without leader election are refused: both would reconcile")
dep = find(docs, "Deployment")[0]["spec"]["template"]["spec"]
sc = dep["containers"][0]["securityContext"]
check(dep["securityContext"]["runAsNonRoot"] is True and sc["readOnlyRootFilesystem"] is True and
      sc["allowPrivilegeEscalation"] is False, "the operator runs non-root with a read-only root filesystem")
c = dep["containers"][0]
check("livenessProbe" in c and "readinessProbe" in c and "resources" in c, "probes and resources are set")
cm = find(docs, "ConfigMap")
check(len(cm) == 1 and cm[0]["metadata"]["labels"].get("grafana_dashboard") == "1",
      "the dashboard ConfigMap carries the Grafana sidecar label")
with open(os.path.join(SRC, "deploy", "dashboards", "kubedist.json")) as f:
    check(json.loads(cm[0]["data"]["kubedist.json"]) == json.load(f),
          "the dashboard ConfigMap holds deploy/dashboards/kubedist.json")

# Non-default values.
docs = render("watchNamespace=team-a", "leaderElection.enabled=false", "metrics.serviceMonitor.enabled=true",
              "metrics.prometheusRule.enabled=true", "metrics.launcherPodMonitor.enabled=true",
              "metrics.launcherPort=9500", "grafanaDashboard.enabled=false", "replicaCount=1",
              "image.tag=9.9.9", "kueue.enabled=false")
roles = [r for r in find(docs, "Role") if not r["metadata"]["name"].endswith("-keyring")]
check(not find(docs, "ClusterRole") and len(roles) == 1 and roles[0]["metadata"]["namespace"] == "team-a",
      "watchNamespace=team-a (without Kueue) grants a Role in team-a and no ClusterRole (beside the keyring's)")
args = operator_args(docs)
check("--namespace=team-a" in args and "--leader-elect" not in args,
      "watchNamespace and leaderElection.enabled=false reach the operator's flags")
check(len(find(docs, "ServiceMonitor")) == 1, "serviceMonitor.enabled renders a ServiceMonitor")
pm = find(docs, "PodMonitor")
check(len(pm) == 1 and pm[0]["spec"]["podMetricsEndpoints"][0]["port"] == "kd-metrics"
      and pm[0]["spec"]["namespaceSelector"] == {"matchNames": ["team-a"]}
      and pm[0]["spec"]["selector"]["matchExpressions"][0]["key"] == "kubedist.io/job-name",
      "launcherPodMonitor.enabled renders a PodMonitor of the job pods' kd-metrics port in the watched namespace")
check("--launcher-metrics-port=9500" in operator_args(docs), "metrics.launcherPort reaches the operator's flags")
check(not find(render("metrics.launcherPodMonitor.enabled=true", "metrics.launcherPort=0"), "PodMonitor"),
      "launcherPort=0 turns the launchers' metrics and their PodMonitor off")
rules = find(docs, "PrometheusRule")
alerts = [r["alert"] for g in rules[0]["spec"]["groups"] for r in g["rules"]] if rules else []
check(alerts == ["TrainingJobFailed", "TrainingJobRestartStorm"], "prometheusRule.enabled renders both alerts")
check(not find(docs, "ConfigMap"), "grafanaDashboard.enabled=false drops the dashboard")
dep = find(docs, "Deployment")[0]
check(dep["spec"]["replicas"] == 1 and dep["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":9.9.9"),
      "replicaCount and image.tag are honoured")

for bad_value, field in [("replicaCount=two", "replicaCount"), ("workers=0", "workers"), ("logLevel=loud", "logLevel"),
                         ("metrics.launcherPort=70000", "launcherPort"), ("gangScheduling=sometimes", "gangScheduling"),
                         ("kueue.enabled=yes", "kueue")]:
    bad = run("helm", "template", "kd", CHART, "--set", bad_value, check=False)
    check(bad.returncode != 0 and field in bad.stderr, f"values.schema.json refuses {bad_value}: {' '.join(bad.stderr.split())[-100:]}")

# networkPolicy: enabled "auto" by default: on where the cluster serves a network plugin's API known to enforce
# NetworkPolicy (helm template sees the cluster's APIs only through --api-versions). On, with perJob (the default),
# the operator gives each job its own policy: it is told the peers besides the job's own pods (the operator's pods on
# the rendezvous port, metricsFrom on kd-metrics, extraIngress) and may list, watch and create NetworkPolicies; with
# perJob=false one NetworkPolicy per namespace where jobs run lets in every TrainingJob pod of the namespace and
# the same peers. No rule may lack a "from": an empty one admits everybody.
def render_with(*args):
    return [d for d in yaml.safe_load_all(run("helm", "template", "kd", CHART, "--namespace", "kubedist-system",
                                               *args).stdout) if d]
def netpol_verbs(docs, kind="ClusterRole"):
    return [r["verbs"] for r in find(docs, kind)[0]["rules"] if r.get("resources") == ["networkpolicies"]]
def ingress_flag(docs):
    flags = [a for a in operator_args(docs) if a.startswith("--network-policy-ingress=")]
    return json.loads(flags[0].split("=", 1)[1]) if flags else None
def isolates(docs, kind="ClusterRole"):
    return "--network-policy-per-job" in operator_args(docs) and netpol_verbs(docs, kind) == [["list", "watch", "create"]]
def leaves_alone(docs, kind="ClusterRole"):
    return ("--network-policy-per-job" not in operator_args(docs) and ingress_flag(docs) is None
            and not netpol_verbs(docs, kind) and not find(docs, "NetworkPolicy"))

plain = render()
check(leaves_alone(plain) and leaves_alone(render("watchNamespace=team-a"), "Role"),
      "networkPolicy auto, on a cluster serving no enforcing plugin's API: no policy, no flag, no NetworkPolicy rights")
for api in ("crd.projectcalico.org/v1", "cilium.io/v2", "crd.antrea.io/v1beta1", "networking.k8s.aws/v1alpha1"):
    check(isolates(render_with("--api-versions", api)) and not find(render_with("--api-versions", api), "NetworkPolicy"),
          f"networkPolicy auto, on a cluster serving {api}: a policy per job, cluster-wide without listing namespaces")
check(leaves_alone(render_with("--api-versions", "cilium.io/v2", "--set", "networkPolicy.enabled=false")),
      "networkPolicy.enabled=false wins over what the cluster serves")
JOB_PODS = {"matchExpressions": [{"key": "kubedist.io/job-name", "operator": "Exists"}]}
OPERATOR_PEER = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kubedist-system"}},
                 "podSelector": {"matchLabels": {"app.kubernetes.io/name": "kubedist", "app.kubernetes.io/instance": "kd",
                                                 "app.kubernetes.io/component": "operator"}}}
MONITORING = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
want = [{"from": [OPERATOR_PEER], "ports": [{"port": "rendezvous", "protocol": "TCP"}]},
        {"from": MONITORING, "ports": [{"port": "kd-metrics", "protocol": "TCP"}]}]
per_job = render("networkPolicy.enabled=true")
check(isolates(per_job) and ingress_flag(per_job) == want and not find(per_job, "NetworkPolicy"),
      "enabled, perJob: the operator makes each job's policy, told the operator's pods on the port named rendezvous "
      "and namespace monitoring on kd-metrics as the other peers, and may list, watch and create NetworkPolicies, "
      "nothing more" + ("" if ingress_flag(per_job) == want else f": {ingress_flag(per_job)}"))
check(isolates(render("networkPolicy.enabled=true", "watchNamespace=team-a"), "Role"),
      "enabled, perJob, namespaced: the same rights in the watched namespace's Role")
extra = {"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 6006}]}
variants = {
    "launcherPort=0": render("networkPolicy.enabled=true", "metrics.launcherPort=0"),
    "metricsFrom=[]": render("networkPolicy.enabled=true", set_json=["networkPolicy.metricsFrom=[]"]),
    "extraIngress": render("networkPolicy.enabled=true", set_json=["networkPolicy.extraIngress=" + json.dumps([extra])]),
}
rules = {k: ingress_flag(v) for k, v in variants.items()}
check(rules["launcherPort=0"] == want[:1] and rules["metricsFrom=[]"] == want[:1] and rules["extraIngress"] == want + [extra],
      "launcherPort=0 or an empty metricsFrom drop the metrics rule (never a rule open to all); extraIngress is added")
shared_docs = render("networkPolicy.enabled=true", "networkPolicy.namespaces={team-a,team-b}", "networkPolicy.perJob=false")
pols = find(shared_docs, "NetworkPolicy")
check([p["metadata"]["namespace"] for p in pols] == ["team-a", "team-b"]
      and len({p["metadata"]["name"] for p in pols}) == 1,
      "perJob=false: one NetworkPolicy in each listed namespace")
shared_want = [{"from": [{"podSelector": JOB_PODS}]}] + want
same = all(p["spec"] == {"podSelector": JOB_PODS, "policyTypes": ["Ingress"], "ingress": shared_want} for p in pols)
check(same and "--network-policy-per-job" not in operator_args(shared_docs) and not netpol_verbs(shared_docs),
      "perJob=false: it selects the training pods and lets in every TrainingJob pod of the namespace on every port and "
      "the same peers, nothing else; the operator gets no NetworkPolicy rights" +
      ("" if same or not pols else f": {json.dumps(pols[0]['spec'])}"))
ns_pols = find(render("watchNamespace=team-a", "networkPolicy.enabled=true", "networkPolicy.perJob=false"), "NetworkPolicy")
check([p["metadata"]["namespace"] for p in ns_pols] == ["team-a"], "perJob=false, namespaced: the policy is in watchNamespace")
nothing = run("helm", "template", "kd", CHART, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.perJob=false",
              check=False)
check(nothing.returncode != 0 and "networkPolicy.namespaces" in nothing.stderr,
      f"perJob=false, cluster-wide, no namespaces listed: refused: {' '.join(nothing.stderr.split())[-120:]}")
check(all(r.get("from") for v in list(rules.values()) + [want, shared_want] for r in v),
      "every rule names its peers (no rule without a from, which would admit everybody)")
for bad_value, field in [("networkPolicy.namespaces={Team_A}", "namespaces"), ("networkPolicy.perJob=sometimes", "perJob"),
                         ("networkPolicy.enabled=yes", "enabled")]:
    bad = run("helm", "template", "kd", CHART, "--set", "networkPolicy.enabled=true", "--set", bad_value, check=False)
    check(bad.returncode != 0 and field in bad.stderr, f"values.schema.json refuses {bad_value}")

# Bad nodes: the operator's limit is the chart's; tainting them for everyone is asked for, and only then may the
# operator patch nodes (least privilege), and only in the cluster-wide install, where nodes are watched.
def node_verbs(docs):
    return [r["verbs"] for r in find(docs, "ClusterRole")[0]["rules"] if r.get("resources") == ["nodes"]]
check("--avoid-node-after-failures=2" in operator_args(plain) and "--taint-avoided-nodes" not in operator_args(plain)
      and node_verbs(plain) == [["get", "list", "watch"]],
      "by default a job avoids a node after 2 failures that are not its code's, and the operator may not patch nodes")
tainting = render("avoidNodeAfterFailures=3", "taintAvoidedNodes=true")
check("--avoid-node-after-failures=3" in operator_args(tainting) and "--taint-avoided-nodes" in operator_args(tainting)
      and node_verbs(tainting) == [["get", "list", "watch", "patch"]],
      "avoidNodeAfterFailures and taintAvoidedNodes reach the flags; tainting grants patch on nodes")
refused = run("helm", "template", "kd", CHART, "--set", "watchNamespace=team-a", "--set", "taintAvoidedNodes=true",
              check=False)
check(refused.returncode != 0 and "taintAvoidedNodes: tainting nodes needs the cluster-wide install" in refused.stderr,
      f"a namespaced install that asks to taint nodes is refused: {' '.join(refused.stderr.split())[-140:]}")
negative = run("helm", "template", "kd", CHART, "--set", "avoidNodeAfterFailures=-1", check=False)
check(negative.returncode != 0 and "avoidNodeAfterFailures" in negative.stderr,
      "values.schema.json refuses a negative avoidNodeAfterFailures")

# The plain manifests are what the chart renders now, and the API server accepts them.
import tempfile
with tempfile.TemporaryDirectory() as tmp:
    fresh = os.path.join(tmp, "kubedist.yaml")
    run(os.path.join(SRC, "deploy", "manifests", "generate.sh"), fresh)
    with open(fresh) as a, open(os.path.join(SRC, "deploy", "manifests", "kubedist.yaml")) as b:
        check(a.read() == b.read(), "deploy/manifests/kubedist.yaml is up to date (deploy/manifests/generate.sh)")
applied = run("kubectl", "apply", "-k", os.path.join(SRC, "deploy", "manifests"), check=False)
check(applied.returncode == 0, "kubectl apply -k deploy/manifests is accepted by the API server" +
      ("" if applied.returncode == 0 else ": " + applied.stderr))
# Remove what it made, except the CRD that other tests share.
run("kubectl", "delete", "namespace", "kubedist-system", "--wait=false", check=False)
run("kubectl", "delete", "clusterrole,clusterrolebinding", "kubedist", check=False)

# Installed into the real API server: the ServiceAccount may do what the operator does, and no more.
ns = f"kubedist-helm-{int(time.time())}"
release = "kd"
try:
    run("kubectl", "create", "namespace", ns)
    inst = run("helm", "install", release, CHART, "--namespace", ns, "--wait=false", check=False)
    check(inst.returncode == 0, "helm install into the local control plane" + ("" if inst.returncode == 0 else ": " + inst.stderr))
    sa = f"system:serviceaccount:{ns}:{release}-kubedist"

    def can(verb, resource, namespace="default", sa=sa):
        resource, _, sub = resource.partition("/")
        name = ""
        if "=" in resource:  # "secrets=NAME": that object only
            resource, name = resource.split("=")
            resource += "/" + name
        p = run("kubectl", "auth", "can-i", verb, resource, "--as", sa, "-n", namespace,
                *(["--subresource", sub] if sub else []), check=False)
        return p.stdout.strip() == "yes"

    needed = [("list", "trainingjobs.kubedist.io"), ("watch", "trainingjobs.kubedist.io"),
              ("delete", "trainingjobs.kubedist.io"), ("patch", "trainingjobs.kubedist.io/status"),
              ("create", "pods"), ("delete", "pods"), ("watch", "pods"), ("create", "services"),
              ("create", "events"), ("patch", "events"), ("create", "workloads.scheduling.k8s.io"),
              ("delete", "workloads.scheduling.k8s.io"), ("create", "podgroups.scheduling.k8s.io"),
              ("watch", "podgroups.scheduling.k8s.io"), ("delete", "podgroups.scheduling.k8s.io"),
              ("create", "secrets"), ("get", "secrets=kubedist-rendezvous"), ("watch", "secrets=kubedist-rendezvous"),
              ("list", "nodes"), ("get", "nodes")]
    missing = [f"{v} {r}" for v, r in needed if not can(v, r)]
    check(not missing, "the chart's ServiceAccount may do all the operator needs" + (f" (missing: {missing})" if missing else ""))
    check(can("create", "leases.coordination.k8s.io", ns) and can("patch", f"leases.coordination.k8s.io={release}-kubedist", ns)
          and not can("patch", "leases.coordination.k8s.io=another", ns),
          "it may create its leader-election Lease in its namespace and renew that Lease only")
    excess = [f"{v} {r}" for v, r in [("update", "secrets"), ("create", "deployments.apps"), ("update", "pods"),
                                       ("get", "pods"), ("delete", "services"), ("delete", "secrets"),
                                       ("delete", "nodes"), ("create", "trainingjobs.kubedist.io"),
                                       ("update", "trainingjobs.kubedist.io/status"),
                                       ("update", "leases.coordination.k8s.io"), ("update", "events"),
                                       ("create", "events.events.k8s.io"),
                                       ("update", "podgroups.scheduling.k8s.io")] if can(v, r)]
    check(not excess, "and nothing more (no other workloads, no updates, no leases elsewhere)" + (f" (excess: {excess})" if excess else ""))
    # The operator cannot read Secrets it did not create: only kubedist-rendezvous, by name.
    readable = [f"{v} {r}" for v, r in [("get", "secrets"), ("list", "secrets"), ("watch", "secrets"),
                                         ("get", "secrets=db-password"), ("get", "secrets=kubedist-rdzv"),
                                         ("get", "secrets=team-token")] if can(v, r)]
    check(not readable and can("get", "secrets=kubedist-rendezvous") and can("list", "secrets=kubedist-rendezvous"),
          "kubectl auth can-i: the operator may read Secret kubedist-rendezvous and no other Secret" +
          (f" (it may: {readable})" if readable else ""))
    keyring = f"{release}-kubedist-keyring"
    check(can("get", f"secrets={keyring}", ns) and can("patch", f"secrets={keyring}", ns)
          and not any(can(v, f"secrets={keyring}", ns) for v in ("update", "delete", "list", "watch"))
          and not can("get", "secrets", ns) and not can("get", "secrets=another", ns)
          and not can("patch", "secrets=kubedist-rendezvous", "default"),
          f"kubectl auth can-i: in its own namespace it may read and patch its keyring Secret {keyring} only")
    dep = run("kubectl", "-n", ns, "get", "deployment", f"{release}-kubedist", "-o", "json", check=False)
    check(dep.returncode == 0, "the operator Deployment exists in the cluster")
    if dep.returncode == 0:
        args = json.loads(dep.stdout)["spec"]["template"]["spec"]["containers"][0]["args"]
        check(f"--keyring-secret={ns}/{keyring}" in args, f"the operator is told its keyring ({args})")
    secret = run("kubectl", "-n", ns, "get", "secret", keyring, "-o", "json", check=False)
    check(secret.returncode == 0 and json.loads(secret.stdout)["metadata"]["annotations"].get(
        "helm.sh/resource-policy") == "keep", f"the chart made the keyring Secret {keyring}, kept on uninstall")

    # The namespaced install (watchNamespace): a Role in the watched namespace, nothing in any other.
    jobs_ns = f"{ns}-jobs"
    run("kubectl", "create", "namespace", jobs_ns)
    inst = run("helm", "install", "kdns", CHART, "--namespace", ns, "--set", f"watchNamespace={jobs_ns}",
               "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.perJob=false", "--wait=false", check=False)
    check(inst.returncode == 0, "helm install of the namespaced mode, with networkPolicy.enabled and perJob=false" +
          ("" if inst.returncode == 0 else ": " + inst.stderr))
    pol = run("kubectl", "-n", jobs_ns, "get", "networkpolicy", "kdns-kubedist-training-pods", "-o", "json", check=False)
    check(pol.returncode == 0 and json.loads(pol.stdout)["spec"]["ingress"][1]["from"][0]["namespaceSelector"] ==
          {"matchLabels": {"kubernetes.io/metadata.name": ns}},
          "the API server took its NetworkPolicy in the watched namespace, the operator's namespace in its rules" +
          ("" if pol.returncode == 0 else ": " + pol.stderr))
    nsa = f"system:serviceaccount:{ns}:kdns-kubedist"
    netpol = [("list", "networkpolicies.networking.k8s.io"), ("watch", "networkpolicies.networking.k8s.io"),
              ("create", "networkpolicies.networking.k8s.io")]
    check(not any(can(v, r, jobs_ns, nsa) for v, r in netpol),
          "perJob=false: the operator may not touch NetworkPolicies")
    up = run("helm", "upgrade", "kdns", CHART, "--namespace", ns, "--reuse-values", "--set", "networkPolicy.perJob=true",
             "--wait=false", check=False)
    check(up.returncode == 0, "helm upgrade to networkPolicy.perJob=true" + ("" if up.returncode == 0 else ": " + up.stderr))
    gone = run("kubectl", "-n", jobs_ns, "get", "networkpolicy", "kdns-kubedist-training-pods", check=False)
    check(gone.returncode != 0, "perJob: the namespace's policy is gone (each job's own takes its place)")
    check(all(can(v, r, jobs_ns, nsa) for v, r in netpol)
          and not any(can(v, "networkpolicies.networking.k8s.io", jobs_ns, nsa) for v in ("update", "patch", "delete"))
          and not any(can(v, r, "default", nsa) for v, r in netpol)
          and not any(can(v, r) for v, r in netpol),
          "perJob, namespaced: it may list, watch and create NetworkPolicies in the watched namespace only (the "
          "cluster-wide release, auto on a cluster without an enforcing plugin, may not at all)")
    there = [(v, r) for v, r in needed if r != "nodes" and not can(v, r, jobs_ns, nsa)]
    check(not there, "namespaced: the operator may do what it needs in the watched namespace" +
          (f" (missing: {there})" if there else ""))
    elsewhere = [f"{v} {r}" for v, r in needed if can(v, r, "default", nsa)]
    check(not elsewhere, "namespaced: and nothing in another namespace, nor on nodes" +
          (f" (it may: {elsewhere})" if elsewhere else ""))
    readable = [f"{v} {r}" for v, r in [("get", "secrets"), ("list", "secrets"), ("watch", "secrets"),
                                         ("get", "secrets=db-password")] if can(v, r, jobs_ns, nsa)]
    check(not readable and can("get", "secrets=kubedist-rendezvous", jobs_ns, nsa),
          "namespaced, kubectl auth can-i: it may read Secret kubedist-rendezvous of the watched namespace and no "
          "other Secret" + (f" (it may: {readable})" if readable else ""))
    run("helm", "uninstall", release, "--namespace", ns, check=False)
    check(run("kubectl", "-n", ns, "get", "secret", keyring, check=False).returncode == 0,
          "helm uninstall left the keyring Secret (a reinstall gives running jobs their keys back)")
finally:
    run("helm", "uninstall", "kdns", "--namespace", ns, check=False)
    run("helm", "uninstall", release, "--namespace", ns, check=False)
    run("kubectl", "delete", "namespace", f"{ns}-jobs", "--wait=false", check=False)
    run("kubectl", "delete", "namespace", ns, "--wait=false", check=False)

print(f"chart_test: {'all checks passed' if not failures else str(len(failures)) + ' failed'}")
sys.exit(1 if failures else 0)
