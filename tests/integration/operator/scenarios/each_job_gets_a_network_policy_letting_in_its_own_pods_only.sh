#!/usr/bin/env bash
# --network-policy-per-job: each running job gets NetworkPolicy J, owned by the job, selecting its pods and letting
# in its own pods and the peers of --network-policy-ingress only; made again when deleted, collected with the job;
# a job whose policy name is taken, or whose operator may not watch NetworkPolicies, fails saying why instead of
# running its pods without the isolation asked for.
# (kwok's cluster stores NetworkPolicies but enforces none: what a network plugin does with them is its own.)
# usage: each_job_gets_a_network_policy_letting_in_its_own_pods_only.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario netpol

monitoring='{"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}], "ports": [{"port": "kd-metrics", "protocol": "TCP"}]}'
start_operator --network-policy-per-job --network-policy-ingress "[$monitoring]"
job_yaml j 2 | kubectl -n "$NS" apply -f - >/dev/null
job_yaml k 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "j's 2 pods running" all_running j 2
eventually 30 "k's pod running" all_running k 1
policy_of() {
  kubectl -n "$NS" get networkpolicy "$1" -o json | /usr/bin/python3 -c '
import json, sys
p = json.load(sys.stdin)
owner = [o["uid"] for o in p["metadata"].get("ownerReferences", []) if o.get("controller")]
print(json.dumps({"owner": owner, "label": p["metadata"]["labels"].get("kubedist.io/job-name"), "spec": p["spec"]},
                 sort_keys=True))'
}
want_policy() {
  /usr/bin/python3 -c '
import json, sys
sel = {"matchLabels": {"kubedist.io/job-name": sys.argv[1]}}
print(json.dumps({"owner": [sys.argv[2]], "label": sys.argv[1], "spec": {"podSelector": sel,
    "policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": sel}]}, json.loads(sys.argv[3])]}},
    sort_keys=True))' "$1" "$2" "$monitoring"
}
for job in j k; do
  got=$(policy_of "$job")
  [ "$got" = "$(want_policy "$job" "$(jp "tj/$job" '{.metadata.uid}')")" ] || fail "NetworkPolicy $job: $got"
done
pass "each job has NetworkPolicy J, owned by it, selecting its pods and letting in its own pods and the peers it was told only (j's and k's)"

old=$(jp networkpolicy/j '{.metadata.uid}')
kubectl -n "$NS" delete networkpolicy j >/dev/null
remade() { [ -n "$(jp networkpolicy/j '{.metadata.uid}' 2>/dev/null)" ] && [ "$(jp networkpolicy/j '{.metadata.uid}')" != "$old" ]; }
eventually 30 "NetworkPolicy j made again" remade
pass "a deleted NetworkPolicy of a running job is made again"

# A policy of someone else's holding the name: the job fails, no pod.
kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: taken, labels: {kubedist.io/job-name: taken}}
spec: {podSelector: {}, ingress: [{}]}
YAML
job_yaml taken 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "job taken Failed" phase_is taken Failed
[ "$(jp tj/taken '{.status.conditions[?(@.type=="Failed")].reason}')" = NetworkPolicyConflict ] ||
  fail "taken: $(jp tj/taken '{.status.conditions}')"
[ "$(pod_count taken)" -eq 0 ] || fail "a job whose policy name is taken must create no pod"
pass "a NetworkPolicy of another owner holding the job's name fails the job (NetworkPolicyConflict) with no pod"

kubectl -n "$NS" delete tj j --wait=false >/dev/null
collected() { ! kubectl -n "$NS" get networkpolicy j >/dev/null 2>&1 && [ "$(pod_count j)" -eq 0 ]; }
eventually 60 "NetworkPolicy j collected with its job" collected
kubectl -n "$NS" get networkpolicy k >/dev/null || fail "deleting j took k's policy"
pass "deleting the job collects its NetworkPolicy; the other job's stays"
stop_operator

# An operator that may not watch NetworkPolicies (the chart's Role without networkPolicy.perJob): it starts, says
# so, and a job fails naming what to grant.
operator_role no-netpol
dir=$(mktemp -d /tmp/kubedist-netpol-XXXXXX)
trap 'rm -rf "$dir"; cleanup' EXIT
sa_kubeconfig "$dir" plain no-netpol
start_operator --kubeconfig "$dir/kubeconfig" --network-policy-per-job
eventually 30 "the operator says it may not list networkpolicies" \
  grep -q 'may not list networkpolicies (HTTP 403): jobs fail (NetworkPolicyUnavailable)' "$OP_LOG"
job_yaml m 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "job m Failed" phase_is m Failed
[ "$(jp tj/m '{.status.conditions[?(@.type=="Failed")].reason}')" = NetworkPolicyUnavailable ] ||
  fail "m: $(jp tj/m '{.status.conditions}')"
jp tj/m '{.status.conditions[?(@.type=="Failed")].message}' | grep -q 'grant it list, watch and create on networkpolicies' ||
  fail "m's message does not say what to grant"
eventually 10 "NetworkPolicyUnavailable event" has_event m NetworkPolicyUnavailable
[ "$(pod_count m)" -eq 0 ] || fail "a job without its policy must create no pod"
pass "an operator that may not watch NetworkPolicies fails a job once (NetworkPolicyUnavailable, what to grant), no pod"
