#!/usr/bin/env bash
# Operator benchmark (not a test; never run by ctest): on its own kwok cluster, create JOBS TrainingJobs of
# NODES pods each and print the time from the last create until every pod exists, until every job is Running,
# the median reconcile latency, API requests per job, and the operator's peak RSS.
#
#   tests/bench/operator/bench.sh [OPERATOR_BINARY]     (default build/operator/operator/kubedist-operator)
#   env: JOBS (200), NODES (8), WORKERS (4), KUBEDIST_NODES (fake nodes, 16: room for 1,600 pods at 110 each)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
op=${1:-$repo/build/operator/operator/kubedist-operator}
jobs=${JOBS:-200}
nodes=${NODES:-8}
workers=${WORKERS:-4}
cluster=bench-op
export KUBEDIST_NODES=${KUBEDIST_NODES:-16}
[ -x "$op" ] || { echo "bench.sh: no operator binary at $op (build it first)" >&2; exit 2; }

work=$(mktemp -d /tmp/kubedist-bench-XXXXXX)
op_pid=
cleanup() {
  [ -n "$op_pid" ] && kill -KILL "$op_pid" 2>/dev/null && wait "$op_pid" 2>/dev/null
  "$repo/deploy/local/cluster.sh" down "$cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

export KUBECONFIG=$("$repo/deploy/local/cluster.sh" up "$cluster" | tail -n 1)
export PATH=$repo/.cache/bin:$PATH
kubectl apply --server-side --force-conflicts -f "$repo/crd/kubedist.io_trainingjobs.yaml" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/trainingjobs.kubedist.io >/dev/null
ns=bench
kubectl create namespace "$ns" >/dev/null

for i in $(seq 1 "$jobs"); do
  printf -- '---\napiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: job-%s, namespace: %s}\n' "$i" "$ns"
  printf 'spec:\n  replicas: %s\n  template:\n    spec:\n      containers: [{name: trainer, image: busybox, command: [python, train.py]}]\n' "$nodes"
done >"$work/jobs.yaml"

"$op" --namespace "$ns" --workers "$workers" --probe-address 127.0.0.1:0 --log-level info >"$work/operator.log" 2>&1 &
op_pid=$!
until grep -q 'probes listening' "$work/operator.log" 2>/dev/null; do sleep 0.1; done
port=$(grep -o 'probes listening on port [0-9]*' "$work/operator.log" | grep -o '[0-9]*$')
until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.1; done

now() { date +%s.%N; }
kubectl create -f "$work/jobs.yaml" >/dev/null
t_created=$(now)
want=$((jobs * nodes))
deadline=$((SECONDS + 600))
while [ "$(kubectl -n "$ns" get pods --no-headers 2>/dev/null | wc -l)" -lt "$want" ]; do
  [ $SECONDS -lt $deadline ] || { echo "bench.sh: pods not all created within 600 s" >&2; exit 1; }
  sleep 0.5  # listing 1,600 pods costs the shared CPUs too: poll gently
done
t_pods=$(now)
running() { kubectl -n "$ns" get tj -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$' || true; }
while [ "$(running)" -lt "$jobs" ]; do
  [ $SECONDS -lt $deadline ] || { echo "bench.sh: jobs not all Running within 600 s" >&2; exit 1; }
  sleep 0.5
done
t_running=$(now)
sleep 2  # let the last status writes land before reading the counters
n_events=$(kubectl -n "$ns" get events --field-selector involvedObject.kind=TrainingJob --no-headers 2>/dev/null | wc -l)
n_objects=$(( $(kubectl -n "$ns" get pods --no-headers | wc -l) + $(kubectl -n "$ns" get services --no-headers | wc -l) ))
rss_kib=$(awk '/VmHWM/ {print $2}' "/proc/$op_pid/status")
kill -TERM "$op_pid"
wait "$op_pid" || true
op_pid=
summary=$(grep 'summary' "$work/operator.log" | tail -n 1)
field() { grep -o "$1=[0-9.]*" <<<"$summary" | cut -d= -f2; }
writes=$(field api_writes)
reads=$(field api_reads)

echo "kubedist-operator benchmark: $jobs TrainingJobs x $nodes nodes = $want pods, $workers workers, $(nproc) CPUs, $KUBEDIST_NODES kwok nodes"
awk -v a="$t_created" -v b="$t_pods" 'BEGIN {printf "  last create -> all pods exist:      %.1f s   (target <= 30 s)\n", b - a}'
awk -v a="$t_created" -v b="$t_running" 'BEGIN {printf "  last create -> all jobs Running:    %.1f s\n", b - a}'
printf '  reconcile latency median / p99:     %s ms / %s ms over %s reconciles\n' "$(field reconcile_median_ms)" \
  "$(field reconcile_p99_ms)" "$(field reconciles)"
awk -v w="$writes" -v r="$reads" -v j="$jobs" -v n="$nodes" -v o="$n_objects" -v e="$n_events" 'BEGIN {
  printf "  API writes per job:                 %.2f   (target <= nodes + 3 = %d; includes Events)\n", w / j, n + 3
  printf "    of which pods and Services created %.2f, Events %.2f, status and other writes %.2f\n", o / j, e / j, (w - o - e) / j
  printf "  API requests per job (all verbs):   %.2f   (%d reads, %d writes in all, plus 3 watches)\n", (w + r) / j, r, w }'
awk -v k="$rss_kib" 'BEGIN {printf "  operator peak RSS:                  %.1f MiB   (target < 30 MiB)\n", k / 1024}'
