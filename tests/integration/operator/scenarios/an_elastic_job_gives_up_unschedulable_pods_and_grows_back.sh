#!/usr/bin/env bash
# Two 8-GPU nodes for a job of 3 nodes x 8 GPUs (min 2): one pod cannot be placed (which one is the scheduler's
# choice), the job is given 2 nodes after the grace, so j-node-2 goes (ranks stay dense) and j-node-0 and
# j-node-1 run; a third node appears and the job grows back to 3. A job no node can take shows Pending at once.
# usage: an_elastic_job_gives_up_unschedulable_pods_and_grows_back.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario elastic

add_test_node "$NS-a"
add_test_node "$NS-b"
start_operator --watch-nodes --unschedulable-grace=3s --launcher-poll-interval=0
pool_job_yaml j 3 8 "  minReplicas: 2
  maxReplicas: 3" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" bash -c "[ \$(kubectl -n $NS get pods -l kubedist.io/job-name=j --field-selector=status.phase=Running --no-headers | wc -l) -eq 2 ]"
unschedulable() {
  kubectl -n "$NS" get pods -l kubedist.io/job-name=j \
    -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="PodScheduled")].reason}{"\n"}{end}' | grep -qx Unschedulable
}
eventually 30 "a pod of j Unschedulable" unschedulable
eventually 30 "ScaledDown event" has_event j ScaledDown
ranks_0_1() { [ "$(kubectl -n "$NS" get pods -l kubedist.io/job-name=j -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | sort | tr '\n' ' ')" = "j-node-0 j-node-1 " ]; }
eventually 30 "j-node-2 given up, j-node-0 and j-node-1 kept" ranks_0_1
eventually 30 "Running on 2 nodes" bash -c "[ \"\$(kubectl -n $NS get tj/j -o jsonpath='{.status.phase} {.status.replicas} {.status.elastic.targetReplicas} {.status.elastic.reason}')\" = 'Running 2 2 Unschedulable' ]"
[ "$(jp tj/j '{.spec.replicas}')" = 3 ] || fail "spec.replicas must stay the user's"
kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=ScaledDown -o jsonpath='{.items[0].message}' |
  grep -qE "j-node-[0-9] could not be scheduled for 3s" || fail "ScaledDown message"
metric_is() { local out; out=$(curl -sf "http://127.0.0.1:$OP_PORT/metrics") || return 1; grep -qxF "$1" <<<"$out"; }
L="job_name=\"j\",job_namespace=\"$NS\""
eventually 10 "target metric 2" metric_is "kubedist_job_target_nodes{$L} 2"
eventually 10 "one scale-down decision counted" metric_is "kubedist_scale_decisions_total{direction=\"down\",$L} 1"
pass "elastic: a pod unschedulable past --unschedulable-grace is given up; the job runs on minReplicas=2 (Event ScaledDown, metrics)"
! has_event j ScalingUp || fail "grew back before any capacity returned"
add_test_node "$NS-c"
eventually 30 "ScalingUp event" has_event j ScalingUp
eventually 30 "3 pods running" all_running j 3
eventually 30 "ScaledUp event" has_event j ScaledUp
eventually 30 "Running on 3, elastic status cleared" bash -c "[ \"\$(kubectl -n $NS get tj/j -o jsonpath='{.status.phase} {.status.replicas} {.status.elastic}')\" = 'Running 3 ' ]"
reasons_are j "node_lost=0 pod_failure=0 scale=0 worker_crash=0 restarts=0" || fail "restarts: $(reasons j)"
eventually 10 "target metric 3" metric_is "kubedist_job_target_nodes{$L} 3"
eventually 10 "one scale-up decision counted" metric_is "kubedist_scale_decisions_total{direction=\"up\",$L} 1"
pass "elastic: with a node back the job grows to spec.replicas=3 again (Events ScalingUp, ScaledUp, metrics)"

# A job whose pod no node can take: a Pending status is held back while pods make their way through a busy
# cluster (up to 30 s), but a pod the scheduler marked Unschedulable is news, written at once.
pool_job_yaml k 1 16 | kubectl -n "$NS" apply -f - >/dev/null
k_pending() { [ "$(jp tj/k '{.status.phase} {.status.replicas} {.status.readyReplicas}')" = "Pending 1 0" ]; }
eventually 8 "k's Pending status written well before the hold (30 s) ends" k_pending
pass "a job whose pod cannot be placed shows Pending as soon as the scheduler says so"
