#!/usr/bin/env bash
# Issue 39 (smaller): the namespace's rendezvous key reaches a training pod through the volume kubedist-rendezvous,
# which only the launcher's init container mounts. An ephemeral container (kubectl debug) may mount any volume of
# its pod; the chart's ValidatingAdmissionPolicy (protectRendezvousKey, on by default), rendered by the real helm
# under a release name of this test's own, makes the API server refuse one that mounts that volume, and still let
# through one that does not.
# usage: ephemeral_containers_may_not_mount_the_namespace_key.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario ephemeral

policy=$(helm template "eph-${NS: -12}" "$KUBEDIST_SOURCE_DIR/helm/kubedist" --show-only templates/admissionpolicy.yaml)
remove_policy() { kubectl delete -f - --ignore-not-found >/dev/null 2>&1 <<<"$policy" || true; }
trap 'remove_policy; cleanup' EXIT
kubectl apply -f - >/dev/null <<<"$policy"
pass "the chart's policy and binding applied (cluster-scoped, named for this test)"

start_operator
job_yaml j 1 | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "j's pod" pods_are j 1
[[ " $(jp pod/j-node-0 '{.spec.volumes[*].name}') " == *" kubedist-rendezvous "* ]] ||
  fail "j-node-0 has no volume kubedist-rendezvous: $(jp pod/j-node-0 '{.spec.volumes[*].name}')"

# debug NAME [MOUNT]: adds an ephemeral container to j-node-0 (mounting volume MOUNT); its output and exit status.
debug() {
  local mounts=''
  [ -z "${2:-}" ] || mounts=",\"volumeMounts\":[{\"name\":\"$2\",\"mountPath\":\"/key\"}]"
  kubectl -n "$NS" patch pod j-node-0 --subresource=ephemeralcontainers --type=strategic \
    -p "{\"spec\":{\"ephemeralContainers\":[{\"name\":\"$1\",\"image\":\"busybox\",\"command\":[\"sh\"]$mounts}]}}" 2>&1
}
refused() { out=$(debug "peek-$RANDOM" kubedist-rendezvous) && return 1; [[ $out == *"may not mount the volume kubedist-rendezvous"* ]]; }
eventually 30 "an ephemeral container mounting kubedist-rendezvous refused by the policy" refused
[[ $(jp pod/j-node-0 '{.spec.ephemeralContainers[*].name}') != *peek* ]] || fail "a peeking container was added"
pass "refused: $(debug peek-again kubedist-rendezvous | head -c 300)"
out=$(debug shell) || fail "an ephemeral container mounting nothing was refused: $out"
pass "an ephemeral container that mounts nothing of the key's is let through (kubectl debug still works)"
