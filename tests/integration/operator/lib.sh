# Helpers for the operator's cluster tests (source after tests/lib/kube.sh). Needs OPERATOR (the binary).

# begin_scenario NAME: the CRD installed, a fresh namespace op-NAME-... in NS, and cleanup on exit.
begin_scenario() {
  apply_crd
  new_namespace "op-$1"
  trap cleanup EXIT
}

# start_operator [FLAGS...]: runs kubedist-operator on the test's namespace, logging to $OP_LOG; sets OP_PID
# and OP_PORT (its probe port). stop_operator / the EXIT trap stop it.
start_operator() {
  OP_LOG=${OP_LOG:-$(mktemp /tmp/kubedist-operator-XXXXXX.log)}
  # A restarted operator appends to the same log: wait for its own line, not the last one's.
  local seen
  seen=$(grep -c 'probes listening on port' "$OP_LOG" || true)
  reports_port() { [ "$(grep -c 'probes listening on port' "$OP_LOG")" -gt "$seen" ]; }
  "$OPERATOR" --namespace "$NS" --probe-address 127.0.0.1:0 "$@" >>"$OP_LOG" 2>&1 &
  OP_PID=$!
  eventually 30 "operator reports its probe port" reports_port
  OP_PORT=$(grep -o 'probes listening on port [0-9]*' "$OP_LOG" | tail -n 1 | grep -o '[0-9]*$')
}

# stop_operator [SIGNAL]: stops it (default SIGTERM) and waits; returns its exit status.
stop_operator() {
  local sig=${1:-TERM} rc=0
  [ -n "${OP_PID:-}" ] || return 0
  kill "-$sig" "$OP_PID" 2>/dev/null || true
  wait "$OP_PID" || rc=$?
  OP_PID=
  return $rc
}

# Cleanup for the EXIT trap: the operator (its log shown when the test failed) and the namespace.
cleanup() {
  local rc=$?
  local p
  for p in ${OP_PID:-} ${OP2_PID:-} ${EXTRA_PIDS:-}; do
    kill -KILL "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
  done
  [ -n "${OP2_LOG:-}" ] && rm -f "$OP2_LOG"
  delete_test_nodes
  if [ $rc -ne 0 ] && [ -n "${OP_LOG:-}" ]; then
    echo "--- operator log (last 40 lines) ---" >&2
    tail -n 40 "$OP_LOG" >&2
  fi
  [ -n "${OP_LOG:-}" ] && rm -f "$OP_LOG"
  [ -n "${NS:-}" ] && kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  return $rc
}

# operator_role NAME [RULE...]: Role NAME in the test's namespace with the rules the operator needs for plain jobs
# (the Helm chart's, without gang scheduling, Kueue or nodes), and the extra rules given (YAML flow mappings).
operator_role() {
  local name=$1 rule
  shift
  {
    printf 'apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: %s}\nrules:\n' "$name"
    cat <<'YAML'
- {apiGroups: [kubedist.io], resources: [trainingjobs], verbs: [list, watch, delete]}
- {apiGroups: [kubedist.io], resources: [trainingjobs/status], verbs: [patch]}
- {apiGroups: [""], resources: [pods], verbs: [list, watch, create, delete]}
- {apiGroups: [""], resources: [services], verbs: [list, watch, create]}
- {apiGroups: [""], resources: [secrets], verbs: [create]}
- {apiGroups: [""], resources: [secrets], resourceNames: [kubedist-rendezvous], verbs: [get, list, watch]}
- {apiGroups: [""], resources: [events], verbs: [create]}
YAML
    for rule in "$@"; do printf -- '- %s\n' "$rule"; done
  } | kubectl -n "$NS" apply -f - >/dev/null
}

# sa_kubeconfig DIR SA ROLE: service account SA of the test's namespace bound to ROLE, and DIR/kubeconfig that
# authenticates as it (a tokenFile, DIR/token, valid 1 h, and the cluster's CA in DIR/ca.crt). Sets SERVER.
sa_kubeconfig() {
  local dir=$1 sa=$2 role=$3
  kubectl -n "$NS" create serviceaccount "$sa" >/dev/null
  kubectl -n "$NS" create rolebinding "$sa" --role="$role" --serviceaccount="$NS:$sa" >/dev/null
  SERVER=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$dir/ca.crt"
  kubectl -n "$NS" create token "$sa" --duration=1h >"$dir/token"
  cat >"$dir/kubeconfig" <<YAML
apiVersion: v1
kind: Config
current-context: sa
clusters: [{name: c, cluster: {server: "$SERVER", certificate-authority: ca.crt}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: sa, context: {cluster: c, user: u, namespace: $NS}}]
YAML
}

