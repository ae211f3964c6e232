#!/usr/bin/env bash
# kubedist beside Kubeflow's Training Operator on real nodes, end to end (not a test; never run by ctest): brings up
# a local cluster with 2 real nodes (kubelets and containerd), builds what it needs (the images, Kubeflow's
# operator: deploy/local/tools.sh bench), runs tests/bench/e2e/vs_kubeflow.py (TRIALS=5 each of the clean run, a
# worker crash and a pod loss, alternating) and stops the cluster again.
#
#   tests/bench/e2e/vs_kubeflow.sh
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cache=${KUBEDIST_CACHE:-$repo/.cache}
cluster=${BENCH_CLUSTER:-bench-real}
KUBEDIST_CACHE=$cache "$repo/deploy/local/tools.sh" bench >&2
trap 'KUBEDIST_CACHE=$cache "$repo/deploy/local/cluster.sh" down "$cluster" >/dev/null 2>&1 || true' EXIT
KUBECONFIG=$(KUBEDIST_CACHE=$cache KUBEDIST_REAL_NODES=2 "$repo/deploy/local/cluster.sh" up "$cluster" | tail -n 1)
export KUBECONFIG KUBEDIST_CACHE=$cache KUBEDIST_SOURCE_DIR=$repo KUBEDIST_CLUSTER_DIR=$cache/clusters/$cluster
export PATH=$KUBEDIST_CLUSTER_DIR/bin:$cache/bin:$PATH
/usr/bin/python3 "$repo/tests/bench/e2e/vs_kubeflow.py"
