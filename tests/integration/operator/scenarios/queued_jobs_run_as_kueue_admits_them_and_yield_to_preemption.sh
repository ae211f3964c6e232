#!/usr/bin/env bash
# Kueue (sigs.k8s.io/kueue, the real manager, cluster.sh kueue-up) admits TrainingJobs labelled
# kueue.x-k8s.io/queue-name. A ClusterQueue of 8 GPUs on one ResourceFlavor whose node labels and tolerations are
# the only way onto the test's two 8-GPU nodes; three jobs of 2 nodes x 2 GPUs (4 GPUs each, low priority): two run,
# the third waits suspended with no pod; finishing one admits the third; a high-priority job preempts a running
# one, which is suspended cleanly (pods deleted, quota given back) and resumes once the high-priority job is done.
# usage: queued_jobs_run_as_kueue_admits_them_and_yield_to_preemption.sh OPERATOR_BINARY   (KUBECONFIG,
# KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario kueue

cluster=$(basename "$(dirname "$KUBECONFIG")")
cluster_sh="$KUBEDIST_SOURCE_DIR/deploy/local/cluster.sh"
# Kueue's manager and this test's cluster-scoped objects go when the test ends, whatever its outcome.
kueue_cleanup() {
  kubectl delete clusterqueue "$NS" --wait=false >/dev/null 2>&1 || true
  kubectl delete resourceflavor "$NS" workloadpriorityclass "$NS-low" "$NS-high" --wait=false >/dev/null 2>&1 || true
  "$cluster_sh" kueue-down "$cluster" >/dev/null 2>&1 || true
}
trap 'rc=$?; kueue_cleanup; (exit $rc); cleanup' EXIT
"$cluster_sh" kueue-up "$cluster" >/dev/null

add_test_node "$NS-a"
add_test_node "$NS-b"
kubectl apply -f - >/dev/null <<YAML
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: $NS}
spec:
  nodeLabels: {kubedist.io/test-pool: $NS}
  tolerations: [{key: kubedist.io/test-pool, operator: Equal, value: $NS, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: $NS}
spec:
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS}}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: $NS
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: team, namespace: $NS}
spec: {clusterQueue: $NS}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: $NS-low}
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: $NS-high}
value: 1000
YAML
start_operator --launcher-poll-interval=0
grep -q 'jobs queued for Kueue wait' "$OP_LOG" && fail "the operator does not see Kueue: $(grep 'Kueue' "$OP_LOG")"

# queued_job NAME PRIORITY: 2 nodes x 2 GPUs, no node selector or toleration of its own (the flavor brings them).
queued_job() {
  cat <<YAML
apiVersion: kubedist.io/v1alpha1
kind: TrainingJob
metadata:
  name: $1
  labels: {kueue.x-k8s.io/queue-name: team, kueue.x-k8s.io/priority-class: $NS-$2}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: trainer
        image: busybox
        command: [python, train.py]
        resources: {limits: {nvidia.com/gpu: 2}}
YAML
}
admitted_is() { [ "$(jp "tj/$1" '{.status.conditions[?(@.type=="Admitted")].status}')" = "$2" ]; }
waits_without_pods() { phase_is "$1" Suspended && admitted_is "$1" False && pods_are "$1" 0; }

# A queue that does not exist: the job waits without pods and says for which queue.
queued_job nowhere low | sed 's/queue-name: team/queue-name: nope/' | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "a job queued in a LocalQueue that does not exist waits without pods" waits_without_pods nowhere
jp tj/nowhere '{.status.conditions[?(@.type=="Admitted")].message}' | grep -q "waiting for admission by LocalQueue nope" ||
  fail "nowhere's Admitted condition: $(jp tj/nowhere '{.status.conditions[?(@.type=="Admitted")]}')"
kubectl -n "$NS" delete tj nowhere >/dev/null
pass "a job queued in a LocalQueue that does not exist waits suspended, without pods, naming the queue"

queued_job a low | kubectl -n "$NS" apply -f - >/dev/null
eventually 60 "a's 2 pods running" all_running a 2
queued_job b low | kubectl -n "$NS" apply -f - >/dev/null
eventually 60 "b's 2 pods running" all_running b 2
queued_job c low | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "c waits: Suspended, Admitted False, no pods" waits_without_pods c
admitted_is a True && admitted_is b True || fail "a and b must be Admitted"
got=$(kubectl -n "$NS" get workloads.kueue.x-k8s.io a -o jsonpath='{.spec.queueName} {.spec.podSets[0].name} {.spec.podSets[0].count} {.spec.podSets[0].template.spec.containers[0].resources.requests.nvidia\.com/gpu} {.spec.priority} {.metadata.ownerReferences[0].kind}')
[ "$got" = "team nodes 2 2 10 TrainingJob" ] || fail "Kueue Workload a: $got"
[ "$(jp pod/a-node-1 '{.spec.nodeSelector.kubedist\.io/test-pool} {.spec.tolerations[?(@.key=="kubedist.io/test-pool")].value}')" = "$NS $NS" ] ||
  fail "a's pods lack the flavor's node selector and toleration: $(jp pod/a-node-1 '{.spec}')"
