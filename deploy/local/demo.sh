#!/usr/bin/env bash
# The README's first command. On a fresh machine it installs what is needed and brings up the local cluster
# "local" with two real nodes (kubelet + containerd, deploy/local/nodes.sh), builds the images (cached by content)
# into the cluster's registry, installs the operator with the Helm chart (the operator runs as a pod), applies the
# CPU example (crd/examples/cpu: 2 nodes x 2 processes of gloo DDP), waits until it has Succeeded and prints the
# ranks' logs; then builds kubectl-kubedist into $KUBEDIST_CACHE/bin (on the PATH below) and runs the same training
# from its torchrun command line: `kubectl kubedist run -- torchrun --nnodes=2 --nproc_per_node=2 train.py`.
# Run it again at will; `deploy/local/cluster.sh down` stops everything it started.
#
#   deploy/local/demo.sh          real nodes, the operator from the chart, the CPU example trained to the end
#   deploy/local/demo.sh --kwok   fake GPU nodes (kwok): the operator as a local process on the GPU example,
#                                 whose pods turn Running but run nothing
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
export KUBEDIST_CACHE=${KUBEDIST_CACHE:-$repo/.cache}
build=${KUBEDIST_BUILD_DIR:-$repo/build/all}
cluster=${KUBEDIST_CLUSTER:-local}
mode=real
case "${1:-}" in
  "") ;;
  --kwok) mode=kwok ;;
  *) echo "usage: demo.sh [--kwok]" >&2; exit 2 ;;
esac

"$here/setup.sh"
export PATH="$KUBEDIST_CACHE/bin:$PATH"

if [ "$mode" = kwok ]; then
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j "$(nproc)"
  export KUBEDIST_REAL_NODES=0
  KUBECONFIG=$("$here/cluster.sh" up "$cluster")
  export KUBECONFIG
  kubectl apply --server-side --force-conflicts -f "$repo/crd/kubedist.io_trainingjobs.yaml"
  kubectl wait --for=condition=Established --timeout=60s crd/trainingjobs.kubedist.io >/dev/null
  "$here/cluster.sh" run-operator "$cluster" "$build/operator/kubedist-operator"
  kubectl apply -f "$repo/crd/examples/trainingjob.yaml"
  want=$(kubectl get tj resnet -o jsonpath='{.spec.replicas}')
  for _ in $(seq 1 150); do
    running=$(kubectl get pods -l kubedist.io/job-name=resnet --field-selector=status.phase=Running \
      --no-headers 2>/dev/null | wc -l)
    [ "$running" -ge "$want" ] && break
    sleep 0.2
  done
  kubectl get tj,pods,svc -o wide
  echo
  echo "KUBECONFIG=$KUBECONFIG; stop everything with: deploy/local/cluster.sh down $cluster"
  exit 0
fi

export KUBEDIST_REAL_NODES=${KUBEDIST_REAL_NODES:-2}
KUBECONFIG=$("$here/cluster.sh" up "$cluster")
export KUBECONFIG
# shellcheck disable=SC1091
. "$KUBEDIST_CACHE/images/images.env"
registry=10.250.0.1:5000  # the cluster's registry as its nodes see it (nodes.sh)
operator_image="$registry/$KUBEDIST_OPERATOR_IMAGE"
echo "[demo] installing the chart: operator $operator_image, launcher $registry/$KUBEDIST_LAUNCHER_IMAGE" >&2
helm upgrade --install kubedist "$repo/helm/kubedist" --namespace kubedist-system --create-namespace \
  --set image.repository="${operator_image%:*}" --set image.tag="${operator_image##*:}" \
  --set launcherImage="$registry/$KUBEDIST_LAUNCHER_IMAGE" --wait --timeout 5m
kubectl -n kubedist-system get pods -o wide

example="$repo/crd/examples/cpu/trainingjob.yaml"
job=$(kubectl create --dry-run=client -o jsonpath='{.metadata.name}' -f "$example")
kubectl delete -f "$example" --ignore-not-found --wait >/dev/null  # a rerun trains afresh
kubectl apply -f "$example"
echo "[demo] waiting for tj/$job to succeed (the first run pulls the trainer image)" >&2
start=$SECONDS
until phase=$(kubectl get tj "$job" -o jsonpath='{.status.phase}') && [[ $phase =~ ^(Succeeded|Failed)$ ]]; do
  [ $((SECONDS - start)) -lt 900 ] || { echo "[demo] tj/$job is still ${phase:-Pending} after 15 minutes" >&2; break; }
  sleep 2
done
kubectl get tj,pods -o wide
for pod in "$job-node-0" "$job-node-1"; do
  echo
  echo "--- kubectl logs $pod ---"
  kubectl logs "$pod" -c trainer || true
done
echo
echo "tj/$job: ${phase:-unknown} in $((SECONDS - start))s."
[ "$phase" = Succeeded ]

# The same training from the command line one would give torchrun, through the kubectl plugin: the working
# directory (crd/examples/cpu) travels in a ConfigMap, the ranks' logs are followed, the exit code is the job's.
echo "[demo] building kubectl-kubedist into $KUBEDIST_CACHE/bin" >&2
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target kubectl-kubedist
install -m 0755 "$build/operator/kubectl/kubectl-kubedist" "$KUBEDIST_CACHE/bin/kubectl-kubedist"
kubectl kubedist delete cpu-plugin >/dev/null 2>&1 || true  # a rerun trains afresh
kubectl wait --for=delete tj/cpu-plugin --timeout=60s >/dev/null 2>&1 || true
echo
echo "\$ cd crd/examples/cpu && kubectl kubedist run --name cpu-plugin -- torchrun --nnodes=2 --nproc_per_node=2 train.py"
(cd "$repo/crd/examples/cpu" && kubectl kubedist run --name cpu-plugin -- torchrun --nnodes=2 --nproc_per_node=2 train.py)
echo
echo "KUBECONFIG=$KUBECONFIG PATH=$KUBEDIST_CACHE/bin:\$PATH"
echo "Stop everything with: deploy/local/cluster.sh down $cluster"
