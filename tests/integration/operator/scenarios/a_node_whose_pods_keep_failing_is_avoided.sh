#!/usr/bin/env bash
# A node where a job's pods fail twice for reasons that are not the training code's (ended by a signal) is avoided by
# the job's new pods: status.nodeFailures counts each such failure once, status.avoidedNodes names the node, one
# Event NodeAvoided says so, and the replacement waits for another node rather than going back there. A failure of
# the program itself (exit code 1, or 255 from sys.exit(-1)) counts against no node. With --taint-avoided-nodes the
# job's signals still taint nothing (one job's program is no proof against a node, and any tenant could taint any
# node so); a node that ends a job's pods itself twice (NodeShutdown) is tainted kubedist.io/avoided:NoSchedule beside
# its own taints, valued with the second it was added, and the operator takes the taint off after
# --avoided-taint-ttl.
# usage: a_node_whose_pods_keep_failing_is_avoided.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario badnode

bad="$NS-a"
spare="$NS-b"
add_test_node "$bad" 8
add_test_node "$spare" 8
kubectl cordon "$spare" >/dev/null  # every pod lands on $bad until the test opens $spare
start_operator --avoid-node-after-failures=2 --taint-avoided-nodes --avoided-taint-ttl=15s --watch-nodes \
  --launcher-poll-interval=0
pool_job_yaml j 1 8 "  backoffLimit: 6" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "j-node-0 running" all_running j 1
[ "$(jp pod/j-node-0 '{.spec.nodeName}')" = "$bad" ] || fail "j-node-0 is not on $bad"

# fail_on_bad CODE N: j-node-0 (on $bad) ends with CODE; waits for its replacement, the Nth pod failure counted.
fail_on_bad() {
  local old
  old=$(pod_uid j-node-0)
  finish_pod j-node-0 "$1"
  replaced() { [ "$(jp tj/j '{.status.restartsByReason.pod_failure}')" = "$2" ] && [ "$(pod_uid j-node-0)" != "$old" ]; }
  eventually 30 "pod failure $2 counted and j-node-0 recreated" replaced "$1" "$2"
}
fail_on_bad 1 1
eventually 30 "j-node-0 running again" all_running j 1
[ -z "$(jp tj/j '{.status.nodeFailures}')" ] || fail "exit code 1 was counted against the node: $(jp tj/j '{.status.nodeFailures}')"
pass "exit code 1 is the program's: pod_failure=1, no node failure counted"

fail_on_bad 255 2
eventually 30 "j-node-0 running again" all_running j 1
[ -z "$(jp tj/j '{.status.nodeFailures}')" ] || fail "exit code 255 was counted against the node: $(jp tj/j '{.status.nodeFailures}')"
pass "exit code 255 (sys.exit(-1)) is the program's too: pod_failure=2, no node failure counted"

fail_on_bad 137 3
eventually 30 "j-node-0 running again" all_running j 1
[ "$(jp pod/j-node-0 '{.spec.nodeName}')" = "$bad" ] || fail "the replacement left $bad before it was avoided"
[ "$(jp tj/j "{.status.nodeFailures.$bad}")" = 1 ] || fail "nodeFailures: $(jp tj/j '{.status.nodeFailures}')"
[ -z "$(jp tj/j '{.status.avoidedNodes}')" ] || fail "avoided after one failure"
taints() { kubectl get node "$1" -o jsonpath='{range .spec.taints[*]}{.key}={.value}:{.effect}{" "}{end}'; }
[ "$(taints "$bad")" = "kubedist.io/test-pool=$NS:NoSchedule " ] || fail "$bad tainted after one failure: $(taints "$bad")"
has_event j NodeAvoided && fail "NodeAvoided after one failure"
pass "SIGKILL (137) on $bad: nodeFailures $bad=1, not avoided yet"

fail_on_bad 139 4
[ "$(jp tj/j "{.status.nodeFailures.$bad}")" = 2 ] || fail "nodeFailures: $(jp tj/j '{.status.nodeFailures}')"
[ "$(jp tj/j '{.status.avoidedNodes[*]}')" = "$bad" ] || fail "avoidedNodes: $(jp tj/j '{.status.avoidedNodes}')"
eventually 10 "NodeAvoided event" has_event j NodeAvoided
msg=$(kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=NodeAvoided -o jsonpath='{.items[*].message}')
grep -qF "node $bad: 2 failures of this job's pods there not caused by the training code (the latest: pod j-node-0 failed (exit code 139" <<<"$msg" ||
  fail "NodeAvoided message: $msg"