jp tj/c '{.status.conditions[?(@.type=="Admitted")].message}' | grep -q "waiting for admission by LocalQueue team" ||
  fail "c's Admitted condition: $(jp tj/c '{.status.conditions[?(@.type=="Admitted")]}')"
eventually 10 "Queued event on c" has_event c Queued
metric() { curl -fsS "http://127.0.0.1:$OP_PORT/metrics" | grep -F "$1{job_name=\"$2\",job_namespace=\"$NS\"}" | awk '{print $2}'; }
[ "$(metric kubedist_job_waiting_for_admission c)" = 1 ] || fail "kubedist_job_waiting_for_admission of c: '$(metric kubedist_job_waiting_for_admission c)'"
[ "$(metric kubedist_job_waiting_for_admission a)" = 0 ] || fail "kubedist_job_waiting_for_admission of a: '$(metric kubedist_job_waiting_for_admission a)'"
pass "8 GPUs of quota: two 4-GPU jobs run on the flavor's nodes (its labels and tolerations), the third waits suspended without pods"

for p in a-node-0 a-node-1; do finish_pod "$p" 0; done
eventually 30 "a Succeeded" phase_is a Succeeded
wl_finished() { [ "$(kubectl -n "$NS" get workloads.kueue.x-k8s.io "$1" -o jsonpath='{.status.conditions[?(@.type=="Finished")].status}')" = True ]; }
eventually 30 "a's Kueue Workload Finished" wl_finished a
eventually 60 "c admitted and running" all_running c 2
admitted_is c True || fail "c: Admitted $(jp tj/c '{.status.conditions[?(@.type=="Admitted")]}')"
eventually 10 "Admitted event on c" has_event c Admitted
[ "$(metric kubedist_job_waiting_for_admission c)" = 0 ] || fail "c still counted as waiting"
waited=$(metric kubedist_job_last_admission_wait_seconds c)
[ -n "$waited" ] && [ "${waited%.*}" -ge 1 ] || fail "kubedist_job_last_admission_wait_seconds of c: '$waited' (c waited for a to finish)"
# Read whole, then searched: grep -q would close the pipe at its match, and curl, still writing, fail the pipeline.
scrape=$(curl -fsS "http://127.0.0.1:$OP_PORT/metrics")
grep -q "^kubedist_admission_wait_seconds_count{job_namespace=\"$NS\"} [1-9]" <<<"$scrape" ||
  fail "kubedist_admission_wait_seconds counts no admission"
pass "a finished job's Workload is marked Finished, its quota admits the waiting job (metrics: waiting 1 then 0, time to admission ${waited}s)"

queued_job d high | kubectl -n "$NS" apply -f - >/dev/null
victim=
evicted_one() {
  local j
  for j in b c; do
    if waits_without_pods "$j" && [ "$(jp "tj/$j" '{.status.conditions[?(@.type=="Admitted")].reason}')" = Preempted ]; then
      victim=$j  # eventually runs this in the test's shell
      return 0
    fi
  done
  return 1
}
eventually 60 "b or c preempted: Suspended, Admitted False (Preempted), pods deleted" evicted_one
eventually 60 "d running" all_running d 2
survivor=b
[ "$victim" = b ] && survivor=c
all_running "$survivor" 2 || fail "$survivor should keep running"
eventually 10 "Evicted event on $victim" has_event "$victim" Evicted
requeued() { [ "$(kubectl -n "$NS" get workloads.kueue.x-k8s.io "$victim" -o jsonpath='{.status.conditions[?(@.type=="QuotaReserved")].status} {.status.conditions[?(@.type=="Requeued")].status}')" = "False True" ]; }
eventually 30 "$victim's Workload gave its quota back and is requeued" requeued
pass "a high-priority job preempts $victim: its pods are deleted, its quota given back, it waits requeued"

for p in d-node-0 d-node-1; do finish_pod "$p" 0; done
eventually 30 "d Succeeded" phase_is d Succeeded
eventually 60 "$victim resumes" all_running "$victim" 2
admitted_is "$victim" True || fail "$victim not Admitted again"
pass "once the high-priority job is done, the preempted job is admitted again and resumes"
