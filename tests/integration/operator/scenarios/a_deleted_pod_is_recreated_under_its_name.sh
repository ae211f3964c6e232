#!/usr/bin/env bash
# A deleted pod is recreated under its name.
# usage: a_deleted_pod_is_recreated_under_its_name.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario recreate

start_operator
job_yaml j 3 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "3 pods running" all_running j 3
old=$(jp pod/j-node-1 '{.metadata.uid}')
kubectl -n "$NS" delete pod j-node-1 --wait=false >/dev/null
recreated() { [ "$(jp pod/j-node-1 '{.metadata.uid}')" != "$old" ] && all_running j 3; }
eventually 30 "j-node-1 recreated" recreated
pass "a deleted pod is recreated under the same name"
eventually 10 "CreatedPods event" has_event j CreatedPods
eventually 10 "job Running again" phase_is j Running
