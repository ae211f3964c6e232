#!/usr/bin/env bash
# kubectl-kubedist against a real API server (the local control plane; kwok's pods run nothing, so no operator is
# needed): every bad input is one line on stderr and exit 1 with nothing created, and what run creates is the job
# and its ConfigMaps, owned by it, which delete takes away. Usage: plugin_test.sh PATH/TO/kubectl-kubedist
set -euo pipefail
PLUGIN=$1
# shellcheck source=../../lib/kube.sh
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
# `kubectl kubedist` finds the plugin on PATH, as a user's kubectl would.
bindir=$(mktemp -d)
work=$(mktemp -d)
ln -s "$PLUGIN" "$bindir/kubectl-kubedist"
export PATH="$bindir:$PATH"
new_namespace kubectl
trap 'kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true; apply_crd; rm -rf "$bindir" "$work"' EXIT

# expect_error WHAT PATTERN CMD...: CMD exits 1 with exactly one line on stderr matching PATTERN.
expect_error() {
  local what=$1 pattern=$2 rc=0
  shift 2
  "$@" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" -eq 1 ] || fail "$what: exit $rc, expected 1 (stderr: $(cat "$work/err"))"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "$what: expected one line on stderr, got: $(cat "$work/err")"
  grep -qE -- "$pattern" "$work/err" || fail "$what: stderr does not say /$pattern/: $(cat "$work/err")"
  pass "$what: $(cat "$work/err")"
}
# expect_error_after_shipping WHAT PATTERN CMD...: CMD exits 1 after creating its job, so stderr first says what
# it ships (issue 39 item 5) and its last line, the error, matches PATTERN.
expect_error_after_shipping() {
  local what=$1 pattern=$2 rc=0
  shift 2
  "$@" >"$work/out" 2>"$work/err" || rc=$?
  [ "$rc" -eq 1 ] || fail "$what: exit $rc, expected 1 (stderr: $(cat "$work/err"))"
  head -n 1 "$work/err" | grep -q "^kubectl-kubedist: shipping " ||
    fail "$what: stderr does not first say what is shipped: $(cat "$work/err")"
  tail -n 1 "$work/err" | grep -qE -- "$pattern" || fail "$what: stderr does not end with /$pattern/: $(cat "$work/err")"
  pass "$what: $(tail -n 1 "$work/err")"
}
nothing_in_namespace() {
  local left
  left=$(kubectl -n "$NS" get trainingjobs,configmaps -o name 2>/dev/null | grep -v configmap/kube-root-ca.crt || true)
  [ -z "$left" ] || fail "$1: left behind: $left"
}

mkdir -p "$work/proj/data"
cp "$KUBEDIST_SOURCE_DIR/crd/examples/cpu/train.py" "$work/proj/"
printf 'data/\n' >"$work/proj/.kubedistignore"
printf 'AWS_SECRET_ACCESS_KEY=not-for-the-cluster\n' >"$work/proj/.env"  # left home with no rule for it
head -c 7000000 /dev/urandom >"$work/proj/data/ignored.bin"
cd "$work/proj"

# --- before the CRD: a cluster that does not serve TrainingJobs -----------------------------------------------
# Cluster tests run one at a time (RESOURCE_LOCK local_cluster_api), so taking the CRD away briefly is safe; the
# EXIT trap puts it back.
kubectl delete crd trainingjobs.kubedist.io --ignore-not-found --wait >/dev/null
eventually 60 "TrainingJobs no longer served" bash -c '! kubectl get --raw /apis/kubedist.io/v1alpha1 >/dev/null 2>&1'
expect_error "a cluster without the CRD" "does not serve TrainingJobs: install kubedist" \
  kubectl kubedist run -n "$NS" -- torchrun --nnodes=2 train.py
nothing_in_namespace "a cluster without the CRD"
expect_error "status on a cluster without the CRD" "does not serve TrainingJobs" kubectl kubedist status x -n "$NS"
apply_crd

# --- no kubeconfig, an unreachable cluster ------------------------------------------------------------------
expect_error "no kubeconfig" "no usable kubeconfig.*KUBECONFIG" \
  env KUBECONFIG="$work/none" HOME="$work" KUBERNETES_SERVICE_HOST= kubectl-kubedist run -- torchrun train.py
sed -E 's#server: https://[^ ]+#server: https://127.0.0.1:9#' "$KUBECONFIG" >"$work/unreachable.kubeconfig"
expect_error "an unreachable cluster" "cannot reach the cluster at https://127.0.0.1:9" \
  kubectl-kubedist run --kubeconfig "$work/unreachable.kubeconfig" -- torchrun train.py
expect_error "list on an unreachable cluster" "cannot reach the cluster" \
  env KUBECONFIG="$work/unreachable.kubeconfig" kubectl-kubedist list

# --- bad input, nothing created -----------------------------------------------------------------------------
expect_error "a namespace that does not exist" "namespace no-such-ns-$$ does not exist: kubectl create namespace" \
  kubectl kubedist run -n "no-such-ns-$$" -- torchrun train.py
expect_error "a missing script" "missing.py: no such file in .*--workdir" \
  kubectl kubedist run -n "$NS" -- torchrun --nnodes=2 missing.py
expect_error "a name that is not a DNS label" "--name Bad_Name: not a DNS label" \
  kubectl kubedist run -n "$NS" --name Bad_Name -- torchrun train.py
expect_error "a refused torchrun flag" "--print-completion" \
  kubectl kubedist run -n "$NS" -- torchrun --print-completion=bash train.py
expect_error "a bad value of a torchrun 2.15 flag" "--numa-binding" \
  kubectl kubedist run -n "$NS" -- torchrun --numa-binding=far train.py
