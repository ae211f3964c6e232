#!/usr/bin/env bash
# Bearer tokens from a kubeconfig tokenFile, re-read when the file changes (service account tokens rotate).
# Only what the operator needs (the Helm chart's rules): proves it asks for nothing more.
# usage: the_operator_works_with_least_privilege_tokens.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario token

operator_role operator
dir=$(mktemp -d /tmp/kubedist-token-XXXXXX)
trap 'rm -rf "$dir"; cleanup' EXIT
sa_kubeconfig "$dir" sa1 operator
server=$SERVER
kubectl -n "$NS" create serviceaccount sa2 >/dev/null
kubectl -n "$NS" create rolebinding sa2 --role=operator --serviceaccount="$NS:sa2" >/dev/null
start_operator --kubeconfig "$dir/kubeconfig"
job_yaml j 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "pod running" all_running j 1
eventually 30 "job Running" phase_is j Running
eventually 10 "Created event" has_event j Created
! grep -q 'Forbidden\|forbidden' "$OP_LOG" || fail "the operator needed a permission the Role lacks"
pass "token from a tokenFile and a CA file: the operator works as service account sa1 with least privilege"
# This Role grants no podgroups: the operator starts without gang scheduling, and a job asking for it says why.
grep -q 'may not list podgroups (HTTP 403): gang scheduling is off' "$OP_LOG" || fail "no word that gang scheduling is off"
job_yaml g 1 "  scheduling: {gang: true}" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "gang job Failed" phase_is g Failed
[ "$(jp tj/g '{.status.conditions[?(@.type=="Failed")].reason}')" = GangSchedulingUnavailable ] ||
  fail "gang job without the Workload API: $(jp tj/g '{.status.conditions}')"
[ "$(pod_count g)" -eq 0 ] || fail "a gang job the operator cannot gang-schedule must create no pod"
pass "an operator that may not list PodGroups starts without gang scheduling; a gang job fails saying why (GangSchedulingUnavailable)"
token1=$(cat "$dir/token")
kubectl -n "$NS" create token sa2 --duration=1h >"$dir/token.new"
mv "$dir/token.new" "$dir/token"
old_token_dead() { ! kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$dir/ca.crt" \
  --token="$token1" -n "$NS" get pods; }
kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$dir/ca.crt" --token="$token1" \
  -n "$NS" get pods >/dev/null || fail "sa1's token should still work before the account is deleted"
kubectl -n "$NS" delete serviceaccount sa1 >/dev/null
eventually 30 "sa1's tokens are refused" old_token_dead
old=$(jp pod/j-node-0 '{.metadata.uid}')
kubectl -n "$NS" delete pod j-node-0 --wait=false >/dev/null
recreated() { [ "$(jp pod/j-node-0 '{.metadata.uid}')" != "$old" ] && all_running j 1; }
eventually 30 "pod recreated with the rotated token" recreated
pass "after the token file rotates (and the old account is gone) the operator keeps working"
