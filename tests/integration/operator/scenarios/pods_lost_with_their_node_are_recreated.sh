#!/usr/bin/env bash
# j-node-1's node is deleted: the pod is force-deleted and recreated on the spare node, node 0 untouched. A NotReady
# node's pod is deleted without force and replaced only once the node is confirmed gone (out-of-service taint).
# usage: pods_lost_with_their_node_are_recreated.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario nodelost

add_test_node "$NS-a" 8
add_test_node "$NS-b" 8
start_operator --watch-nodes --node-lost-grace=3s --launcher-poll-interval=0
# lost_are N: N node losses of the test's making, plus those of kwok's: playing the kubelets, it deletes pods by name
# and now and then takes a same-named replacement along, which the operator rightly counts (PodLost "is being
# deleted", an Event whose count says how often).
kwok_losses() {
  kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=PodLost \
    -o jsonpath='{range .items[*]}{.count} {.message}{"\n"}{end}' | awk '/is being deleted/ {n += $1} END {print n + 0}'
}
lost_are() {
  local n=$(($1 + $(kwok_losses)))
  reasons_are j "node_lost=$n pod_failure=0 scale=0 worker_crash=0 restarts=$n"
}
pool_job_yaml j 2 8 "  backoffLimit: 0" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods running" all_running j 2
eventually 30 "job Running" phase_is j Running
node0=$(pod_uid j-node-0)
old=$(pod_uid j-node-1)
lost_node=$(jp pod/j-node-1 '{.spec.nodeName}')
add_test_node "$NS-c" 8
kubectl delete node "$lost_node" --wait=false >/dev/null
eventually 30 "PodLost event" has_event j PodLost
moved() { [ "$(pod_uid j-node-1)" != "$old" ] && [ "$(jp pod/j-node-1 '{.spec.nodeName}')" = "$NS-c" ] && all_running j 2; }
eventually 60 "j-node-1 recreated on the spare node" moved
eventually 30 "job Running again" phase_is j Running
[ "$(pod_uid j-node-0)" = "$node0" ] || fail "node 0 was recreated too"
eventually 10 "node_lost=1 and kwok's (restarts: the status, the Events)" lost_are 1
pass "a pod whose node was deleted is recreated (node_lost=1, backoffLimit 0 unspent, node 0 kept)"
# An eviction (the kubelet fails the pod with reason Evicted) is a node loss too, not a pod failure.
old=$(pod_uid j-node-0)
node1=$(pod_uid j-node-1)
kubectl -n "$NS" patch pod j-node-0 --subresource=status --type=merge -p '{"status":{"phase":"Failed","reason":"Evicted","message":"The node was low on resource: memory."}}' >/dev/null
evicted_back() { [ "$(pod_uid j-node-0)" != "$old" ] && all_running j 2; }
eventually 30 "evicted node 0 recreated" evicted_back
eventually 30 "job Running again" phase_is j Running
[ "$(pod_uid j-node-1)" = "$node1" ] || fail "j-node-1 was recreated for node 0's eviction"
eventually 10 "node_lost=2 and kwok's (restarts: the status, the Events)" lost_are 2
kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=PodLost -o jsonpath='{.items[*].message}' |
  grep -qF "reason Evicted" || fail "PodLost event for the eviction"
pass "an evicted pod is recreated as node_lost; backoffLimit 0 is not spent, the job never Failed"
# A node that stops reporting loses its pod once it has been NotReady for --node-lost-grace: counted and deleted,
# but not forced, for the node may merely be cut off with the pod still running there; its replacement (same name,
# same hostname) waits until the node is confirmed gone (here the administrator's out-of-service taint). kwok would
# confirm any deletion at once, so this node's kubelet is played by the test: it reports Ready, runs j-node-1 and
# then falls silent, confirming nothing.
victim="$NS-e"
kubectl cordon -l "kubedist.io/test-pool=$NS" >/dev/null  # only the test's kubelet takes new pods
add_played_node "$victim"
old=$(pod_uid j-node-1)
kubectl delete node "$(jp pod/j-node-1 '{.spec.nodeName}')" --wait=false >/dev/null  # j-node-1 moves there
on_victim() { [ "$(pod_uid j-node-1)" != "$old" ] && [ "$(jp pod/j-node-1 '{.spec.nodeName}')" = "$victim" ]; }
eventually 30 "j-node-1 recreated on the test's node" on_victim
run_pod j-node-1
eventually 30 "job Running again" phase_is j Running
eventually 10 "node_lost=3 and kwok's (restarts: the status, the Events)" lost_are 3
old=$(pod_uid j-node-1)
add_test_node "$NS-d" 8
played_node_ready "$victim" False KubeletStopped
not_ready_lost() {
  kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=PodLost -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
    grep -q "node $victim has been NotReady"
}
eventually 30 "PodLost for the NotReady node" not_ready_lost
terminating() { [ -n "$(jp pod/j-node-1 '{.metadata.deletionTimestamp}')" ]; }
eventually 30 "j-node-1 deleted (Terminating)" terminating
[ "$(pod_uid j-node-1)" = "$old" ] || fail "j-node-1 was replaced while its NotReady node may still run it"
grace=$(jp pod/j-node-1 '{.metadata.deletionGracePeriodSeconds}')
[ "$grace" != 0 ] || fail "j-node-1 was force-deleted"
eventually 10 "node_lost=4 and kwok's (restarts: the status, the Events)" lost_are 4
waited=$(kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=PodLost -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
  sed -n "s/.*node $victim has been NotReady for \([0-9]*\)s.*/\1/p")
[ -n "$waited" ] && [ "$waited" -ge 3 ] || fail "PodLost for the NotReady node: waited '$waited' s (want >= 3)"
pass "a pod on a node NotReady for --node-lost-grace=3s (here ${waited}s) is counted and deleted with its ${grace} s grace, not forced, not replaced (node_lost=4)"
# NoSchedule rather than the usual NoExecute: the controller-manager's taint eviction, which NoExecute starts, acts
# by pod name and now and then deletes the replacement of the same name too (a second loss this test would count).
kubectl taint node "$victim" node.kubernetes.io/out-of-service=nodeshutdown:NoSchedule >/dev/null
moved_off() { [ "$(pod_uid j-node-1)" != "$old" ] && [ "$(jp pod/j-node-1 '{.spec.nodeName}')" = "$NS-d" ] && all_running j 2; }
eventually 60 "j-node-1 recreated off the out-of-service node" moved_off
eventually 30 "job Running again" phase_is j Running
eventually 10 "node_lost=4 and kwok's (restarts: the status, the Events)" lost_are 4
pass "once the node is out of service the pod is forced and recreated elsewhere, counted once (node_lost=4)"
