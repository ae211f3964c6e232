#!/usr/bin/env bash
# Issue 40 item 3: one pod per node, and a topology key. On two nodes of the test's own with room for both pods on either (8 GPUs each,
# 1 asked per pod), the real scheduler puts a job's two pods on distinct nodes by default (spec.placement.
# onePodPerNode unset: Preferred); with Required and a third pod, the pod that finds no node of its own stays
# Pending, Unschedulable for the job's anti-affinity; with None, nothing of the operator's keeps them apart.
# usage: a_jobs_pods_go_to_distinct_nodes_as_its_placement_says.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario placement
add_test_node "$NS-a" 8
add_test_node "$NS-b" 8
start_operator --watch-nodes  # it reads nodes: a topologyKey job's pods learn their node's domain (below)

nodes_of() { kubectl -n "$NS" get pods -l "kubedist.io/job-name=$1" -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep . | sort; }
scheduled() { [ "$(nodes_of "$1" | grep -c .)" -eq "$2" ]; }

pool_job_yaml spread 2 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 60 "spread's 2 pods scheduled" scheduled spread 2
[ "$(nodes_of spread | uniq | wc -l)" -eq 2 ] || fail "spread's pods share a node: $(nodes_of spread | tr '\n' ' ')"
terms=$(jp pod/spread-node-0 '{.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey}')
[ "$terms" = kubernetes.io/hostname ] || fail "no preferred anti-affinity by host name: '$terms'"
pass "by default (Preferred) the job's 2 pods went to distinct nodes: $(nodes_of spread | tr '\n' ' ')"

pool_job_yaml strict 3 1 "  placement: {onePodPerNode: Required}" | kubectl -n "$NS" apply -f - >/dev/null
eventually 60 "2 of strict's 3 pods scheduled" scheduled strict 2
pending_message() {
  kubectl -n "$NS" get pods -l kubedist.io/job-name=strict \
    -o jsonpath='{range .items[*]}{.spec.nodeName}{"|"}{.status.conditions[?(@.type=="PodScheduled")].message}{"\n"}{end}' |
    sed -n 's/^|//p'
}
unschedulable() { [[ $(pending_message) == *"anti-affinity"* ]]; }
eventually 60 "strict's third pod Unschedulable for the anti-affinity" unschedulable
[ "$(nodes_of strict | uniq | wc -l)" -eq 2 ] || fail "strict's pods share a node"
pass "Required: 2 pods on 2 nodes, the third Pending for the job's pod anti-affinity"

pool_job_yaml packed 2 1 "  placement: {onePodPerNode: None}" | kubectl -n "$NS" apply -f - >/dev/null
eventually 60 "packed's 2 pods scheduled" scheduled packed 2
[ -z "$(jp pod/packed-node-0 '{.spec.affinity.podAntiAffinity}')" ] || fail "None still got an anti-affinity"
pass "None: no anti-affinity of the operator's"

bad=$(kubectl -n "$NS" apply -f - 2>&1 <<YAML || true
$(pool_job_yaml bad 2 1 "  placement: {onePodPerNode: Always}")
YAML
)
[[ $bad == *'Unsupported value: "Always"'* ]] || fail "the schema took onePodPerNode: Always: $bad"
pass "onePodPerNode: Always is refused by the schema"

# spec.placement.topologyKey: two racks of three nodes (label kubedist.io/test-rack); each of three jobs of 2 nodes
# and 1 spare, all three pods on distinct nodes, keeps to one rack, its spare beside the nodes it backs (by chance,
# 3 pods on 3 of the 6 nodes share a rack 1 time in 10, all three jobs 1 in 1000).
kubectl -n "$NS" delete tj spread strict packed --wait=false >/dev/null
no_pods() { [ -z "$(kubectl -n "$NS" get pods -o name)" ]; }
eventually 60 "the earlier jobs' pods gone" no_pods
for n in c d e f; do add_test_node "$NS-$n" 8; done
for n in a b c; do kubectl label node "$NS-$n" kubedist.io/test-rack=r1 >/dev/null; done
for n in d e f; do kubectl label node "$NS-$n" kubedist.io/test-rack=r2 >/dev/null; done
for j in rack-1 rack-2 rack-3; do
  pool_job_yaml "$j" 2 1 "  spares: 1
  placement: {topologyKey: kubedist.io/test-rack}" | kubectl -n "$NS" apply -f - >/dev/null
done
racks_of() { for n in $(nodes_of "$1"); do kubectl get node "$n" -o jsonpath='{.metadata.labels.kubedist\.io/test-rack}{"\n"}'; done | sort -u; }
for j in rack-1 rack-2 rack-3; do
  eventually 60 "$j's 2 pods and its spare scheduled" scheduled "$j" 3
  [ "$(nodes_of "$j" | uniq | wc -l)" -eq 3 ] || fail "$j's pods share a node: $(nodes_of "$j" | tr '\n' ' ')"
  [ "$(racks_of "$j" | wc -l)" -eq 1 ] || fail "$j's pods are in racks $(racks_of "$j" | tr '\n' ' ')"
  key=$(jp "pod/$j-spare-0" '{.spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].podAffinityTerm.topologyKey}')
  [ "$key" = kubedist.io/test-rack ] || fail "$j's spare has no preferred pod affinity by the rack: '$key'"
  # Each bound pod learns its node's rack (an annotation the kubelet projects into its launcher's domain file).
  annotated() {
    local p
    for p in "$1-node-0" "$1-node-1" "$1-spare-0"; do
      [ "$(jp "pod/$p" '{.metadata.annotations.kubedist\.io/topology-domain}')" = "$(racks_of "$1")" ] || return 1
    done
  }
  eventually 30 "$j's pods annotated with their rack" annotated "$j"
  file=$(jp "pod/$j-node-1" '{.spec.containers[0].env[?(@.name=="KUBEDIST_TOPOLOGY_DOMAIN_FILE")].value}')
  [ "$file" = /kubedist/podinfo/topology-domain ] || fail "$j-node-1's launcher is not told its domain file: '$file'"
done
pass "topologyKey: each job's 2 pods and spare on 3 distinct nodes of one rack, each pod annotated with it ($(for j in rack-1 rack-2 rack-3; do printf '%s:%s ' "$j" "$(racks_of "$j")"; done))"

bad=$(kubectl -n "$NS" apply -f - 2>&1 <<YAML || true
$(pool_job_yaml bad-key 2 1 "  placement: {topologyKey: 'my rack'}")
YAML
)
[[ $bad == *'spec.placement.topologyKey in body should match'* ]] || fail "the schema took topologyKey 'my rack': $bad"
pass "topologyKey 'my rack' is refused by the schema"