excluded=$(jp pod/j-node-0 '{.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].values[*]}')
[ "$excluded" = "$bad" ] || fail "j-node-0's affinity excludes '$excluded', not $bad"
# The scheduler keeps it off $bad, the only schedulable node: it waits, unschedulable.
unschedulable() { [ "$(jp pod/j-node-0 '{.status.conditions[?(@.type=="PodScheduled")].reason}')" = Unschedulable ]; }
eventually 30 "j-node-0 unschedulable while only $bad is open" unschedulable
[ -z "$(jp pod/j-node-0 '{.spec.nodeName}')" ] || fail "j-node-0 was bound to $(jp pod/j-node-0 '{.spec.nodeName}')"
[ "$(taints "$bad")" = "kubedist.io/test-pool=$NS:NoSchedule " ] || fail "$bad tainted for a job's signals: $(taints "$bad")"
grep -qF "not tainted for other jobs: what one job's pods saw is no proof against the node" <<<"$msg" ||
  fail "NodeAvoided does not say why the node was not tainted: $msg"
pass "SIGSEGV (139) on $bad: nodeFailures $bad=2, avoidedNodes [$bad], Event NodeAvoided, the replacement stays off $bad, and no taint for the job's own signals"

kubectl uncordon "$spare" >/dev/null
eventually 60 "j-node-0 running on $spare" all_running j 1
[ "$(jp pod/j-node-0 '{.spec.nodeName}')" = "$spare" ] || fail "j-node-0 runs on $(jp pod/j-node-0 '{.spec.nodeName}')"
eventually 30 "job Running" phase_is j Running
# pod_failure, not all restarts: kwok, playing the kubelets, deletes pods by name and now and then takes the
# replacement along (a node_lost that is kwok's, and never counted against a node).
[ "$(jp tj/j '{.status.restartsByReason.pod_failure}')" = 4 ] || fail "restarts: $(reasons j)"
[ "$(kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=NodeAvoided --no-headers | wc -l)" = 1 ] ||
  fail "NodeAvoided said more than once"
pass "once $spare opens the job runs there; pod_failure=4, one NodeAvoided"

# The node's own fault: job k's pod on $shut is ended by the node's shutdown twice (the kubelet's reason
# NodeShutdown). That avoids $shut and taints it for every tenant, valued with the second it was added; the operator
# takes the taint off after --avoided-taint-ttl (15s).
shut="$NS-c"
add_test_node "$shut" 8
kubectl cordon "$bad" "$spare" >/dev/null
pool_job_yaml k 1 8 "  backoffLimit: 6" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "k-node-0 running on $shut" all_running k 1
[ "$(jp pod/k-node-0 '{.spec.nodeName}')" = "$shut" ] || fail "k-node-0 is not on $shut"
shut_down() {
  local old
  old=$(pod_uid k-node-0)
  kubectl -n "$NS" patch pod k-node-0 --subresource=status --type=merge -p '{"status":{"phase":"Failed",
    "reason":"NodeShutdown","message":"Pod was terminated in response to imminent node shutdown."}}' >/dev/null
  recreated() { [ "$(pod_uid k-node-0)" != "$old" ]; }
  eventually 30 "k-node-0 recreated after its node's shutdown" recreated
}
shut_down
eventually 30 "k-node-0 running on $shut again" all_running k 1
[ "$(taints "$shut")" = "kubedist.io/test-pool=$NS:NoSchedule " ] || fail "$shut tainted after one shutdown: $(taints "$shut")"
before=$(date +%s)
shut_down
avoided_taint() { taints "$shut" | grep -oE 'kubedist\.io/avoided=[0-9]+:NoSchedule' | grep -oE '[0-9]+'; }
eventually 10 "$shut tainted kubedist.io/avoided beside its own taint" avoided_taint
added=$(avoided_taint)
[ "$added" -ge "$before" ] && [ "$added" -le "$(date +%s)" ] || fail "the taint's value $added is not the second it was added"
grep -qF "tainted kubedist.io/avoided:NoSchedule for every new pod" <<<"$(kubectl -n "$NS" get events \
  --field-selector involvedObject.name=k,reason=NodeAvoided -o jsonpath='{.items[*].message}')" ||
  fail "k's NodeAvoided does not say it tainted $shut"
pass "two shutdowns of $shut under job k: avoided and tainted kubedist.io/avoided=$added:NoSchedule"
untainted() { [ "$(taints "$shut")" = "kubedist.io/test-pool=$NS:NoSchedule " ]; }
eventually 45 "the taint taken off $shut after --avoided-taint-ttl" untainted
gone=$(date +%s)
[ $((gone - added)) -ge 15 ] || fail "the taint came off after $((gone - added))s, before the TTL of 15s"
pass "the operator took its taint off $shut $((gone - added))s after adding it (--avoided-taint-ttl=15s), its own taint kept"
