#!/usr/bin/env bash
# Builds kubedist and runs every test: unit, integration (against the real local control plane, which
# ctest starts once and stops at the end) and e2e. This is the README's test command; .ci/run calls it.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
export KUBEDIST_CACHE=${KUBEDIST_CACHE:-$repo/.cache}
build=${KUBEDIST_BUILD_DIR:-$repo/build/all}
start=$SECONDS

deploy/local/setup.sh
echo "[run] setup done in $((SECONDS - start))s"

cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)"
echo "[run] build done in $((SECONDS - start))s"

# ctest stops the test clusters itself (fixture cleanup); this is for an interrupted run.
trap 'deploy/local/cluster.sh down test >/dev/null 2>&1 || true; deploy/local/cluster.sh down test-real >/dev/null 2>&1 || true' EXIT
ctest --test-dir "$build" --output-on-failure --timeout 900 "$@"
echo "[run] all tests done in $((SECONDS - start))s"
