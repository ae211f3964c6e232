#!/usr/bin/env bash
# Builds kubedist and runs every test: unit, integration (against the real local control plane, which
# ctest starts once and stops at the end) and e2e. This is the README's test command; .ci/run calls it.
# Arguments go to ctest. The version matrix (label matrix: the core scenarios on every Kubernetes release of
# deploy/local/versions.sh, about 30 minutes the first time, 5 after) runs only when asked: tests/run.sh -L matrix (which
# configures the build with -DKUBEDIST_MATRIX=ON; a run without "matrix" in its arguments turns it off again).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
export KUBEDIST_CACHE=${KUBEDIST_CACHE:-$repo/.cache}
build=${KUBEDIST_BUILD_DIR:-$repo/build/all}
start=$SECONDS

deploy/local/setup.sh
echo "[run] setup done in $((SECONDS - start))s"

# The matrix's tests exist in the build tree only when asked for (-DKUBEDIST_MATRIX=ON).
matrix=OFF
[[ " $* " != *matrix* ]] || matrix=ON
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKUBEDIST_MATRIX=$matrix >/dev/null
cmake --build "$build" -j "$(nproc)"
echo "[run] build done in $((SECONDS - start))s"

# ctest stops the test clusters itself (fixture cleanup); this is for an interrupted run.
clusters=(test test-real)
if [ "$matrix" = ON ]; then
  # shellcheck source=../deploy/local/versions.sh
  for v in $(. deploy/local/versions.sh && echo "$KUBERNETES_MATRIX_VERSIONS"); do
    minor=${v#v1.}
    clusters+=("test-m1${minor%%.*}")
  done
fi
trap 'for c in "${clusters[@]}"; do deploy/local/cluster.sh down "$c" >/dev/null 2>&1 || true; done' EXIT
# Without arguments every test but the ones labelled manual (long scenarios: docs/development.md names them).
[ $# -gt 0 ] || set -- -LE manual
ctest --test-dir "$build" --output-on-failure --timeout 900 "$@"
echo "[run] all tests done in $((SECONDS - start))s"
