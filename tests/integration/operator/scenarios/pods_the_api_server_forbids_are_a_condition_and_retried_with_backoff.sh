#!/usr/bin/env bash
# Pods the API server forbids (403) for the namespace's rules, not for the spec's form: Pod Security admission in a
# namespace enforcing "restricted", and a ResourceQuota of one pod for a job of two. Each is condition PodsRefused
# naming the refusal within 30 s, one Warning Event, no Created claim, and creates retried with backoff (5 s doubling)
# instead of a storm; a compliant job in the same namespace runs (the launcher init container the operator adds
# meets "restricted"), and once the quota allows it the missing pod is created and the condition clears.
# usage: pods_the_api_server_forbids_are_a_condition_and_retried_with_backoff.sh OPERATOR_BINARY   (KUBECONFIG,
# KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario refused
kubectl label namespace "$NS" pod-security.kubernetes.io/enforce=restricted >/dev/null

# restricted_job NAME REPLICAS [CONTAINER-SECURITY-CONTEXT]: a job whose template meets "restricted" unless told.
restricted_job() {
  local context='{allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}'
  [ $# -lt 3 ] || context=$3
  printf 'apiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: %s}\nspec:\n  replicas: %s\n' "$1" "$2"
  printf '  template:\n    spec:\n      securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}\n'
  printf '      containers: [{name: trainer, image: busybox, command: [python, t.py], resources: {limits: {cpu: "1"}}, securityContext: %s}]\n' \
    "$context"
}
condition() { jp "tj/$1" "{.status.conditions[?(@.type==\"$2\")].status}/{.status.conditions[?(@.type==\"$2\")].reason}"; }
condition_is() { [ "$(condition "$1" "$2")" = "$3" ]; }
event_counts() {
  kubectl -n "$NS" get events --field-selector "involvedObject.name=$1,reason=PodsRefused" \
    -o jsonpath='{range .items[*]}{.count}{"\n"}{end}'
}
forbidden_creates() {
  curl -sf "http://127.0.0.1:$OP_PORT/metrics" |
    awk '/^kubedist_api_requests_total\{/ && /verb="create"/ && /code="403"/ {n += $2} END {print n + 0}'
}

start_operator
restricted_job good 2 | kubectl -n "$NS" apply -f - >/dev/null
restricted_job priv 2 '{privileged: true}' | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "the compliant job's pods are admitted under restricted" pods_are good 2
pass "a template that meets restricted: both pods admitted, the launcher init container included"
eventually 30 "priv: PodsRefused/PodSecurity" condition_is priv PodsRefused True/PodSecurity
message=$(jp tj/priv '{.status.conditions[?(@.type=="PodsRefused")].message}')
[[ $message == *'violates PodSecurity "restricted'*privileged* ]] || fail "priv: the condition's message: $message"
pass "priv: PodsRefused True, PodSecurity: ${message:0:150}"
t0=$SECONDS
sleep 20
[ "$(pod_count priv)" -eq 0 ] || fail "priv: pods exist"
[ "$(condition priv Created)" != True/PodsCreated ] || fail "priv: Created claims the pods were created"
[ "$(jp tj/priv '{.status.phase}')" != Failed ] || fail "priv: failed for the namespace's rules"
[ "$(event_counts priv)" = 1 ] || fail "priv: PodsRefused Events: want one with count 1, got '$(event_counts priv | tr '\n' ' ')'"
tries=$(forbidden_creates)
# Backoff 5, 10, 20 s: at most 4 refused creates within the 20 s and the time to first see the condition.
[ "$tries" -ge 2 ] && [ "$tries" -le 5 ] || fail "priv: $tries refused pod creates in $((SECONDS - t0 + 10)) s, want 2 to 5"
pass "priv: no pod, no Created claim, one Warning Event, $tries refused creates in about $((SECONDS - t0 + 10)) s"
kubectl -n "$NS" delete tj good priv --wait=true >/dev/null
eventually 60 "the first jobs' pods are gone" pods_are good 0

# A quota of one pod for a job of two: node 0 runs, node 1 is refused, and it is created once the quota allows it.
kubectl -n "$NS" create quota one --hard=pods=1 >/dev/null
quota_ready() { [ "$(kubectl -n "$NS" get quota one -o jsonpath='{.status.hard.pods}')" = 1 ]; }
eventually 30 "the quota controller has counted quota one" quota_ready
restricted_job quota 2 | kubectl -n "$NS" apply -f - >/dev/null
t0=$SECONDS
eventually 30 "quota: PodsRefused/ResourceQuota" condition_is quota PodsRefused True/ResourceQuota
pass "quota: PodsRefused ResourceQuota within $((SECONDS - t0)) s: $(jp tj/quota '{.status.conditions[?(@.type=="PodsRefused")].message}' | cut -c1-150)"
[ "$(pod_count quota)" -eq 1 ] || fail "quota: want node 0 only, got $(pod_count quota) pods"
[ "$(event_counts quota)" = 1 ] || fail "quota: PodsRefused Events: got '$(event_counts quota | tr '\n' ' ')'"
kubectl -n "$NS" patch quota one --type=merge -p '{"spec":{"hard":{"pods":"2"}}}' >/dev/null
t0=$SECONDS
eventually 60 "quota: node 1 is created once the quota allows it" pods_are quota 2
eventually 30 "quota: PodsRefused cleared" condition_is quota PodsRefused False/PodsCreated
pass "quota: node 1 created $((SECONDS - t0)) s after the quota allowed it; PodsRefused False"
kill -0 "$OP_PID" || fail "the operator died"
