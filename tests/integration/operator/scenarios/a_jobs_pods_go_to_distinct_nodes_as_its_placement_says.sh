#!/usr/bin/env bash
# Issue 40 item 3: one pod per node. On two nodes of the test's own with room for both pods on either (8 GPUs each,
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
start_operator

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