jp() { kubectl -n "$NS" get "$1" -o jsonpath="$2"; }
pod_count() { kubectl -n "$NS" get pods -l "kubedist.io/job-name=$1" --no-headers 2>/dev/null | wc -l; }
phase_is() { [ "$(jp "tj/$1" '{.status.phase}')" = "$2" ]; }
pods_are() { [ "$(pod_count "$1")" -eq "$2" ]; }
all_running() {
  local out
  out=$(kubectl -n "$NS" get pods -l "kubedist.io/job-name=$1" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}')
  [ "$(grep -c '^Running$' <<<"$out")" -eq "$2" ] && [ "$(wc -l <<<"$out")" -eq "$2" ]
}
has_event() { [ -n "$(kubectl -n "$NS" get events --field-selector "involvedObject.name=$1,reason=$2" --no-headers 2>/dev/null)" ]; }

# finish_pod POD EXIT_CODE [MESSAGE]: makes a kwok pod end as the kubelet would report it, through the status
# subresource; MESSAGE is the trainer container's termination message (what the launcher writes).
finish_pod() {
  local pod=$1 code=$2 phase=Succeeded reason=Completed message
  if [ "$code" -ne 0 ]; then phase=Failed; reason=Error; fi
  message=$(printf '%s' "${3:-}" | /usr/bin/python3 -c 'import json, sys; print(json.dumps(sys.stdin.read()))')
  kubectl -n "$NS" patch pod "$pod" --subresource=status --type=merge -p "{\"status\":{\"phase\":\"$phase\",
    \"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],
    \"containerStatuses\":[{\"name\":\"trainer\",\"image\":\"x\",\"imageID\":\"\",\"ready\":false,\"restartCount\":0,
    \"state\":{\"terminated\":{\"exitCode\":$code,\"reason\":\"$reason\",\"message\":$message,
    \"finishedAt\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}}}]}}" >/dev/null
}

# job_yaml NAME REPLICAS [EXTRA-SPEC-LINES] [EXTRA-POD-SPEC-LINES]: a job whose pods fit the fake nodes (no GPU
# limits).
job_yaml() {
  printf 'apiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: %s}\nspec:\n  replicas: %s\n%s\n' "$1" "$2" "${3:-}"
  printf '  template:\n    spec:\n%s\n      containers: [{name: trainer, image: busybox, command: [python, train.py], args: [--lr, "0.1"]}]\n' "${4:-}"
}

# Nodes of the test's own (kwok-played), tainted so that only the test's pods, which tolerate the taint and
# select the pool label, land there; other tests' pods and nodes are never touched.
# add_test_node NAME [GPUS]: creates the node and waits until kwok reports it Ready.
add_test_node() {
  local name=$1 gpus=${2:-8}
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $name
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/hostname: $name, type: kwok, kubedist.io/test-pool: $NS}
spec:
  taints: [{key: kubedist.io/test-pool, value: $NS, effect: NoSchedule}]
status:
  capacity: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "$gpus"}
  allocatable: {cpu: "64", memory: 512Gi, pods: "110", nvidia.com/gpu: "$gpus"}
