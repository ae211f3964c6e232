#!/usr/bin/env bash
# A finished group is a finished job: node 1's node stops reporting while the operator is down, and node 0's
# launcher (the rendezvous host) exits 0 meanwhile, as after an elastic job went on at world size 1. The restarted
# operator makes the job Succeeded (GroupFinished), stops j-node-1 instead of recreating it, and counts no node_lost
# restart for a job whose training is over.
# usage: a_finished_group_is_a_finished_job.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario groupfinished

# Node 0 on a kwok node; node 1 on a node whose kubelet the test plays, so that nothing confirms its pod's deletion
# once that node falls silent (kwok would at once).
add_test_node "$NS-a" 8
flags=(--watch-nodes --node-lost-grace=3s --launcher-poll-interval=0)
start_operator "${flags[@]}"
pool_job_yaml j 2 8 "  minReplicas: 1" | kubectl -n "$NS" apply -f - >/dev/null
placed() { [ "$(jp pod/j-node-0 '{.spec.nodeName}')" = "$NS-a" ]; }
eventually 30 "j-node-0 on $NS-a (the only node yet)" placed
victim="$NS-b"
add_played_node "$victim"
on_victim() { [ "$(jp pod/j-node-1 '{.spec.nodeName}')" = "$victim" ]; }
eventually 30 "j-node-1 on the played node" on_victim
run_pod j-node-1
eventually 30 "2 pods running" all_running j 2
eventually 30 "job Running" phase_is j Running
node1=$(pod_uid j-node-1)
add_test_node "$NS-c" 8  # room for a replacement of j-node-1, which must not be made
stop_operator KILL || true
# The node loses power: its kubelet reports nothing more, and its Ready condition turns False.
played_node_ready "$victim" False KubeletStopped
finish_pod j-node-0 0
start=$(date +%s)
start_operator "${flags[@]}"
eventually 30 "job Succeeded" phase_is j Succeeded
took=$(( $(date +%s) - start ))
[ "$(jp tj/j '{.status.conditions[?(@.type=="Succeeded")].reason}')" = GroupFinished ] ||
  fail "Succeeded reason: $(jp tj/j '{.status.conditions[?(@.type=="Succeeded")].reason}')"
jp tj/j '{.status.conditions[?(@.type=="Succeeded")].message}' |
  grep -qF "node 0 (pod j-node-0) finished the training" || fail "message: $(jp tj/j '{.status.conditions[?(@.type=="Succeeded")].message}')"
eventually 10 "GroupFinished event" has_event j GroupFinished
stopping() { [ -n "$(jp pod/j-node-1 '{.metadata.deletionTimestamp}')" ]; }
eventually 30 "j-node-1 being stopped" stopping
[ "$(pod_uid j-node-1)" = "$node1" ] || fail "j-node-1 was recreated"
[ "$(jp pod/j-node-1 '{.metadata.deletionGracePeriodSeconds}')" != 0 ] || fail "j-node-1 was forced on a node not confirmed gone"
reasons_are j "node_lost=0 pod_failure=0 scale=0 worker_crash=0 restarts=0" || fail "restarts: $(reasons j)"
has_event j PodLost && fail "a PodLost event for a job whose training was over"
pass "node 0 exited 0 with node 1's node NotReady: Succeeded (GroupFinished) ${took}s after the operator came back, j-node-1 stopped, no restart counted"
# The node is confirmed gone (the administrator's out-of-service taint): the stuck pod goes, nothing replaces it.
kubectl taint node "$victim" node.kubernetes.io/out-of-service=nodeshutdown:NoExecute >/dev/null
gone() { ! kubectl -n "$NS" get pod j-node-1 >/dev/null 2>&1; }
eventually 30 "j-node-1 gone" gone
kubectl -n "$NS" annotate tj j kubedist.io/test-poke=1 >/dev/null  # one more pass over the finished job
still() { phase_is j Succeeded && pods_are j 1; }
eventually 10 "still Succeeded with node 0's pod alone" still
has_event j CreatedPods && fail "a pod was recreated for a finished job"
reasons_are j "node_lost=0 pod_failure=0 scale=0 worker_crash=0 restarts=0" || fail "restarts: $(reasons j)"
pass "once the node is out of service the stopped pod is gone and not recreated"
