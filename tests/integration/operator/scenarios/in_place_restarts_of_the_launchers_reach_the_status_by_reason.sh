#!/usr/bin/env bash
# Real kubedist-launcher processes play the job's launchers. kwok gives pods addresses in 127.100.0.0/16, which
# are this machine's loopback, so node 0's rendezvous service listens on j-node-0's podIP:masterPort+1 and the
# operator's poller reaches it exactly as it would reach a pod.
# usage: in_place_restarts_of_the_launchers_reach_the_status_by_reason.sh OPERATOR_BINARY [LAUNCHER_BINARY]   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
LAUNCHER=${2:-}  # kubedist-launcher: this scenario runs real launchers
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario launcher

[ -x "$LAUNCHER" ] || fail "usage: in_place_restarts_of_the_launchers_reach_the_status_by_reason.sh OPERATOR LAUNCHER"
port=$(free_port_pair)
start_operator --launcher-poll-interval=300ms
job_yaml j 2 "  masterPort: $port
  minReplicas: 1
  maxReplicas: 2
  maxRestarts: 10" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
ip=$(jp pod/j-node-0 '{.status.podIP}')
case "$ip" in 127.*) ;; *) fail "kwok pod IP $ip is not a loopback address" ;; esac
work=$(mktemp -d /tmp/kubedist-op-launcher-XXXXXX)
trap 'cleanup; rm -rf "$work"' EXIT
job_secret "$LAUNCHER" j-node-0 "$work"
# Node 0's worker crashes once (worker_crash), then runs until stopped.
script='if [ "$CRASH_ONCE" = 1 ] && [ ! -e "$WORK/crashed" ]; then touch "$WORK/crashed"; exit 3; fi; exec sleep 600'
launch() {  # launch NODE_RANK: a launcher as j-node-NODE_RANK would run it; sets LPID
  WORK=$work CRASH_ONCE=$((1 - $1)) "$LAUNCHER" --nnodes=1:2 --node-rank="$1" --master-addr="$ip" --master-port="$port" \
    --rdzv-endpoint="$ip:$((port + 1))" --rdzv-id=j --max-restarts=10 --stop-timeout=5 \
    --rdzv-conf=last_call_timeout=0.2,join_timeout=60 --rdzv-secret-file="$work/secret" \
    --no-python -- sh -c "$script" >>"$work/node$1.log" 2>&1 &
  LPID=$!
  EXTRA_PIDS="${EXTRA_PIDS:-} $LPID"
}
launch 0
n0=$LPID
eventually 30 "worker_crash counted from node 0's STATUS" reasons_are j "node_lost=0 pod_failure=0 scale=0 worker_crash=1 restarts=1"
eventually 10 "WorkerRestarted event" has_event j WorkerRestarted
[ "$(jp tj/j '{.status.launcher.podUID}')" = "$(pod_uid j-node-0)" ] || fail "status.launcher.podUID"
eventually 30 "job Running" phase_is j Running
pass "a worker crash the launchers restarted in place reaches status.restartsByReason.worker_crash (Event WorkerRestarted)"
launch 1
n1=$LPID
eventually 30 "node 1 joining counted as scale" reasons_are j "node_lost=0 pod_failure=0 scale=1 worker_crash=1 restarts=2"
world_is() { [ "$(jp tj/j '{.status.worldSize} {.status.phase}')" = "$1 Running" ]; }
eventually 30 "world size 2 from the launcher" world_is 2
kill -TERM "$n1"
wait "$n1" || true
eventually 30 "node 1 leaving on SIGTERM counted as scale" reasons_are j "node_lost=0 pod_failure=0 scale=2 worker_crash=1 restarts=3"
eventually 10 "GroupRestarted event" has_event j GroupRestarted
# A node that joins while the group is still forming needs no restart: wait until node 0 runs alone again.
eventually 30 "node 0 running alone (world size 1)" world_is 1
pass "a node joining and a node leaving on SIGTERM (LEAVE) are counted as scale"
launch 1
n1=$LPID
eventually 30 "node 1 back (scale)" reasons_are j "node_lost=0 pod_failure=0 scale=3 worker_crash=1 restarts=4"
eventually 30 "both nodes running (world size 2)" world_is 2
kill -KILL "$n1"
wait "$n1" 2>/dev/null || true
eventually 30 "node 1 vanishing counted as node_lost" reasons_are j "node_lost=1 pod_failure=0 scale=3 worker_crash=1 restarts=5"
pass "a node whose launcher vanishes is counted as node_lost; restarts is the sum of restartsByReason"
# The operator restarting loses nothing and counts nothing twice: the folded counts live in the status.
stop_operator
start_operator --launcher-poll-interval=300ms
sleep_until=$((SECONDS + 3))
while [ $SECONDS -lt $sleep_until ]; do
  reasons_are j "node_lost=1 pod_failure=0 scale=3 worker_crash=1 restarts=5" || fail "counts changed after an operator restart: $(reasons j)"
  sleep 0.3
done
pass "an operator restart neither loses nor double counts launcher restarts"
kill -TERM "$n0"
wait "$n0" || true
# Another job's node 0 now answers at j-node-0's address (an IP reused, the same port): its restarts are not j's.
other=$(mktemp -d /tmp/kubedist-op-launcher-XXXXXX)
WORK=$other CRASH_ONCE=1 "$LAUNCHER" --nnodes=1:2 --node-rank=0 --master-addr="$ip" --master-port="$port" \
  --rdzv-endpoint="$ip:$((port + 1))" --rdzv-id=other --max-restarts=10 --stop-timeout=5 \
  --rdzv-conf=last_call_timeout=0.2 --no-python -- sh -c "$script" >>"$work/other.log" 2>&1 &
n_other=$!
EXTRA_PIDS="${EXTRA_PIDS:-} $n_other"
status_line() { /usr/bin/python3 -c 'import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), 2); s.sendall(b"STATUS\n"); print(s.makefile().readline().strip())' "$ip" $((port + 1)); }
other_crashed() { grep -q "worker_crash=1 .*run=other" <<<"$(status_line 2>/dev/null)"; }
eventually 30 "the other run's launcher reports its worker crash" other_crashed
sleep_until=$((SECONDS + 3))
while [ $SECONDS -lt $sleep_until ]; do
  reasons_are j "node_lost=1 pod_failure=0 scale=3 worker_crash=1 restarts=5" || fail "another run's report was credited to j: $(reasons j)"
  sleep 0.3
done
kill -TERM "$n_other"
wait "$n_other" || true
rm -rf "$other"
pass "a STATUS answer of another run (run=other) at the job's node-0 address is not credited to the job"
