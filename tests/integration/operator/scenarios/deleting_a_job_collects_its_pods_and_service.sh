#!/usr/bin/env bash
# Deleting a job collects its pods and service.
# usage: deleting_a_job_collects_its_pods_and_service.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario gc

start_operator
job_yaml j 3 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "3 pods running" all_running j 3
kubectl -n "$NS" delete tj j --wait=false >/dev/null
gone() { [ "$(pod_count j)" -eq 0 ] && ! kubectl -n "$NS" get svc j >/dev/null 2>&1; }
eventually 60 "pods and service garbage-collected" gone
pass "deleting the TrainingJob garbage-collects its pods and Service"
