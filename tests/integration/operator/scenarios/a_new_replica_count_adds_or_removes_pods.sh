#!/usr/bin/env bash
# A new replica count adds or removes pods.
# usage: a_new_replica_count_adds_or_removes_pods.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario scale

start_operator
job_yaml j 2 "  minReplicas: 1
  maxReplicas: 4" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
kubectl -n "$NS" scale tj/j --replicas=4 >/dev/null
eventually 30 "4 pods running" all_running j 4
eventually 30 "status.replicas 4 and Running" bash -c "[ \"\$(kubectl -n $NS get tj/j -o jsonpath='{.status.replicas} {.status.phase}')\" = '4 Running' ]"
eventually 10 "ScaledUp event" has_event j ScaledUp
pass "scale up to 4"
kubectl -n "$NS" scale tj/j --replicas=1 >/dev/null
eventually 30 "1 pod left" pods_are j 1
[ "$(jp pod/j-node-0 '{.metadata.name}')" = j-node-0 ] || fail "node 0 must stay"
eventually 30 "status.replicas 1" bash -c "[ \"\$(kubectl -n $NS get tj/j -o jsonpath='{.status.replicas} {.status.phase}')\" = '1 Running' ]"
eventually 10 "ScaledDown event" has_event j ScaledDown
pass "scale down to 1 keeps node 0"
