#!/usr/bin/env bash
# Issue 40 item 2, the announced losses: a member's node is cordoned (as `kubectl drain` does first; a cloud's
# termination taint and NotReady take the same path) while the job's spare waits. The operator, which watches nodes,
# tells node 0's rendezvous at once (RELEASE, signed as its STATUS poll is), so the spare takes node 1's place while
# node 1's workers still run, before anything evicts them: no new pod to schedule, one node_lost, Event
# NodeGoingAway; node 1's pod, now only a spare on a node going away, is deleted and a new spare is made. Real
# kubedist-launcher processes play the job's launchers on the kwok pods' loopback addresses (as operator.cluster.
# spares does), on nodes of the test's own.
# usage: a_node_going_away_gives_its_place_to_a_spare_first.sh OPERATOR_BINARY LAUNCHER_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
LAUNCHER=${2:-}
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario going-away

[ -x "$LAUNCHER" ] || fail "usage: a_node_going_away_gives_its_place_to_a_spare_first.sh OPERATOR LAUNCHER"
for n in a b c d; do add_test_node "$NS-$n" 8; done
port=$(free_port_pair)
start_operator --watch-nodes --launcher-poll-interval=300ms
pool_job_yaml j 2 1 "  masterPort: $port
  spares: 1
  maxRestarts: 10" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods and a spare running" all_running j 3

play_two_nodes_and_a_spare "$LAUNCHER" "$port"
n1=$N1_PID
node1=$(jp pod/j-node-1 '{.spec.nodeName}')
spare_node=$(jp pod/j-spare-0 '{.spec.nodeName}')
[ -n "$node1" ] && [ "$node1" != "$spare_node" ] || fail "node 1 and the spare share node '$node1'"

# Node 1's node is cordoned: nothing is evicted (the test does not drain), nothing is lost yet.
kubectl cordon "$node1" >/dev/null
stood_in() { [ "$(jp tj/j '{.status.standIns[0].nodeRank}:{.status.standIns[0].podNodeRank}')" = "1:10000" ]; }
eventually 30 "status.standIns naming the spare in node rank 1's place" stood_in
eventually 10 "NodeGoingAway event" has_event j NodeGoingAway
kill -0 "$n1" 2>/dev/null || fail "node 1's launcher exited: the spare should have taken its place while it ran"
grep -q "the operator says node 1's node goes away (cordoned): released" "$PLAY_DIR/node0.log" ||
  fail "node 0's log does not say it took the notice"
eventually 30 "the spare's worker at group rank 1, restart 1" grep -qx "1 1" "$PLAY_DIR/ranks.10000"
eventually 30 "the group of 2 running again" world_is 2
eventually 30 "the loss counted once" reasons_are j "node_lost=1 pod_failure=0 scale=0 worker_crash=0 restarts=1"
pass "cordoning node 1's node gave its place to the spare while node 1 still ran (group rank 1, one node_lost)"

# Node 1's pod waits as a spare on a node going away: it is deleted, and a new spare made on a node that stays.
eventually 30 "node 1's pod deleted" bash -c "! kubectl -n $NS get pod j-node-1 >/dev/null 2>&1"
eventually 10 "SparesMoved event" has_event j SparesMoved
new_spare() { [ -n "$(jp pod/j-spare-1 '{.spec.nodeName}' 2>/dev/null)" ]; }
eventually 30 "a new spare j-spare-1 scheduled" new_spare
[ "$(jp pod/j-spare-1 '{.spec.nodeName}')" != "$node1" ] || fail "the new spare went to the cordoned node"
kill -TERM "$n1" 2>/dev/null || true  # its pod is gone: the launcher a kubelet would stop
wait "$n1" 2>/dev/null || true
sleep 1
reasons_are j "node_lost=1 pod_failure=0 scale=0 worker_crash=0 restarts=1" || fail "node 1's leaving counted: $(reasons j)"
[ "$(grep -c . "$PLAY_DIR/ranks.0")" -eq 2 ] || fail "node 0's workers restarted more than once: $(cat "$PLAY_DIR/ranks.0")"
pass "node 1's pod, a spare on a node going away, was deleted (SparesMoved) and spare j-spare-1 made elsewhere"
