#!/usr/bin/env bash
# Failed pods are recreated until the backoff limit.
# usage: failed_pods_are_recreated_until_the_backoff_limit.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario fail

start_operator
job_yaml j 2 "  backoffLimit: 1" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
old=$(jp pod/j-node-0 '{.metadata.uid}')
finish_pod j-node-0 137
# pod_failure, not all restarts: kwok, playing the kubelets, deletes pods by name and now and then takes the
# replacement along with the failed pod (a node_lost that is kwok's, not the operator's).
restarted() { [ "$(jp tj/j '{.status.restartsByReason.pod_failure}')" = 1 ] && [ "$(jp pod/j-node-0 '{.metadata.uid}')" != "$old" ]; }
eventually 30 "restart counted and node 0 recreated" restarted
eventually 10 "PodFailed event" has_event j PodFailed
eventually 30 "job Running again" phase_is j Running
pass "a failed pod is recreated and counted (pod_failure=1)"
finish_pod j-node-1 1
eventually 30 "job Failed" phase_is j Failed
[ "$(jp tj/j '{.status.conditions[?(@.type=="Failed")].reason}')" = BackoffLimitExceeded ] || fail "reason"
[ "$(jp tj/j '{.status.restartsByReason.pod_failure}')" = 1 ] || fail "pod failures counted after the limit"
eventually 10 "BackoffLimitExceeded event" has_event j BackoffLimitExceeded
eventually 30 "running pod cleaned up" pods_are j 1
pass "the second failure exceeds backoffLimit 1: Failed, BackoffLimitExceeded, running pods cleaned up"
