#!/usr/bin/env bash
# Operator benchmark (not a test; never run by ctest): on its own kwok cluster, create JOBS jobs of NODES pods each
# and print the time from the last create until every pod exists and every job runs, API writes per job (counted
# from the API server's audit log by user agent), the operator's peak RSS and CPU seconds.
#
#   tests/bench/operator/bench.sh [OPERATOR_BINARY]             kubedist alone (default build/all/operator/...)
#   tests/bench/operator/bench.sh --compare [OPERATOR_BINARY]   side by side with Kubeflow's Training Operator v1
#       (PyTorchJobs of 1 Master + NODES-1 Workers), RUNS times each, alternating, each on a fresh cluster; prints
#       every run, the medians and the ratios
#   env: JOBS (200), NODES (8), WORKERS (16), RUNS (2), KUBEDIST_NODES (fake nodes, 16: room for 1,600 pods),
#        NAMESPACES (1; kubedist alone: the jobs spread round-robin over that many namespaces, the operator watching
#        all of them), BENCH_CLUSTER (bench-op: the cluster's name, brought up fresh and down again)
#
# Kubeflow's operator (built by `deploy/local/tools.sh bench`) runs as a local process with its defaults, as its
# manifests deploy it (1 controller thread, client QPS 20, burst 30), and once more with
# KUBEFLOW_FLAGS="--controller-threads=4 --kube-api-qps=500 --kube-api-burst=1000" when KUBEFLOW_TUNED=1. Its
# webhooks are not called (no ValidatingWebhookConfiguration entries): it needs its webhook Secret and an empty
# configuration to start, and it serves its webhook port inside a network namespace of its own.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
compare=0
if [ "${1:-}" = --compare ]; then compare=1; shift; fi
op=${1:-$repo/build/all/operator/kubedist-operator}
jobs=${JOBS:-200}
nodes=${NODES:-8}
workers=${WORKERS:-16}
runs=${RUNS:-2}
cluster=${BENCH_CLUSTER:-bench-op}
export KUBEDIST_CACHE=${KUBEDIST_CACHE:-$repo/.cache}
export KUBEDIST_NODES=${KUBEDIST_NODES:-16} KUBEDIST_REAL_NODES=0 KUBEDIST_AUDIT=1
# Pod addresses outside loopback (the API server refuses loopback ones in a Service's endpoints, and the endpoint
# controllers would retry every job's Service in a loop, which a real cluster never does). Nothing connects to
# them: the operator's STATUS poller is off (--launcher-poll-interval=0); kwok's pods run nothing.
export KUBEDIST_POD_CIDR=${KUBEDIST_POD_CIDR:-10.200.0.0/16}
export PATH=$KUBEDIST_CACHE/bin:$PATH
kubeflow_version=$(. "$repo/deploy/local/versions.sh" && echo "$KUBEFLOW_TRAINING_OPERATOR_VERSION")
[ -x "$op" ] || { echo "bench.sh: no operator binary at $op (build it first)" >&2; exit 2; }
if [ $compare = 1 ]; then
  "$repo/deploy/local/tools.sh" bench >/dev/null
  [ "$(id -u)" -eq 0 ] || { echo "bench.sh --compare: needs root (Kubeflow's operator runs in a network namespace)" >&2; exit 2; }
fi

work=$(mktemp -d /tmp/kubedist-bench-XXXXXX)
op_pid=
netns=kdbench-$$
cleanup() {
  [ -n "$op_pid" ] && kill -KILL "$op_pid" 2>/dev/null && wait "$op_pid" 2>/dev/null
  [ -f "$work/forward.pid" ] && kill -KILL -- "-$(cat "$work/forward.pid")" 2>/dev/null
  ip netns del "$netns" 2>/dev/null || true
  "$repo/deploy/local/cluster.sh" down "$cluster" >/dev/null 2>&1 || true
  rm -rf "$work" /tmp/k8s-webhook-server
}
trap cleanup EXIT

now() { date +%s.%N; }
ns=bench
namespaces=${NAMESPACES:-1}
[[ $namespaces =~ ^[1-9][0-9]{0,2}$ ]] || { echo "bench.sh: NAMESPACES must be 1 to 999, got '$namespaces'" >&2; exit 2; }
[ "$namespaces" = 1 ] || [ $compare = 0 ] || { echo "bench.sh: NAMESPACES is for kubedist alone" >&2; exit 2; }
# ns_of I: the namespace of job I.
ns_of() { if [ "$namespaces" = 1 ]; then echo "$ns"; else echo "$ns-$(($1 % namespaces))"; fi; }