YAML
  TEST_NODES="${TEST_NODES:-} $name"
  node_ready() { [ "$(kubectl get node "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
  eventually 30 "node $name Ready" node_ready "$name"
}
delete_test_nodes() {
  local n
  for n in ${TEST_NODES:-}; do kubectl delete node "$n" --wait=false >/dev/null 2>&1 || true; done
}

# A node of the test's pool whose kubelet the test plays (kwok does not know it, and kwok would confirm any pod
# deletion at once): its pods run when run_pod says so, and nothing confirms their deletion, as on a node cut off.
# add_played_node NAME [GPUS]: creates it Ready.
add_played_node() {
  local name=$1 gpus=${2:-8}
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $name
  labels: {kubernetes.io/hostname: $name, kubedist.io/test-pool: $NS}
spec:
  taints: [{key: kubedist.io/test-pool, value: $NS, effect: NoSchedule}]
YAML
  TEST_NODES="${TEST_NODES:-} $name"
  PLAYED_GPUS=$gpus played_node_ready "$name" True KubeletReady
}
# played_node_ready NAME True|False REASON: its Ready condition, as its kubelet would report it.
played_node_ready() {
  local name=$1 status=$2 reason=$3 now gpus=${PLAYED_GPUS:-8}
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  kubectl patch node "$name" --subresource=status --type=merge -p "{\"status\":{
    \"capacity\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"$gpus\"},
    \"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"$gpus\"},
    \"conditions\":[{\"type\":\"Ready\",\"status\":\"$status\",\"reason\":\"$reason\",\"message\":\"test\",
    \"lastTransitionTime\":\"$now\",\"lastHeartbeatTime\":\"$now\"}]}}" >/dev/null
}
# run_pod POD: a pod bound to a played node starts running, as its kubelet would report it.
run_pod() {
  local now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  kubectl -n "$NS" patch pod "$1" --subresource=status --type=merge -p "{\"status\":{\"phase\":\"Running\",
    \"startTime\":\"$now\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],
    \"containerStatuses\":[{\"name\":\"trainer\",\"image\":\"x\",\"imageID\":\"\",\"ready\":true,
    \"restartCount\":0,\"state\":{\"running\":{\"startedAt\":\"$now\"}}}]}}" >/dev/null
}

# pool_job_yaml NAME REPLICAS GPUS [EXTRA-SPEC-LINES]: a job whose pods each need GPUS GPUs on the test's nodes.
pool_job_yaml() {
  printf 'apiVersion: kubedist.io/v1alpha1\nkind: TrainingJob\nmetadata: {name: %s}\nspec:\n  replicas: %s\n%s\n' "$1" "$2" "${4:-}"
  cat <<YAML
  template:
    spec:
      nodeSelector: {kubedist.io/test-pool: $NS}
      tolerations: [{key: kubedist.io/test-pool, operator: Equal, value: $NS, effect: NoSchedule}]
      containers:
      - name: trainer
        image: busybox
        command: [python, train.py]
        resources: {limits: {nvidia.com/gpu: $3}}
YAML
}

# reasons JOB: status.restartsByReason as "node_lost=N pod_failure=N scale=N worker_crash=N", and restarts.
reasons() {
  local r
  r=$(jp "tj/$1" '{.status.restartsByReason}')
  /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1] or "{}"); print(" ".join("%s=%d" % (k, d.get(k, 0)) for k in ("node_lost","pod_failure","scale","worker_crash")), "restarts=%s" % sys.argv[2])' \
    "$r" "$(jp "tj/$1" '{.status.restarts}')"
}
reasons_are() { [ "$(reasons "$1")" = "$2" ]; }
pod_uid() { jp "pod/$1" '{.metadata.uid}'; }

# A port P on 127.0.0.1 with P+1 free too: a job's masterPort, whose rendezvous listens on P+1.
free_port_pair() {
  /usr/bin/python3 -c 'import socket
for _ in range(50):
    a, b = socket.socket(), socket.socket()
    try:
        a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]; b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError: pass
    finally: a.close(); b.close()'
}

# job_secret LAUNCHER POD DIR: the job's rendezvous secret in DIR/secret, for real launchers playing the job's pods
# (on the kwok pods' loopback addresses). The pods' launchers sign the rendezvous with it, which their init
# container derives from the namespace's Secret, and the poller derives the same: here the pods' way, the namespace
# Secret as POD's volume holds it and the launcher's own init container command (`--install`) as POD runs it.
job_secret() {
  local launcher=$1 pod=$2 dir=$3 init
  [ "$(jp "pod/$pod" '{.spec.volumes[?(@.name=="kubedist-rendezvous")].secret.secretName}')" = "kubedist-rendezvous" ] ||
    fail "pod $pod does not mount Secret kubedist-rendezvous"
  mkdir -p "$dir/ns" "$dir/bin"
  kubectl -n "$NS" get secret kubedist-rendezvous -o jsonpath='{.data.secret}' | base64 -d >"$dir/ns/secret"
  init=$(jp "pod/$pod" '{range .spec.initContainers[0].command[*]}{@}{"\n"}{end}' |
    sed -e "s#^/kubedist/bin\$#$dir/bin#" -e "s#^/kubedist/rendezvous/#$dir/ns/#" | tail -n +2)
  local -a init_args
  mapfile -t init_args <<<"$init"
  "$launcher" "${init_args[@]}" >/dev/null || fail "the init container's command: ${init_args[*]}"
  cp "$dir/bin/rdzv-secret" "$dir/secret"
  [ "$(wc -c <"$dir/secret")" = 64 ] || fail "the derived secret is not 32 bytes in hex"
}

