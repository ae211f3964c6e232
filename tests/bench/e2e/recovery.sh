#!/usr/bin/env bash
# Recovery benchmark (not a test; never run by ctest): brings up its own kwok cluster, runs
# tests/bench/e2e/recovery.py (worker crash in place, pod loss, pod recreation; median of TRIALS=5 each)
# and stops the cluster again.
#
#   tests/bench/e2e/recovery.sh [BUILD_DIR]     (default build/all; needs kubedist-operator and kubedist-launcher)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=${1:-$repo/build/all}
op=$build/operator/kubedist-operator
launcher=$build/launcher-sidecar/kubedist-launcher
for bin in "$op" "$launcher"; do
  [ -x "$bin" ] || { echo "recovery.sh: no $bin (build first: cmake --build $build)" >&2; exit 2; }
done
cluster=bench-e2e
trap '"$repo/deploy/local/cluster.sh" down "$cluster" >/dev/null 2>&1 || true' EXIT
export KUBECONFIG=$("$repo/deploy/local/cluster.sh" up "$cluster" | tail -n 1)
export KUBEDIST_SOURCE_DIR=$repo PATH=${KUBEDIST_CACHE:-$repo/.cache}/bin:$PATH
/usr/bin/python3 "$repo/tests/bench/e2e/recovery.py" "$op" "$launcher"