rm "$work/proj/.kubedistignore"
expect_error "a working directory over the limit" "over .* the limit is 6.0 MiB \(largest: data/ignored.bin .*--image" \
  kubectl kubedist run -n "$NS" -- torchrun train.py
printf 'data/\n' >"$work/proj/.kubedistignore"
nothing_in_namespace "after the refused runs"

# A ConfigMap in the way: the job was created first, so run deletes it again and says why.
kubectl -n "$NS" create configmap taken-workdir-0 >/dev/null
expect_error_after_shipping "a ConfigMap in the way" "ConfigMap taken-workdir-0 already exists" \
  kubectl kubedist run -n "$NS" --name taken --detach -- torchrun train.py
eventually 30 "the job of the failed run deleted" bash -c "! kubectl -n $NS get tj taken >/dev/null 2>&1"
kubectl -n "$NS" delete configmap taken-workdir-0 >/dev/null
pass "a run that failed after creating its job left no job behind"

# --- run --detach: the job and its ConfigMaps, owned by it ---------------------------------------------------
out=$(kubectl kubedist run -n "$NS" --name resnet --detach -e NCCL_DEBUG=INFO -- \
  torchrun --nnodes=1:2 --nproc_per_node=2 --master_port=29999 train.py --epochs 1 2>"$work/err")
grep -q "dropped --master-port=29999" "$work/err" || fail "the dropped port is not said: $(cat "$work/err")"
grep -q "^kubectl-kubedist: shipping $work/proj: 2 files, " "$work/err" &&
  grep -q "^kubectl-kubedist: left home, as they look like credentials: .env (" "$work/err" ||
  fail "run did not say what it ships and what it left home: $(cat "$work/err")"
grep -q "trainingjob.kubedist.io/resnet created in $NS: 2 (elastic 1..2) node(s) x 2 process(es)" <<<"$out" ||
  fail "run did not say what it created: $out"
grep -q "kubectl kubedist logs resnet -f -n $NS" <<<"$out" || fail "--detach does not say how to follow: $out"
uid=$(kubectl -n "$NS" get tj resnet -o jsonpath='{.metadata.uid}')
[ "$(kubectl -n "$NS" get tj resnet -o jsonpath='{.spec.minReplicas} {.spec.replicas} {.spec.nprocPerNode}')" = "1 2 2" ] ||
  fail "spec: $(kubectl -n "$NS" get tj resnet -o jsonpath='{.spec}')"
cmd=$(kubectl -n "$NS" get tj resnet -o jsonpath='{.spec.template.spec.containers[0].command}')
[ "$cmd" = '["python3","-u","train.py","--epochs","1"]' ] || fail "trainer command: $cmd"
owner=$(kubectl -n "$NS" get configmap resnet-workdir-0 -o jsonpath='{.metadata.ownerReferences[0].uid}')
[ "$owner" = "$uid" ] || fail "ConfigMap resnet-workdir-0 is not owned by the job ($owner != $uid)"
kubectl -n "$NS" get configmap resnet-workdir-0 -o jsonpath='{.binaryData.workdir\.tar\.000}' | base64 -d >"$work/w.tar"
tar -tf "$work/w.tar" >"$work/list"
grep -qx train.py "$work/list" && grep -qx .kubedistignore "$work/list" && ! grep -q data/ "$work/list" &&
  ! grep -qx .env "$work/list" ||
  fail "the shipped archive: $(cat "$work/list")"
pass "run --detach: an elastic job of 1..2 nodes x 2 and its working directory in ConfigMap resnet-workdir-0, owned by it"

kubectl kubedist list -n "$NS" >"$work/list.out"
grep -qE '^resnet +Pending +0/2 +0 +0 ' "$work/list.out" || fail "list: $(cat "$work/list.out")"
kubectl kubedist status resnet -n "$NS" >"$work/status.out"
grep -q "TrainingJob resnet in $NS: Pending" "$work/status.out" && grep -q "elastic 1..2" "$work/status.out" ||
  fail "status: $(cat "$work/status.out")"
pass "list and status show the job"
expect_error "status of a job that does not exist" "no TrainingJob nope in namespace $NS" kubectl kubedist status nope -n "$NS"

kubectl kubedist delete resnet -n "$NS" | grep -q "resnet deleted" || fail "delete did not say so"
eventually 60 "the job's ConfigMap collected with it" bash -c "! kubectl -n $NS get configmap resnet-workdir-0 >/dev/null 2>&1"
pass "delete takes the job, and its ConfigMaps go with it"

# --- --dry-run -o yaml | kubectl apply -f - -----------------------------------------------------------------
kubectl kubedist run --dry-run -o yaml --name gitops -- torchrun --nnodes=2 train.py >"$work/job.yaml"
[ "$(kubectl -n "$NS" get tj,configmaps -o name | grep -c gitops || true)" -eq 0 ] || fail "--dry-run created something"
kubectl -n "$NS" apply -f "$work/job.yaml" >/dev/null || fail "kubectl apply refused the --dry-run output"
[ "$(kubectl -n "$NS" get tj gitops -o jsonpath='{.spec.replicas}')" = 2 ] || fail "the applied job"
kubectl -n "$NS" get configmap gitops-workdir-0 >/dev/null || fail "the applied ConfigMap"
kubectl kubedist delete gitops -n "$NS" >/dev/null
eventually 30 "delete removes the applied, unowned ConfigMap too" bash -c "! kubectl -n $NS get configmap gitops-workdir-0 >/dev/null 2>&1"
pass "--dry-run -o yaml applies with kubectl apply -f -, and delete removes what it applied"