# Real kubedist-launcher processes playing job j's launchers (2 nodes) on the kwok pods' loopback addresses
# (operator.cluster.spares, going_away). play_launchers LAUNCHER PORT: sets PLAY_IP (node 0's pod IP) and PLAY_DIR
# (a work directory holding the job's secret, each launcher's log nodeN.log and its workers' ranks.N: "GROUP_RANK
# RESTART_COUNT" a line per start); show the logs with play_logs (the EXIT trap, on a failure).
play_launchers() {
  PLAY_LAUNCHER=$1 PLAY_PORT=$2
  PLAY_IP=$(jp pod/j-node-0 '{.status.podIP}')
  case "$PLAY_IP" in 127.*) ;; *) fail "kwok pod IP $PLAY_IP is not a loopback address" ;; esac
  PLAY_DIR=$(mktemp -d /tmp/kubedist-op-launchers-XXXXXX)
  job_secret "$PLAY_LAUNCHER" j-node-0 "$PLAY_DIR"
}
# play_launcher NODE_RANK [--spare]: a launcher as that pod would run it; sets LPID (killed by cleanup).
play_launcher() {
  "$PLAY_LAUNCHER" --nnodes=2 --node-rank="$1" "${@:2}" --master-addr="$PLAY_IP" --master-port="$PLAY_PORT" \
    --rdzv-endpoint="$PLAY_IP:$((PLAY_PORT + 1))" --rdzv-id=j --max-restarts=10 --stop-timeout=5 \
    --rdzv-conf=join_timeout=60 --rdzv-secret-file="$PLAY_DIR/secret" \
    --no-python -- sh -c 'echo "$GROUP_RANK $TORCHELASTIC_RESTART_COUNT" >>"$0"; exec sleep 600' "$PLAY_DIR/ranks.$1" \
    >>"$PLAY_DIR/node$1.log" 2>&1 &
  LPID=$!
  EXTRA_PIDS="${EXTRA_PIDS:-} $LPID"
}
play_logs() {
  local f
  for f in "${PLAY_DIR:-/nonexistent}"/node*.log; do
    [ -e "$f" ] || continue
    echo "--- $f (last 30 lines) ---" >&2
    tail -n 30 "$f" >&2
  done
}
world_is() { [ "$(jp tj/j '{.status.worldSize} {.status.phase}')" = "$1 Running" ]; }
spares_ready_is() { [ "$(jp tj/j '{.status.sparesReady}')" = "$1" ]; }
# play_two_nodes_and_a_spare LAUNCHER PORT: play_launchers, then spare 10000, node 1 (its launcher's pid: N1_PID) and
# node 0 started, until the group of 2 runs and the spare is reported ready; the EXIT trap shows their logs on a
# failure and removes PLAY_DIR.
play_two_nodes_and_a_spare() {
  play_launchers "$1" "$2"
  trap 'rc=$?; [ $rc -eq 0 ] || play_logs; (exit $rc); cleanup; rm -rf "$PLAY_DIR"' EXIT
  play_launcher 10000 --spare
  play_launcher 1
  N1_PID=$LPID
  play_launcher 0
  # The group formed at node 0's rendezvous: both nodes' workers started (status.worldSize, counted from the pods,
  # says nothing of the launchers; node 1 may still be between two tries to reach node 0 under load).
  both_started() { [ -s "$PLAY_DIR/ranks.0" ] && [ -s "$PLAY_DIR/ranks.1" ]; }
  eventually 60 "the group of 2 formed at node 0's rendezvous (both nodes' workers started)" both_started
  eventually 30 "the group of 2 running" world_is 2
  eventually 30 "the spare reported ready" spares_ready_is 1
}
