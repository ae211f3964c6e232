# Shared helpers for shell tests that talk to the local control plane (source it; needs KUBECONFIG).
# Each test gets its own namespace, deleted on exit.

fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
pass() { printf 'ok: %s\n' "$*"; }

# new_namespace PREFIX: creates a fresh namespace, sets NS, and deletes it when the test exits.
new_namespace() {
  NS="$1-$(date +%s)-$RANDOM"
  kubectl create namespace "$NS" >/dev/null || fail "cannot create namespace $NS"
  trap 'kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true' EXIT
}

# eventually SECONDS DESCRIPTION CMD...: polls CMD until it succeeds, failing the test after SECONDS.
eventually() {
  local secs=$1 what=$2
  shift 2
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || fail "not within ${secs}s: $what"
    sleep 0.2
  done
}

# apply_crd: installs the TrainingJob CRD and waits until the API server serves it.
apply_crd() {
  kubectl apply --server-side --force-conflicts -f "$KUBEDIST_SOURCE_DIR/crd/kubedist.io_trainingjobs.yaml" >/dev/null ||
    fail "the API server refused the CRD"
  kubectl wait --for=condition=Established --timeout=60s crd/trainingjobs.kubedist.io >/dev/null ||
    fail "CRD not established"
}
