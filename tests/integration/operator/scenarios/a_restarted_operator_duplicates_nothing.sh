#!/usr/bin/env bash
# Six 8-node jobs with one worker: killing the operator as soon as the first pod appears lands mid-way.
# usage: a_restarted_operator_duplicates_nothing.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario restart

for j in a b c d e f; do job_yaml "$j" 8 | kubectl -n "$NS" apply -f - >/dev/null; done
start_operator --workers 1
eventually 30 "first pod created" bash -c "[ \$(kubectl -n $NS get pods --no-headers 2>/dev/null | wc -l) -ge 1 ]"
stop_operator KILL || true
pass "operator killed with $(kubectl -n "$NS" get pods --no-headers | wc -l) of 48 pods created"
start_operator
for j in a b c d e f; do
  eventually 60 "$j: 8 pods running" all_running "$j" 8
  eventually 30 "$j: Running" phase_is "$j" Running
  names=$(kubectl -n "$NS" get pods -l "kubedist.io/job-name=$j" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
  [ "$names" = "$(printf "$j-node-%s\n" 0 1 2 3 4 5 6 7 | sort)" ] || fail "$j pods: $names"
  [ "$(jp "tj/$j" '{.status.replicas} {.status.readyReplicas} {.status.restarts}')" = "8 8 0" ] || fail "$j status"
done
[ "$(kubectl -n "$NS" get pods --no-headers | wc -l)" -eq 48 ] || fail "not exactly 48 pods"
pass "after a kill and restart: exactly 8 pods per job, status replicas=8 ready=8 restarts=0"
