#!/usr/bin/env bash
# Suspend deletes the pods and resume recreates them.
# usage: suspend_deletes_the_pods_and_resume_recreates_them.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario suspend

start_operator
job_yaml j 3 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "3 pods running" all_running j 3
kubectl -n "$NS" patch tj j --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
eventually 30 "pods deleted" pods_are j 0
eventually 30 "Suspended" phase_is j Suspended
pass "suspend deletes the pods"
kubectl -n "$NS" patch tj j --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
eventually 30 "3 pods running again" all_running j 3
eventually 30 "Running again" phase_is j Running
[ "$(jp tj/j '{.status.conditions[?(@.type=="Suspended")].status}')" = False ] || fail "Suspended condition"
[ "$(jp tj/j '{.status.restarts}')" = 0 ] || fail "resume counted restarts"
eventually 10 "Resumed event" has_event j Resumed
pass "resume recreates them cleanly"
