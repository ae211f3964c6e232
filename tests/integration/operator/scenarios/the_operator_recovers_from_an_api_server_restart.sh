#!/usr/bin/env bash
# Pods bound to a node up front: kube-scheduler can crash on pods it schedules right after an API server
# restart ("scheduler cache is corrupted"), which is not the operator's to test and would stall later tests.
# usage: the_operator_recovers_from_an_api_server_restart.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario apiserver

bound="      nodeName: gpu-node-0"
start_operator
job_yaml j 2 "" "$bound" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
cluster=$(basename "$(dirname "$KUBECONFIG")")
"$KUBEDIST_SOURCE_DIR/deploy/local/cluster.sh" restart-apiserver "$cluster" >/dev/null 2>&1
eventually 60 "API server back" kubectl get --raw /readyz
kill -0 "$OP_PID" || fail "operator died with the API server"
# Only the operator's own work is checked: whether kube-scheduler survives the restart is not ours to test.
old=$(jp pod/j-node-1 '{.metadata.uid}')
kubectl -n "$NS" delete pod j-node-1 --wait=false >/dev/null
recreated() { uid=$(jp pod/j-node-1 '{.metadata.uid}') && [ -n "$uid" ] && [ "$uid" != "$old" ]; }
eventually 60 "j-node-1 recreated after the API server restart" recreated
job_yaml k 3 "" "$bound" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "a new job's pods are created" pods_are k 3
eventually 30 "a new job's status is written" bash -c "[ \"\$(kubectl -n $NS get tj/k -o jsonpath='{.status.replicas}')\" = 3 ]"
grep -q 'watch error 410\|dropped' "$OP_LOG" || fail "the operator never noticed the restart"
pass "the operator recovered from an API server restart by itself (watches resumed or relisted)"
