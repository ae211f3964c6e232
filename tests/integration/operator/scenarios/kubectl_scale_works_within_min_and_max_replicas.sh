#!/usr/bin/env bash
# Kubectl scale works within min and max replicas.
# usage: kubectl_scale_works_within_min_and_max_replicas.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario scalerange

start_operator --launcher-poll-interval=0
job_yaml j 2 "  minReplicas: 2
  maxReplicas: 3" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
kubectl -n "$NS" scale tj/j --replicas=3 >/dev/null || fail "scale to 3 refused"
eventually 30 "3 pods running" all_running j 3
[ "$(kubectl -n "$NS" get tj/j -o jsonpath='{.spec.replicas}')" = 3 ] || fail "spec.replicas"
pass "kubectl scale tj/j --replicas=3 (within [2, 3]) works through the scale subresource"
for n in 4 1; do
  if out=$(kubectl -n "$NS" scale tj/j --replicas=$n 2>&1); then fail "--replicas=$n accepted: $out"; fi
  grep -qE "must be less than or equal to (maxReplicas|replicas)" <<<"$out" || fail "--replicas=$n: unclear refusal: $out"
done
[ "$(kubectl -n "$NS" get tj/j -o jsonpath='{.spec.replicas}')" = 3 ] || fail "a refused scale changed spec.replicas"
got=$(kubectl get --raw "/apis/kubedist.io/v1alpha1/namespaces/$NS/trainingjobs/j/scale")
grep -qF '"selector":"kubedist.io/job-name=j"' <<<"$got" || fail "scale subresource selector: $got"
pass "kubectl scale outside [minReplicas, maxReplicas] is refused by the API server (CEL); the scale subresource reports the selector"
