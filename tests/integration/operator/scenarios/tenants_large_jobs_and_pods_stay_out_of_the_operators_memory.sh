#!/usr/bin/env bash
# Issue 39 item 1: four suspended TrainingJobs of 1.3 MB (their template holds an environment value that large) and
# 120 Pending pods of 1 MB each, labelled as a job's pods, in the job's namespace. The operator lists them in small
# pages read item by item (a pod straight into the facts it keeps, its environment skipped unread), refuses the
# oversized templates with InvalidSpec instead of holding them, and so starts, and starts again, with its peak memory
# below the chart's 128 MiB limit; a new job there gets its pods within 30 s of the restart.
# usage: tenants_large_jobs_and_pods_stay_out_of_the_operators_memory.sh OPERATOR_BINARY   (KUBECONFIG,
# KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario bigtenant

post() { /usr/bin/python3 "$KUBEDIST_SOURCE_DIR/tests/lib/post_objects.py" "$NS" "$@"; }
post job 4 1300000 || fail "could not create the TrainingJobs"
post pod 120 1000000 || fail "could not create the pods"
pass "4 suspended TrainingJobs of 1.3 MB and 120 Pending pods of 1 MB labelled kubedist.io/job-name"

peak_mib() { echo $(($(awk '/VmHWM/ {print $2}' "/proc/$OP_PID/status") / 1024)); }
invalid() { [ "$(jp "tj/$1" '{.status.conditions[?(@.type=="Failed")].reason}')" = InvalidSpec ]; }
start_operator
eventually 60 "the oversized jobs refused with InvalidSpec" invalid tenant-3
for i in 0 1 2; do invalid "tenant-$i" || fail "tenant-$i is not refused with InvalidSpec"; done
peak=$(peak_mib)
[ "$peak" -lt 128 ] || fail "the operator's peak RSS is $peak MiB after listing them"
pass "the operator listed them and refused the 1.3 MB templates with its peak RSS at $peak MiB (limit 128 MiB)"

stop_operator
started=$SECONDS
start_operator
job_yaml fresh 2 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "the new job's 2 pods" pods_are fresh 2
peak=$(peak_mib)
[ "$peak" -lt 128 ] || fail "the restarted operator's peak RSS is $peak MiB"
pass "restarted: a new job got its 2 pods $((SECONDS - started)) s after the restart, peak RSS $peak MiB"
[ "$(pod_count tenant-0)" -eq 2 ] || fail "the tenants' labelled pods were touched"
pass "the 120 labelled pods of no job of the operator's are left alone"