# wait_crd NAME: until the API server serves it (kubectl wait errors while the CRD has no conditions yet).
wait_crd() {
  local deadline=$((SECONDS + 60))
  until kubectl wait --for=condition=Established --timeout=10s "crd/$1" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "bench.sh: CRD $1 not established" >&2; exit 1; }
    sleep 0.2
  done
}

# cluster_up: a fresh cluster (audit log from empty) with the namespace; sets KUBECONFIG and AUDIT.
cluster_up() {
  "$repo/deploy/local/cluster.sh" down "$cluster" >/dev/null 2>&1 || true
  KUBECONFIG=$("$repo/deploy/local/cluster.sh" up "$cluster" | tail -n 1)
  export KUBECONFIG
  AUDIT="$(dirname "$KUBECONFIG")/logs/audit.log"
  local i
  for i in $(seq 0 $((namespaces - 1))); do kubectl create namespace "$(ns_of "$i")" >/dev/null; done
}

kubedist_jobs() {
  local i
  for i in $(seq 1 "$jobs"); do
    printf -- '---\napiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: job-%s, namespace: %s}\n' "$i" "$(ns_of "$i")"
    printf 'spec:\n  replicas: %s\n  template:\n    spec:\n      containers: [{name: trainer, image: busybox, command: [python, train.py]}]\n' "$nodes"
  done
}

kubeflow_jobs() {
  local i c='{spec: {containers: [{name: pytorch, image: busybox, command: [python, train.py]}]}}'
  for i in $(seq 1 "$jobs"); do
    printf -- '---\napiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: job-%s, namespace: %s}\n' "$i" "$ns"
    printf 'spec:\n  pytorchReplicaSpecs:\n    Master: {replicas: 1, restartPolicy: OnFailure, template: %s}\n' "$c"
    printf '    Worker: {replicas: %s, restartPolicy: OnFailure, template: %s}\n' "$((nodes - 1))" "$c"
  done
}

start_kubedist() {
  kubectl apply --server-side --force-conflicts -f "$repo/crd/kubedist.io_trainingjobs.yaml" >/dev/null
  wait_crd trainingjobs.kubedist.io
  local scope=(--namespace "$ns")
  [ "$namespaces" = 1 ] || scope=()
  "$op" "${scope[@]}" --workers "$workers" --probe-address 127.0.0.1:0 --log-level info \
    --launcher-poll-interval=0 >"$work/operator.log" 2>&1 &
  op_pid=$!
  until grep -q 'probes listening' "$work/operator.log" 2>/dev/null; do sleep 0.1; done
  local port
  port=$(grep -o 'probes listening on port [0-9]*' "$work/operator.log" | grep -o '[0-9]*$')
  until curl -sf "http://127.0.0.1:$port/readyz" >/dev/null; do sleep 0.1; done
  AGENT=kubedist-operator
}

