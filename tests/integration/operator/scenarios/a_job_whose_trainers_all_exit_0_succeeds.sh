#!/usr/bin/env bash
# A job whose trainers all exit 0 succeeds.
# usage: a_job_whose_trainers_all_exit_0_succeeds.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario succeed

start_operator
job_yaml j 3 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "3 pods running" all_running j 3
finish_pod j-node-1 0
sleep_check() { phase_is j Running; }
eventually 10 "still Running while only some nodes finished" sleep_check
# Node 0 last: once it (the rendezvous host) exits 0, the job ends at once (a_finished_group_is_a_finished_job.sh).
finish_pod j-node-2 0
finish_pod j-node-0 0
eventually 30 "job Succeeded" phase_is j Succeeded
[ -n "$(jp tj/j '{.status.completionTime}')" ] || fail "no completionTime"
[ "$(jp tj/j '{.status.conditions[?(@.type=="Succeeded")].status}')" = True ] || fail "no Succeeded condition"
eventually 10 "AllNodesSucceeded event" has_event j AllNodesSucceeded
pass "all trainer containers exiting 0 make the job Succeeded, with completionTime and an Event"
[ "$(pod_count j)" -eq 3 ] || fail "cleanPodPolicy Running must keep finished pods"
