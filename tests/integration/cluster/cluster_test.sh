#!/usr/bin/env bash
# The local control plane does what the operator's tests rely on: fake nodes advertise 8 GPUs each, the
# real scheduler places GPU pods and kwok turns them Running, a pod that fits nowhere stays Pending
# (Unschedulable), and kube-controller-manager's garbage collector deletes pods whose owner is gone.
set -euo pipefail
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
new_namespace cluster

gpus=$(kubectl get nodes -o jsonpath='{range .items[*]}{.status.allocatable.nvidia\.com/gpu}{"\n"}{end}' | sort -u)
[ "$gpus" = 8 ] || fail "nodes advertise nvidia.com/gpu '$gpus', expected 8"
nodes=$(kubectl get nodes --no-headers | wc -l)
[ "$nodes" -ge 2 ] || fail "expected at least 2 fake nodes, got $nodes"
pass "$nodes fake nodes with 8 GPUs each"

# gpu_pod NAME GPUS [OWNER-UID]: a pod asking for GPUS GPUs, optionally owned by ConfigMap 'owner'.
gpu_pod() {
  local owner=""
  [ -z "${3:-}" ] || owner="  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: $3}]"
  kubectl -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
$owner
spec:
  restartPolicy: Never
  containers:
  - name: trainer
    image: busybox
    command: [sleep, "3600"]
    resources: {limits: {nvidia.com/gpu: "$2"}}
YAML
}
phase() { [ "$(kubectl -n "$NS" get pod "$1" -o jsonpath='{.status.phase}')" = "$2" ]; }

gpu_pod fits 8
eventually 60 "pod 'fits' (8 GPUs) Running" phase fits Running
[ -n "$(kubectl -n "$NS" get pod fits -o jsonpath='{.spec.nodeName}')" ] || fail "pod fits has no node"
pass "an 8-GPU pod was scheduled and is Running"

gpu_pod too-big 9
unschedulable() {
  kubectl -n "$NS" get pod too-big -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].reason}' |
    grep -q Unschedulable
}
eventually 60 "a 9-GPU pod marked Unschedulable" unschedulable
phase too-big Pending || fail "a 9-GPU pod left Pending"
pass "a pod that fits no node stays Pending (Unschedulable)"

kubectl -n "$NS" create configmap owner >/dev/null
uid=$(kubectl -n "$NS" get configmap owner -o jsonpath='{.metadata.uid}')
gpu_pod owned 1 "$uid"
eventually 60 "owned pod Running" phase owned Running
kubectl -n "$NS" delete configmap owner >/dev/null
gone() { ! kubectl -n "$NS" get pod owned >/dev/null 2>&1; }
eventually 90 "garbage collector deletes the pod of a deleted owner" gone
pass "garbage collection of owned pods works"

# Bad settings are refused before anything starts, saying which.
out=$(KUBEDIST_POD_CIDR=10.0.0.0 "$KUBEDIST_SOURCE_DIR/deploy/local/cluster.sh" up cluster-bad-cidr 2>&1) &&
  fail "cluster.sh accepted KUBEDIST_POD_CIDR=10.0.0.0"
grep -q "KUBEDIST_POD_CIDR must be an IPv4 CIDR" <<<"$out" || fail "cluster.sh's error for a bad pod CIDR: $out"
[ ! -e "${KUBEDIST_CACHE:-$KUBEDIST_SOURCE_DIR/.cache}/clusters/cluster-bad-cidr/run" ] || fail "a refused cluster left state"
pass "a bad KUBEDIST_POD_CIDR is refused with a one-line reason"
echo "cluster_test: all checks passed"