# Kubeflow's operator in a network namespace of its own: its webhook server listens on every address of that
# namespace only; socat there carries its API connections to the API server on the host's 127.0.0.1 (entering
# this script's own network namespace: PID 1's is not readable here).
start_kubeflow() {
  local crds flags=()
  crds="$(cd "$repo/deploy/local/tools/kubeflow" && go env GOMODCACHE)/github.com/kubeflow/training-operator@$kubeflow_version/manifests/base/crds"
  [ -d "$crds" ] || (cd "$repo/deploy/local/tools/kubeflow" && go mod download github.com/kubeflow/training-operator)
  kubectl apply --server-side -f "$crds/kubeflow.org_pytorchjobs.yaml" >/dev/null
  wait_crd pytorchjobs.kubeflow.org
  kubectl create namespace kubeflow >/dev/null
  kubectl -n kubeflow create secret generic training-operator-webhook-cert >/dev/null
  printf 'apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: validator.training-operator.kubeflow.org}\nwebhooks: []\n' |
    kubectl apply -f - >/dev/null
  local server port
  server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  port=${server##*:}
  ip netns add "$netns"
  ip -n "$netns" link set lo up
  (setsid nsenter --net="/run/netns/$netns" socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" \
    "EXEC:nsenter --net=/proc/$$/ns/net socat STDIO TCP\\:127.0.0.1\\:$port" >/dev/null 2>&1 &
    echo $! >"$work/forward.pid")
  [ "${KUBEFLOW_TUNED:-0}" = 1 ] && read -r -a flags <<<"${KUBEFLOW_FLAGS:---controller-threads=4 --kube-api-qps=500 --kube-api-burst=1000}"
  KUBEFLOW_NAMESPACE=kubeflow setsid nsenter --net="/run/netns/$netns" "$KUBEDIST_CACHE/bin/training-operator" \
    --enable-scheme=pytorchjob --namespace "$ns" --metrics-bind-address 0 \
    --health-probe-bind-address 127.0.0.1:8081 "${flags[@]}" >"$work/operator.log" 2>&1 &
  op_pid=$!
  # Its cert rotator fills the webhook Secret and then waits for the kubelet to mount it where the webhook server
  # reads it; without a kubelet, this script puts the Secret's files there.
  local deadline=$((SECONDS + 120)) certs=/tmp/k8s-webhook-server/serving-certs key
  rm -rf "$certs"
  until [ -n "$(kubectl -n kubeflow get secret training-operator-webhook-cert -o jsonpath='{.data.tls\.crt}')" ]; do
    [ $SECONDS -lt $deadline ] || { tail -n 20 "$work/operator.log" >&2; echo "bench.sh: no webhook certificate" >&2; exit 1; }
    sleep 0.2
  done
  mkdir -p "$certs"
  for key in ca.crt tls.crt tls.key; do
    kubectl -n kubeflow get secret training-operator-webhook-cert -o jsonpath="{.data.${key//./\\.}}" | base64 -d >"$certs/$key"
  done
  until nsenter --net="/run/netns/$netns" curl -sf http://127.0.0.1:8081/readyz >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || { tail -n 20 "$work/operator.log" >&2; echo "bench.sh: Kubeflow's operator not ready" >&2; exit 1; }
    kill -0 "$op_pid" 2>/dev/null || { tail -n 20 "$work/operator.log" >&2; echo "bench.sh: Kubeflow's operator exited" >&2; exit 1; }
    sleep 0.2
  done
  AGENT=training-operator
}

stop_operator() {
  kill -TERM "$op_pid" 2>/dev/null || true
  wait "$op_pid" 2>/dev/null || true
  op_pid=
  if [ -f "$work/forward.pid" ]; then
    kill -KILL -- "-$(cat "$work/forward.pid")" 2>/dev/null || true
    rm -f "$work/forward.pid"
  fi
  ip netns del "$netns" 2>/dev/null || true
}

kubedist_pods() { kubectl get pods -A -l kubedist.io/job-name --no-headers 2>/dev/null | wc -l; }
kubeflow_pods() { kubectl -n "$ns" get pods --no-headers 2>/dev/null | wc -l; }
kubedist_running() { kubectl get tj -A -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' | grep -c '^Running$' || true; }
kubeflow_running() {
  kubectl -n "$ns" get pytorchjobs -o json | /usr/bin/python3 -c 'import json, sys
print(sum(any(c.get("type") == "Running" and c.get("status") == "True" for c in j.get("status", {}).get("conditions", []))
          for j in json.load(sys.stdin)["items"]))'
}

# run KIND: one measured run; appends "KIND SECONDS_TO_PODS SECONDS_TO_RUNNING WRITES_PER_JOB RSS_MIB CPU_SECONDS" to
# $work/rows.
run() {
  local kind=$1 want=$((jobs * nodes)) t_start t_created t_pods t_running deadline
  cluster_up
  "${kind}_jobs" >"$work/jobs.yaml"
  "start_$kind"
  local ticks0
  ticks0=$(awk '{print $14 + $15}' "/proc/$op_pid/stat")
  control_plane_ticks >"$work/cp0"
  t_start=$(now)
  kubectl create -f "$work/jobs.yaml" >/dev/null
  t_created=$(now)
  deadline=$((SECONDS + 900))
  while [ "$("${kind}_pods")" -lt "$want" ]; do
    [ $SECONDS -lt $deadline ] || { echo "bench.sh: $kind: pods not all created within 900 s" >&2; exit 1; }
    sleep 0.5  # listing 1,600 pods costs the shared CPUs too: poll gently
  done
  t_pods=$(now)
  while [ "$("${kind}_running")" -lt "$jobs" ]; do
    [ $SECONDS -lt $deadline ] || { echo "bench.sh: $kind: jobs not all running within 900 s" >&2; exit 1; }
    sleep 0.5
  done
  t_running=$(now)
  control_plane_ticks >"$work/cp1"
  # Where the machine's CPU went from the first create to every job running: each control-plane process's CPU
  # seconds. kubectl's creates overlap the operator's work: the first row's times count from the last create.
  awk -v hz="$(getconf CLK_TCK)" -v t="$(awk -v a="$t_start" -v c="$t_running" 'BEGIN {print c - a}')" '
    NR == FNR {before[$1] = $2; next}
    {used = ($2 - before[$1]) / hz; total += used; line = line sprintf(" %s %.1f s,", $1, used)}
    END {printf "  from the first create (kubectl took '"$(awk -v a="$t_start" -v b="$t_created" 'BEGIN {printf "%.1f", b - a}')"' s) to all running %.0f s; CPU:%s control plane %.1f s (%.0f%% of the %d CPUs)\n", t, line, total,
         100 * total / (t * '"$(nproc)"'), '"$(nproc)"'}' "$work/cp0" "$work/cp1" >"$work/cpu"
  sleep 2  # let the last status writes land before reading the counters
  local rss_kib ticks writes hz
  rss_kib=$(awk '/VmHWM/ {print $2}' "/proc/$op_pid/status")
  ticks=$(awk '{print $14 + $15}' "/proc/$op_pid/stat")
  hz=$(getconf CLK_TCK)
  # Every write request the operator made, as the API server audited it (Events included).
  writes=$(grep -c "\"userAgent\":\"$AGENT" "$AUDIT" || true)
  stop_operator
  awk -v k="${2:-$kind}" -v a="$t_created" -v b="$t_pods" -v c="$t_running" -v w="$writes" -v j="$jobs" -v r="$rss_kib" \
    -v t0="$ticks0" -v t="$ticks" -v hz="$hz" \
    'BEGIN {printf "%s %.1f %.1f %.2f %.1f %.1f\n", k, b - a, c - a, w / j, r / 1024, (t - t0) / hz}' >>"$work/rows"
}

# control_plane_ticks: "NAME TICKS" (user + system) of each control-plane process of the bench cluster.
control_plane_ticks() {
  local f name
  for f in "$(dirname "$KUBECONFIG")"/run/*.pid; do
    name=$(basename "$f" .pid)
    [ -r "/proc/$(cat "$f")/stat" ] && awk -v n="$name" '{print n, $14 + $15}' "/proc/$(cat "$f")/stat"
  done
}

row() { awk '{printf "  %-28s %8.1f s %10.1f s %10.2f %9.1f MiB %8.1f s\n", $1, $2, $3, $4, $5, $6}'; }
header() { printf '  %-28s %10s %12s %10s %13s %10s\n' "" "all pods" "all running" "writes/job" "peak RSS" "CPU"; }
median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

: >"$work/rows"
if [ $compare = 0 ]; then
  run kubedist
  r=$(tail -n 1 "$work/rows")
  summary=$(grep 'summary' "$work/operator.log" | tail -n 1)
  field() { grep -o "$1=[0-9.]*" <<<"$summary" | cut -d= -f2; }
  echo "kubedist-operator benchmark: $jobs TrainingJobs x $nodes nodes = $((jobs * nodes)) pods, $workers workers, $(nproc) CPUs, $KUBEDIST_NODES kwok nodes"
  header
  row <<<"$r"
  printf '  reconcile latency median / p99: %s ms / %s ms over %s reconciles; targets: all pods <= 30 s, writes <= nodes + 3 = %d, RSS < 30 MiB\n' \
    "$(field reconcile_median_ms)" "$(field reconcile_p99_ms)" "$(field reconciles)" $((nodes + 3))
  cat "$work/cpu"
  exit 0
fi

kinds=(kubedist kubeflow)
[ "${KUBEFLOW_TUNED:-0}" = 1 ] && kinds=(kubedist kubeflow-tuned)
for i in $(seq 1 "$runs"); do
  for k in "${kinds[@]}"; do
    if [ "$k" = kubeflow-tuned ]; then run kubeflow kubeflow-tuned; else run "$k"; fi
    echo "[bench] run $i: $(tail -n 1 "$work/rows")" >&2
  done
done
echo "Side by side: $jobs jobs x $nodes pods = $((jobs * nodes)) pods on $KUBEDIST_NODES kwok nodes, $(nproc) CPUs, $runs runs each"
echo "  kubedist-operator ($workers workers) vs Kubeflow Training Operator $kubeflow_version (PyTorchJob: 1 Master + $((nodes - 1)) Workers)"
header
for k in "${kinds[@]}"; do
  grep "^$k " "$work/rows" | row
done
echo "  medians:"
declare -A med
for k in "${kinds[@]}"; do
  line=$k
  for col in 2 3 4 5 6; do
    m=$(grep "^$k " "$work/rows" | awk -v c=$col '{print $c}' | median)
    med[$k,$col]=$m
    line="$line $m"
  done
  row <<<"$line"
done
other=${kinds[1]}
awk -v a="${med[$other,2]}" -v b="${med[kubedist,2]}" -v c="${med[$other,3]}" -v d="${med[kubedist,3]}" \
  -v e="${med[$other,4]}" -v f="${med[kubedist,4]}" -v g="${med[$other,5]}" -v h="${med[kubedist,5]}" \
  -v i="${med[$other,6]}" -v j="${med[kubedist,6]}" -v o="$other" \
  'function q(x, y) { return y > 0 ? x / y : 0 }
   BEGIN {printf "  %s / kubedist:%11.2fx %11.2fx %10.2fx %12.2fx %10.2fx\n", o, q(a, b), q(c, d), q(e, f), q(g, h), q(i, j)}'
