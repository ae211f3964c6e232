#!/usr/bin/env bash
# One leader reconciles and a standby takes over.
# usage: one_leader_reconciles_and_a_standby_takes_over.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario leader

le="--leader-elect --leader-election-namespace=$NS --leader-election-id=op --leader-election-lease-seconds=4"
start_operator $le
eventually 30 "first replica leads" grep -q 'leading as' "$OP_LOG"
OP2_LOG=$(mktemp /tmp/kubedist-operator-XXXXXX.log)
"$OPERATOR" --namespace "$NS" --probe-address 127.0.0.1:0 $le >>"$OP2_LOG" 2>&1 &
OP2_PID=$!
eventually 30 "second replica waits" grep -q 'waiting to lead' "$OP2_LOG"
port2=$(grep -o 'probes listening on port [0-9]*' "$OP2_LOG" | grep -o '[0-9]*$')
grep -q standby <<<"$(curl -sf "http://127.0.0.1:$port2/readyz")" || fail "standby replica not ready"
job_yaml j 2 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
! grep -q 'leading as' "$OP2_LOG" || fail "two leaders"
! grep -q 'component=event' "$OP2_LOG" || fail "the standby acted"
pass "one leader acts, the standby waits (and is ready)"
stop_operator KILL || true
eventually 30 "standby takes over" grep -q 'leading as' "$OP2_LOG"
old=$(jp pod/j-node-1 '{.metadata.uid}')
kubectl -n "$NS" delete pod j-node-1 --wait=false >/dev/null
recreated() { [ "$(jp pod/j-node-1 '{.metadata.uid}')" != "$old" ] && all_running j 2; }
eventually 30 "the new leader recreates j-node-1" recreated
pass "after the leader is killed the standby takes the lease and reconciles"
kill -TERM "$OP2_PID"
wait "$OP2_PID" || fail "new leader exited non-zero on SIGTERM"
OP2_PID=
[ -z "$(jp lease/op '{.spec.holderIdentity}')" ] || fail "lease not released on SIGTERM"
pass "a clean shutdown releases the lease"
