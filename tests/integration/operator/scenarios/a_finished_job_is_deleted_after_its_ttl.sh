#!/usr/bin/env bash
# A finished job is deleted after its ttl.
# usage: a_finished_job_is_deleted_after_its_ttl.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario ttl

start_operator
job_yaml j 2 "  ttlSecondsAfterFinished: 2
  cleanPodPolicy: None" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
finish_pod j-node-0 0
finish_pod j-node-1 0
eventually 30 "job Succeeded" phase_is j Succeeded
[ "$(pod_count j)" -eq 2 ] || fail "cleanPodPolicy None must keep the pods"
job_gone() { ! kubectl -n "$NS" get tj j >/dev/null 2>&1; }
eventually 30 "job deleted after ttlSecondsAfterFinished" job_gone
eventually 60 "its pods garbage-collected" pods_are j 0
pass "ttlSecondsAfterFinished=2 deletes the finished job, and its pods with it"
