#!/usr/bin/env bash
# Three 8-GPU nodes. Gang jobs of 2 x 8 GPUs: a takes two nodes; b finds one free and waits whole (no pod bound,
# condition GangScheduled False, Event GangWaiting) instead of holding that node; with a gone, b runs whole.
# An elastic gang job (minReplicas 1) still shrinks to the one node left.
# Whatever the cluster serves: the operator uses the newest Workload API version it knows (1.37's
# scheduling.k8s.io/v1beta1, 1.36's v1alpha2) and says which; where it serves none of them, a gang job fails
# saying why. KUBEDIST_EXPECT_GANG_API names what the cluster should get (ctest sets it from the cluster's release:
# a group/version, or none); the last line says "gang API: ..." for the version matrix's table.
# usage: a_gang_job_is_placed_whole_or_waits_whole.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario gang
expect=${KUBEDIST_EXPECT_GANG_API:?KUBEDIST_EXPECT_GANG_API must name the Workload API version the cluster serves, or none}

add_test_node "$NS-a"
add_test_node "$NS-b"
add_test_node "$NS-c"
start_operator --watch-nodes --unschedulable-grace=3s --launcher-poll-interval=0
gang="  scheduling: {gang: true}"

if [ "$expect" = none ]; then
  served=$(kubectl api-versions | grep '^scheduling.k8s.io/' | tr '\n' ' ')
  ! grep -qE 'scheduling.k8s.io/(v1beta1|v1alpha2) ' <<<"$served " ||
    fail "expected no Workload API the operator knows, the cluster serves: $served"
  eventually 10 "the operator says gang scheduling is off" grep -q 'gang scheduling is off' "$OP_LOG"
  pool_job_yaml a 2 8 "$gang" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "gang job Failed" phase_is a Failed
  [ "$(jp tj/a '{.status.conditions[?(@.type=="Failed")].reason}')" = GangSchedulingUnavailable ] ||
    fail "gang job without the Workload API: $(jp tj/a '{.status.conditions}')"
  message=$(jp tj/a '{.status.conditions[?(@.type=="Failed")].message}')
  grep -q "Workload API" <<<"$message" || fail "the failure does not say what is missing: $message"
  [ "$(pod_count a)" -eq 0 ] || fail "a gang job the operator cannot gang-schedule must create no pod"
  pass "without a Workload API the operator knows ($served), gang scheduling is off and a gang job fails saying why"
  echo "gang API: none"
  exit 0
fi

version=${expect#scheduling.k8s.io/}
eventually 10 "the operator says it gang-schedules through $expect" grep -q "gang scheduling through $expect" "$OP_LOG"
pass "the operator found $expect by discovery and says so"
# The PodGroup names its Workload's template differently in each version.
case $version in
  v1alpha2) template_ref='{.spec.podGroupTemplateRef.workload.workloadName}' ;;
  *) template_ref='{.spec.workloadRef.workloadName}' ;;
esac
podgroup="podgroups.$version.scheduling.k8s.io"
workload="workloads.$version.scheduling.k8s.io"
pool_job_yaml a 2 8 "$gang" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "a's 2 pods running" all_running a 2
got=$(jp "$podgroup/a" "{.spec.schedulingPolicy.gang.minCount} $template_ref {.metadata.ownerReferences[0].uid}")
[ "$got" = "2 a $(jp tj/a '{.metadata.uid}')" ] || fail "PodGroup a: $got"
[ "$(jp "$workload/a" '{.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount} {.metadata.ownerReferences[0].kind}')" = "2 TrainingJob" ] ||
  fail "Workload a: $(kubectl -n "$NS" get "$workload" a -o yaml 2>&1)"
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
message=$(jp tj/b '{.status.conditions[?(@.type=="GangScheduled")].message}')
grep -q "the gang of 2 pods (minReplicas) waits" <<<"$message" || fail "b's condition message: $message"
pass "a second gang job that fits only partly holds no node and says why (GangScheduled False, Event GangWaiting)"

kubectl -n "$NS" delete tj a --wait=false >/dev/null
eventually 60 "b's 2 pods running once a is gone" all_running b 2
eventually 30 "b: GangScheduled True" gang_is b True
eventually 10 "GangScheduled event" has_event b GangScheduled
eventually 60 "a's PodGroup and Workload garbage-collected" bash -c "! kubectl -n $NS get $podgroup/a && ! kubectl -n $NS get $workload/a"
pass "with the first job gone the waiting gang runs whole, and the first job's Workload and PodGroup go with it"

pool_job_yaml c 2 8 "$gang
  minReplicas: 1" | kubectl -n "$NS" apply -f - >/dev/null
[ "$(jp "$podgroup/c" '{.spec.schedulingPolicy.gang.minCount}' 2>/dev/null || true)" != 2 ] || fail "c's gang must be minReplicas=1"
eventually 60 "c runs on 1 node after giving up the other" bash -c "[ \"\$(kubectl -n $NS get tj/c -o jsonpath='{.status.phase} {.status.replicas} {.status.elastic.targetReplicas}')\" = 'Running 1 1' ]"
[ "$(jp "$podgroup/c" '{.spec.schedulingPolicy.gang.minCount}')" = 1 ] || fail "c's PodGroup minCount"
pass "an elastic gang job (minCount = minReplicas 1) still shrinks to what fits"
echo "gang API: $expect"
