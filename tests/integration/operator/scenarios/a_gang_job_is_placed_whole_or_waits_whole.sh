#!/usr/bin/env bash
# Three 8-GPU nodes. Gang jobs of 2 x 8 GPUs: a takes two nodes; b finds one free and waits whole (no pod bound,
# condition GangScheduled False, Event GangWaiting) instead of holding that node; with a gone, b runs whole.
# An elastic gang job (minReplicas 1) still shrinks to the one node left.
# usage: a_gang_job_is_placed_whole_or_waits_whole.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario gang

add_test_node "$NS-a"
add_test_node "$NS-b"
add_test_node "$NS-c"
start_operator --watch-nodes --unschedulable-grace=3s --launcher-poll-interval=0
gang="  scheduling: {gang: true}"
pool_job_yaml a 2 8 "$gang" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "a's 2 pods running" all_running a 2
got=$(jp podgroup/a '{.spec.schedulingPolicy.gang.minCount} {.spec.podGroupTemplateRef.workload.workloadName} {.metadata.ownerReferences[0].uid}')
[ "$got" = "2 a $(jp tj/a '{.metadata.uid}')" ] || fail "PodGroup a: $got"
[ "$(jp workload/a '{.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount} {.metadata.ownerReferences[0].kind}')" = "2 TrainingJob" ] ||
  fail "Workload a: $(kubectl -n "$NS" get workload a -o yaml 2>&1)"
[ "$(jp pod/a-node-1 '{.spec.schedulingGroup.podGroupName}')" = a ] || fail "a's pods do not name PodGroup a"
gang_is() { [ "$(jp "tj/$1" '{.status.conditions[?(@.type=="GangScheduled")].status}')" = "$2" ]; }
eventually 30 "a: GangScheduled True" gang_is a True
pass "a gang job gets its Workload and PodGroup (minCount = minReplicas, owned by the job) and runs whole"

pool_job_yaml b 2 8 "$gang" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "b: GangScheduled False" gang_is b False
eventually 10 "GangWaiting event" has_event b GangWaiting
bound=$(kubectl -n "$NS" get pods -l kubedist.io/job-name=b -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | grep -c . || true)
[ "$bound" -eq 0 ] || fail "b holds $bound node(s) while it cannot run whole"
[ "$(jp tj/b '{.status.phase}')" = Pending ] || fail "b phase: $(jp tj/b '{.status.phase}')"
jp tj/b '{.status.conditions[?(@.type=="GangScheduled")].message}' | grep -q "the gang of 2 pods (minReplicas) waits" ||
  fail "b's condition message: $(jp tj/b '{.status.conditions[?(@.type=="GangScheduled")]}')"
pass "a second gang job that fits only partly holds no node and says why (GangScheduled False, Event GangWaiting)"

kubectl -n "$NS" delete tj a --wait=false >/dev/null
eventually 60 "b's 2 pods running once a is gone" all_running b 2
eventually 30 "b: GangScheduled True" gang_is b True
eventually 10 "GangScheduled event" has_event b GangScheduled
eventually 60 "a's PodGroup and Workload garbage-collected" bash -c "! kubectl -n $NS get podgroup/a && ! kubectl -n $NS get workload/a"
pass "with the first job gone the waiting gang runs whole, and the first job's Workload and PodGroup go with it"

pool_job_yaml c 2 8 "$gang
  minReplicas: 1" | kubectl -n "$NS" apply -f - >/dev/null
[ "$(jp podgroup/c '{.spec.schedulingPolicy.gang.minCount}' 2>/dev/null || true)" != 2 ] || fail "c's gang must be minReplicas=1"
eventually 60 "c runs on 1 node after giving up the other" bash -c "[ \"\$(kubectl -n $NS get tj/c -o jsonpath='{.status.phase} {.status.replicas} {.status.elastic.targetReplicas}')\" = 'Running 1 1' ]"
[ "$(jp podgroup/c '{.spec.schedulingPolicy.gang.minCount}')" = 1 ] || fail "c's PodGroup minCount"
pass "an elastic gang job (minCount = minReplicas 1) still shrinks to what fits"
