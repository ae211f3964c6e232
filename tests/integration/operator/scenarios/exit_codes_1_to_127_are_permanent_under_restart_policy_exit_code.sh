#!/usr/bin/env bash
# Exit codes 1 to 127 are permanent under restart policy exit code.
# usage: exit_codes_1_to_127_are_permanent_under_restart_policy_exit_code.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario exitcode

start_operator
job_yaml j 2 "  restartPolicy: ExitCode" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
summary="worker rank 2 (local rank 0) on j-node-1 exited with code 2: ValueError: bad batch"
finish_pod j-node-1 2 "$summary"
eventually 30 "job Failed" phase_is j Failed
[ "$(jp tj/j '{.status.conditions[?(@.type=="Failed")].reason}')" = PodFailed ] || fail "reason"
[ "$(jp tj/j '{.status.restarts}')" = 0 ] || fail "a permanent failure was retried"
pass "restartPolicy ExitCode: exit code 2 is permanent"
got=$(jp tj/j '{.status.lastFailure.pod} {.status.lastFailure.exitCode} {.status.lastFailure.reason}: {.status.lastFailure.message}')
[ "$got" = "j-node-1 2 Error: $summary" ] || fail "status.lastFailure: $got"
[ -n "$(jp tj/j '{.status.lastFailure.node}')" ] && [ -n "$(jp tj/j '{.status.lastFailure.time}')" ] ||
  fail "status.lastFailure without node or time"
events=$(kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=PodFailed -o jsonpath='{.items[*].message}')
[[ $events == *"pod j-node-1 failed (exit code 2, reason Error): $summary"* ]] || fail "PodFailed event: $events"
described=$(kubectl -n "$NS" describe tj j)
grep -q "Last Failure:" <<<"$described" && grep -q "ValueError: bad batch" <<<"$described" ||
  fail "kubectl describe tj shows no last failure: $described"
pass "the launcher's summary reaches status.lastFailure, the PodFailed Event and kubectl describe tj"
