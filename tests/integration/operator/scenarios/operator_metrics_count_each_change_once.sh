#!/usr/bin/env bash
# Operator metrics count each change once.
# usage: operator_metrics_count_each_change_once.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario metrics

start_operator
scrape() { curl -sf "http://127.0.0.1:$OP_PORT/metrics"; }
has_line() { local out; out=$(scrape) || return 1; grep -qxF "$1" <<<"$out"; }
has_prefix() { local out; out=$(scrape) || return 1; grep -qF "$1" <<<"$out"; }
no_job_series() { local out; out=$(scrape) || return 1; ! grep -qF "job_name=\"j\"" <<<"$out"; }
L="job_name=\"j\",job_namespace=\"$NS\""
eventually 10 "namespace counters at 0 before any job" has_line "kubedist_jobs_failed_total{job_namespace=\"$NS\"} 0"
job_yaml j 2 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
eventually 30 "job Running" phase_is j Running
eventually 10 "jobs_created_total 1" has_line "kubedist_jobs_created_total{job_namespace=\"$NS\"} 1"
eventually 10 "phase gauge Running" has_line "kubedist_job_phase{$L,phase=\"Running\"} 1"
has_line "kubedist_job_phase{$L,phase=\"Pending\"} 0" || fail "other phases must read 0"
ws=$(jp tj/j '{.status.worldSize}')
eventually 10 "nodes and world size gauges" has_line "kubedist_job_nodes{$L} 2"
has_line "kubedist_job_world_size{$L} $ws" || fail "world size gauge is not status.worldSize=$ws: $(scrape | grep world_size)"
has_line "kubedist_restarts_total{$L,reason=\"pod_failure\"} 0" || fail "restarts must exist at 0 before the first one"
pass "created counted, phase/nodes/world size gauges, restarts at 0 for every reason"
old=$(jp pod/j-node-1 '{.metadata.uid}')
finish_pod j-node-1 137
eventually 30 "restarts_total{reason=pod_failure} 1" has_line "kubedist_restarts_total{$L,reason=\"pod_failure\"} 1"
has_line "kubedist_restarts_total{$L,reason=\"worker_crash\"} 0" || fail "a pod failure counted as another reason"
recreated() { [ "$(jp pod/j-node-1 '{.metadata.uid}')" != "$old" ] && phase_is j Running; }
eventually 30 "pod recreated and job Running again" recreated
eventually 10 "recovery time gauge" has_prefix "kubedist_job_last_recovery_seconds{$L} "
eventually 10 "phase gauge Running again" has_line "kubedist_job_phase{$L,phase=\"Running\"} 1"
pass "a failed pod: restarts_total{reason=pod_failure} 1, last recovery seconds set"
out=$(scrape)
for want in 'verb="create",code="201"' 'verb="patch",code="200"' 'verb="delete",code="200"' 'verb="list",code="200"' \
  'verb="watch",code="200"'; do
  code=${want#*code=}; verb=${want%%,*}
  grep -qE "^kubedist_api_requests_total\{code=$code,$verb\} [1-9]" <<<"$out" || fail "no API requests $want: $(grep api_requests <<<"$out")"
done
grep -qE '^kubedist_reconcile_duration_seconds_count [1-9]' <<<"$out" || fail "no reconcile durations observed"
grep -qE '^kubedist_workqueue_depth [0-9]' <<<"$out" || fail "no work queue depth"
grep -qE '^kubedist_workqueue_retries_total [0-9]' <<<"$out" || fail "no work queue retries counter"
pass "API requests by verb and code, reconcile histogram, work queue depth and retries"
stop_operator TERM || fail "operator exited non-zero"
start_operator
eventually 30 "a restarted operator shows the job" has_line "kubedist_job_phase{$L,phase=\"Running\"} 1"
has_line "kubedist_restarts_total{$L,reason=\"pod_failure\"} 0" || fail "a restarted operator re-counted restarts in status"
has_line "kubedist_jobs_created_total{job_namespace=\"$NS\"} 0" || fail "a restarted operator re-counted the job's creation"
pass "a restarted operator takes the status as its baseline: no restart or creation counted twice"
kubectl -n "$NS" delete tj j --wait=false >/dev/null
eventually 30 "per-job series gone after delete" no_job_series
has_line "kubedist_jobs_created_total{job_namespace=\"$NS\"} 0" || fail "namespace counters must stay"
pass "deleting the job removes its per-job series"
