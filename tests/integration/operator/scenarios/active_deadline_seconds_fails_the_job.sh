#!/usr/bin/env bash
# Active deadline seconds fails the job.
# usage: active_deadline_seconds_fails_the_job.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario deadline

start_operator
job_yaml j 2 "  activeDeadlineSeconds: 3
  cleanPodPolicy: All" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
eventually 30 "job Failed after its deadline" phase_is j Failed
[ "$(jp tj/j '{.status.conditions[?(@.type=="Failed")].reason}')" = DeadlineExceeded ] || fail "reason"
eventually 30 "cleanPodPolicy All removes every pod" pods_are j 0
eventually 10 "DeadlineExceeded event" has_event j DeadlineExceeded
pass "activeDeadlineSeconds=3 fails the job (DeadlineExceeded) and cleanPodPolicy All deletes its pods"
