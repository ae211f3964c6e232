#!/usr/bin/env bash
# spec.spares with real kubedist-launcher processes playing the job's launchers on the kwok pods' loopback
# addresses (as operator.cluster.launcher does): node 1 is lost (its launcher killed, its pod deleted), the spare
# takes its place in node 0's rendezvous, and the operator keeps that place the spare's, makes a new spare instead of
# node 1's pod, and counts the loss once; a restarted operator changes nothing.
# usage: a_spare_takes_a_lost_nodes_place_and_a_new_spare_is_made.sh OPERATOR_BINARY LAUNCHER_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
LAUNCHER=${2:-}
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario spares

[ -x "$LAUNCHER" ] || fail "usage: a_spare_takes_a_lost_nodes_place_and_a_new_spare_is_made.sh OPERATOR LAUNCHER"
port=$(free_port_pair)
start_operator --launcher-poll-interval=300ms
job_yaml j 2 "  masterPort: $port
  spares: 1
  maxRestarts: 10" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods and a spare running" all_running j 3
[ "$(jp pod/j-spare-0 '{.spec.containers[0].env[?(@.name=="KUBEDIST_SPARE")].value}')" = 1 ] ||
  fail "pod j-spare-0 has no KUBEDIST_SPARE=1"
[ "$(jp pod/j-spare-0 '{.spec.containers[0].env[?(@.name=="NODE_RANK")].value}')" = 10000 ] ||
  fail "pod j-spare-0's NODE_RANK is not 10000"
counts_are() { [ "$(jp tj/j '{.status.replicas} {.status.spares}')" = "$1" ]; }
eventually 30 "2 replicas and 1 spare in the status" counts_are "2 1"
pass "spec.spares makes spare pod j-spare-0 (KUBEDIST_SPARE=1, NODE_RANK=10000), counted apart from the replicas"

play_two_nodes_and_a_spare "$LAUNCHER" "$port"
n1=$N1_PID
[ ! -e "$PLAY_DIR/ranks.10000" ] || fail "the spare ran a worker: $(cat "$PLAY_DIR/ranks.10000")"
pass "the spare waits in node 0's rendezvous with no worker (status.sparesReady 1)"

# Node 1's node dies: its launcher first (the others notice at once), its pod later (on a real node, after the
# node-lost grace).
kill -KILL "$n1"
wait "$n1" 2>/dev/null || true
stood_in() { [ "$(jp tj/j '{.status.standIns[0].nodeRank}:{.status.standIns[0].podNodeRank}')" = "1:10000" ]; }
# The killed launcher kills its workers first (up to 5 s), then node 0's workers stop (--stop-timeout=5): about 2 s.
# (Two full CI runs on 2 loaded cores saw no stand-in at all: node 1 had not joined yet when it was killed, so no
# group had formed to lose it from; play_two_nodes_and_a_spare now waits for both nodes' workers.)
eventually 60 "status.standIns naming the spare in node rank 1's place" stood_in
eventually 10 "SpareStoodIn event" has_event j SpareStoodIn
kubectl -n "$NS" delete pod j-node-1 --wait=false >/dev/null
grep -qx "1 1" "$PLAY_DIR/ranks.10000" || fail "the spare's worker did not get group rank 1 at restart 1: $(cat "$PLAY_DIR/ranks.10000" 2>&1)"
eventually 30 "the group of 2 running again" world_is 2
new_spare() { kubectl -n "$NS" get pod j-spare-1 >/dev/null 2>&1; }
eventually 30 "a new spare j-spare-1" new_spare
eventually 30 "the lost pod gone" bash -c "! kubectl -n $NS get pod j-node-1 >/dev/null 2>&1"
eventually 30 "the loss counted once" reasons_are j "node_lost=1 pod_failure=0 scale=0 worker_crash=0 restarts=1"
pass "a lost member's place goes to the spare (group rank 1), a new spare is made, node 1's pod is not, one node_lost"

play_launcher 10001 --spare
eventually 30 "the new spare reported ready" spares_ready_is 1
uids() { kubectl -n "$NS" get pods -l kubedist.io/job-name=j -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid} {end}'; }
before=$(uids)
stop_operator
start_operator --launcher-poll-interval=300ms
sleep_until=$((SECONDS + 4))
while [ $SECONDS -lt $sleep_until ]; do
  [ "$(uids)" = "$before" ] || fail "pods changed after an operator restart: $before -> $(uids)"
  reasons_are j "node_lost=1 pod_failure=0 scale=0 worker_crash=0 restarts=1" || fail "counts changed: $(reasons j)"
  sleep 0.3
done
stood_in || fail "status.standIns lost after an operator restart"
pass "a restarted operator keeps the stand-in's place: no pod made or deleted, nothing counted again"
