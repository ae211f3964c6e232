#!/usr/bin/env bash
# The README's first command: on a fresh machine, installs what is needed, brings up the local control
# plane (cluster "local"), builds and starts kubedist-operator, applies the CRD and the example
# TrainingJob, and shows `kubectl get tj,pods`. Run it again at will; `deploy/local/cluster.sh down`
# stops everything it started.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
export KUBEDIST_CACHE=${KUBEDIST_CACHE:-$repo/.cache}
build=${KUBEDIST_BUILD_DIR:-$repo/build/all}
cluster=${KUBEDIST_CLUSTER:-local}

"$here/setup.sh"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"

kubeconfig=$("$here/cluster.sh" up "$cluster")
export KUBECONFIG=$kubeconfig PATH="$KUBEDIST_CACHE/bin:$PATH"

kubectl apply --server-side --force-conflicts -f "$repo/crd/kubedist.io_trainingjobs.yaml"
kubectl wait --for=condition=Established --timeout=60s crd/trainingjobs.kubedist.io >/dev/null

operator="$build/operator/kubedist-operator"
if [ -x "$operator" ]; then
  "$here/cluster.sh" run-operator "$cluster" "$operator"
else
  echo "[demo] $operator is not built yet: the TrainingJob is stored but nothing reconciles it" >&2
fi

kubectl apply -f "$repo/crd/examples/trainingjob.yaml"
if [ -x "$operator" ]; then
  want=$(kubectl get tj resnet -o jsonpath='{.spec.replicas}')
  for _ in $(seq 1 150); do
    running=$(kubectl get pods -l kubedist.io/job-name=resnet --field-selector=status.phase=Running \
      --no-headers 2>/dev/null | wc -l)
    [ "$running" -ge "$want" ] && break
    sleep 0.2
  done
fi
kubectl get tj,pods,svc -o wide
echo
echo "KUBECONFIG=$kubeconfig; stop everything with: deploy/local/cluster.sh down $cluster"
