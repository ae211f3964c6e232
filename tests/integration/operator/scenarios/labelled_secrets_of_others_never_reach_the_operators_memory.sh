#!/usr/bin/env bash
# 500 Secrets of 1 MiB in the job's namespace, labelled as if they were the operator's (kubedist.io/job-name,
# kubedist.io/rendezvous-secret=namespace, a "secret" key): the operator watches its one Secret by name (a field
# selector), so none of them is listed into its cache, its peak memory stays far below the chart's 128 MiB limit,
# and a job there still runs.
# usage: labelled_secrets_of_others_never_reach_the_operators_memory.sh OPERATOR_BINARY   (KUBECONFIG,
# KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario secrets

count=500
# Secrets whose data is just under Kubernetes' 1 MiB limit for a Secret.
/usr/bin/python3 "$KUBEDIST_SOURCE_DIR/tests/lib/post_objects.py" "$NS" secret "$count" $((1024 * 1024 - 4096)) ||
  fail "could not create the Secrets"
pass "$count Secrets of 1 MiB labelled kubedist.io/job-name and kubedist.io/rendezvous-secret=namespace"

start_operator
job_yaml j 2 | kubectl -n "$NS" apply -f - >/dev/null
eventually 60 "j's 2 pods running" all_running j 2
eventually 30 "j Running" phase_is j Running
# The operator made its own Secret beside them, and derived nothing from the labelled impostors.
[ "$(kubectl -n "$NS" get secret kubedist-rendezvous -o jsonpath='{.metadata.labels.app\.kubernetes\.io/managed-by}')" = kubedist ] ||
  fail "the operator's Secret kubedist-rendezvous is missing"
hwm_kib=$(awk '/VmHWM/ {print $2}' "/proc/$OP_PID/status")
[ "$hwm_kib" -lt $((128 * 1024)) ] || fail "the operator's peak RSS is $((hwm_kib / 1024)) MiB with $count MiB of others' Secrets around"
pass "the operator's peak RSS is $((hwm_kib / 1024)) MiB (the chart's limit: 128 MiB) beside $count MiB of labelled Secrets"
