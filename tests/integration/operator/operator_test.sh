#!/usr/bin/env bash
# kubedist-operator against the real control plane (kwok nodes). Usage: operator_test.sh OPERATOR_BINARY SCENARIO
set -euo pipefail
OPERATOR=$1
SCENARIO=$2
LAUNCHER=${3:-}  # kubedist-launcher, for the scenario that runs real launchers
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"

apply_crd
new_namespace "op-$SCENARIO"
trap cleanup EXIT

case "$SCENARIO" in

example)
  start_operator
  kubectl -n "$NS" apply -f "$KUBEDIST_SOURCE_DIR/crd/examples/trainingjob.yaml" >/dev/null
  eventually 30 "2 pods exist" pods_are resnet 2
  uid=$(jp tj/resnet '{.metadata.uid}')
  [ "$(jp svc/resnet '{.spec.clusterIP} {.spec.publishNotReadyAddresses} {.spec.selector.kubedist\.io/job-name}')" = "None true resnet" ] ||
    fail "service: $(kubectl -n "$NS" get svc resnet -o yaml)"
  [ "$(jp svc/resnet '{.metadata.ownerReferences[0].uid}')" = "$uid" ] || fail "service not owned by the job"
  pass "headless Service resnet selects the job's pods and is owned by it"
  [ "$(jp secret/resnet-rdzv '{.metadata.ownerReferences[0].uid} {.metadata.labels.kubedist\.io/job-name}')" = "$uid resnet" ] ||
    fail "Secret resnet-rdzv: $(kubectl -n "$NS" get secret resnet-rdzv -o yaml)"
  pass "rendezvous Secret resnet-rdzv is owned by the job"
  for i in 0 1; do
    p=resnet-node-$i
    got=$(jp "pod/$p" '{.spec.hostname} {.spec.subdomain} {.spec.restartPolicy} {.metadata.labels.kubedist\.io/node-rank} {.metadata.labels.kubedist\.io/job-name}')
    [ "$got" = "$p resnet Never $i resnet" ] || fail "$p DNS fields/labels: $got"
    got=$(jp "pod/$p" '{.metadata.ownerReferences[0].uid} {.metadata.ownerReferences[0].controller} {.metadata.ownerReferences[0].blockOwnerDeletion}')
    [ "$got" = "$uid true true" ] || fail "$p owner reference: $got"
    env=$(jp "pod/$p" '{range .spec.containers[0].env[*]}{.name}={.value}{"\n"}{end}')
    for want in "MASTER_ADDR=resnet-node-0.resnet.$NS.svc" MASTER_PORT=29500 "NODE_RANK=$i" NNODES=1:4 \
      NPROC_PER_NODE=auto KUBEDIST_JOB=resnet "PET_MASTER_ADDR=resnet-node-0.resnet.$NS.svc" PET_MASTER_PORT=29500 \
      "PET_NODE_RANK=$i" PET_NNODES=1:4 PET_NPROC_PER_NODE=auto PET_MAX_RESTARTS=3 \
      KUBEDIST_RDZV_SECRET_FILE=/kubedist/rdzv/secret; do
      grep -qxF "$want" <<<"$env" || fail "$p lacks env $want; has: $env"
    done
    cmd=$(jp "pod/$p" '{.spec.containers[0].command}')
    [ "$cmd" = '["/kubedist/bin/kubedist-launcher","--no-python","--","python","train.py","--epochs","10"]' ] ||
      fail "$p command: $cmd"
    [ "$(jp "pod/$p" '{.spec.initContainers[0].image} {.spec.volumes[0].name}')" = "ghcr.io/kubedist/launcher:0.1.0 kubedist-bin" ] ||
      fail "$p launcher init container/volume"
    got=$(jp "pod/$p" '{.spec.volumes[?(@.name=="kubedist-rdzv")].secret.secretName} {.spec.containers[0].volumeMounts[?(@.name=="kubedist-rdzv")].mountPath} {.spec.containers[0].volumeMounts[?(@.name=="kubedist-rdzv")].readOnly}')
    [ "$got" = "resnet-rdzv /kubedist/rdzv true" ] || fail "$p rendezvous Secret mount: $got"
  done
  pass "pods resnet-node-0/1: hostname, subdomain, labels, owner refs, env, wrapped command, launcher init container, rendezvous Secret mount"
  eventually 30 "job Running" phase_is resnet Running
  got=$(jp tj/resnet '{.status.replicas} {.status.readyReplicas} {.status.worldSize} {.status.selector} {.status.observedGeneration}')
  [ "$got" = "2 2 16 kubedist.io/job-name=resnet 1" ] || fail "status: $got"
  eventually 10 "Created event" has_event resnet Created
  pass "status Running: replicas, readyReplicas, worldSize, selector, observedGeneration = $got; Created event"
  curl -sf "http://127.0.0.1:$OP_PORT/healthz" >/dev/null || fail "/healthz"
  curl -sf "http://127.0.0.1:$OP_PORT/readyz" >/dev/null || fail "/readyz"
  pass "/healthz and /readyz answer 200"
  start=$SECONDS
  stop_operator TERM || fail "operator exited non-zero after SIGTERM"
  [ $((SECONDS - start)) -le 10 ] || fail "SIGTERM took $((SECONDS - start))s"
  grep -q 'shutting down' "$OP_LOG" || fail "no graceful shutdown logged"
  pass "SIGTERM: graceful exit 0 in $((SECONDS - start))s"
  ;;

recreate)
  start_operator
  job_yaml j 3 | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "3 pods running" all_running j 3
  old=$(jp pod/j-node-1 '{.metadata.uid}')
  kubectl -n "$NS" delete pod j-node-1 --wait=false >/dev/null
  recreated() { [ "$(jp pod/j-node-1 '{.metadata.uid}')" != "$old" ] && all_running j 3; }
  eventually 30 "j-node-1 recreated" recreated
  pass "a deleted pod is recreated under the same name"
  eventually 10 "CreatedPods event" has_event j CreatedPods
  eventually 10 "job Running again" phase_is j Running
  ;;

succeed)
  start_operator
  job_yaml j 3 | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "3 pods running" all_running j 3
  finish_pod j-node-1 0
  sleep_check() { phase_is j Running; }
  eventually 10 "still Running while only some nodes finished" sleep_check
  finish_pod j-node-0 0
  finish_pod j-node-2 0
  eventually 30 "job Succeeded" phase_is j Succeeded
  [ -n "$(jp tj/j '{.status.completionTime}')" ] || fail "no completionTime"
  [ "$(jp tj/j '{.status.conditions[?(@.type=="Succeeded")].status}')" = True ] || fail "no Succeeded condition"
  eventually 10 "AllNodesSucceeded event" has_event j AllNodesSucceeded
  pass "all trainer containers exiting 0 make the job Succeeded, with completionTime and an Event"
  [ "$(pod_count j)" -eq 3 ] || fail "cleanPodPolicy Running must keep finished pods"
  ;;

fail)
  start_operator
  job_yaml j 2 "  backoffLimit: 1" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  old=$(jp pod/j-node-0 '{.metadata.uid}')
  finish_pod j-node-0 137
  restarted() { [ "$(jp tj/j '{.status.restarts}')" = 1 ] && [ "$(jp pod/j-node-0 '{.metadata.uid}')" != "$old" ]; }
  eventually 30 "restart counted and node 0 recreated" restarted
  eventually 10 "PodFailed event" has_event j PodFailed
  eventually 30 "job Running again" phase_is j Running
  pass "a failed pod is recreated and counted (restarts=1)"
  finish_pod j-node-1 1
  eventually 30 "job Failed" phase_is j Failed
  [ "$(jp tj/j '{.status.conditions[?(@.type=="Failed")].reason}')" = BackoffLimitExceeded ] || fail "reason"
  [ "$(jp tj/j '{.status.restarts}')" = 1 ] || fail "restarts changed after the limit"
  eventually 10 "BackoffLimitExceeded event" has_event j BackoffLimitExceeded
  eventually 30 "running pod cleaned up" pods_are j 1
  pass "the second failure exceeds backoffLimit 1: Failed, BackoffLimitExceeded, running pods cleaned up"
  ;;

exitcode)
  start_operator
  job_yaml j 2 "  restartPolicy: ExitCode" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  summary="worker rank 2 (local rank 0) on j-node-1 exited with code 2: ValueError: bad batch"
  finish_pod j-node-1 2 "$summary"
  eventually 30 "job Failed" phase_is j Failed
  [ "$(jp tj/j '{.status.conditions[?(@.type=="Failed")].reason}')" = PodFailed ] || fail "reason"
  [ "$(jp tj/j '{.status.restarts}')" = 0 ] || fail "a permanent failure was retried"
  pass "restartPolicy ExitCode: exit code 2 is permanent"
  got=$(jp tj/j '{.status.lastFailure.pod} {.status.lastFailure.exitCode} {.status.lastFailure.reason}: {.status.lastFailure.message}')
  [ "$got" = "j-node-1 2 Error: $summary" ] || fail "status.lastFailure: $got"
  [ -n "$(jp tj/j '{.status.lastFailure.node}')" ] && [ -n "$(jp tj/j '{.status.lastFailure.time}')" ] ||
    fail "status.lastFailure without node or time"
  events=$(kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=PodFailed -o jsonpath='{.items[*].message}')
  [[ $events == *"pod j-node-1 failed (exit code 2, reason Error): $summary"* ]] || fail "PodFailed event: $events"
  described=$(kubectl -n "$NS" describe tj j)
  grep -q "Last Failure:" <<<"$described" && grep -q "ValueError: bad batch" <<<"$described" ||
    fail "kubectl describe tj shows no last failure: $described"
  pass "the launcher's summary reaches status.lastFailure, the PodFailed Event and kubectl describe tj"
  ;;

elastic)
  # Two 8-GPU nodes for a job of 3 nodes x 8 GPUs (min 2): one pod cannot be placed (which one is the scheduler's
  # choice), the job is given 2 nodes after the grace, so j-node-2 goes (ranks stay dense) and j-node-0 and
  # j-node-1 run; a third node appears and the job grows back to 3.
  add_test_node "$NS-a"
  add_test_node "$NS-b"
  start_operator --watch-nodes --unschedulable-grace=3s --launcher-poll-interval=0
  pool_job_yaml j 3 8 "  minReplicas: 2
  maxReplicas: 3" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" bash -c "[ \$(kubectl -n $NS get pods -l kubedist.io/job-name=j --field-selector=status.phase=Running --no-headers | wc -l) -eq 2 ]"
  unschedulable() {
    kubectl -n "$NS" get pods -l kubedist.io/job-name=j \
      -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="PodScheduled")].reason}{"\n"}{end}' | grep -qx Unschedulable
  }
  eventually 30 "a pod of j Unschedulable" unschedulable
  eventually 30 "ScaledDown event" has_event j ScaledDown
  ranks_0_1() { [ "$(kubectl -n "$NS" get pods -l kubedist.io/job-name=j -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | sort | tr '\n' ' ')" = "j-node-0 j-node-1 " ]; }
  eventually 30 "j-node-2 given up, j-node-0 and j-node-1 kept" ranks_0_1
  eventually 30 "Running on 2 nodes" bash -c "[ \"\$(kubectl -n $NS get tj/j -o jsonpath='{.status.phase} {.status.replicas} {.status.elastic.targetReplicas} {.status.elastic.reason}')\" = 'Running 2 2 Unschedulable' ]"
  [ "$(jp tj/j '{.spec.replicas}')" = 3 ] || fail "spec.replicas must stay the user's"
  kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=ScaledDown -o jsonpath='{.items[0].message}' |
    grep -qE "j-node-[0-9] could not be scheduled for 3s" || fail "ScaledDown message"
  metric_is() { local out; out=$(curl -sf "http://127.0.0.1:$OP_PORT/metrics") || return 1; grep -qxF "$1" <<<"$out"; }
  L="job_name=\"j\",job_namespace=\"$NS\""
  eventually 10 "target metric 2" metric_is "kubedist_job_target_nodes{$L} 2"
  eventually 10 "one scale-down decision counted" metric_is "kubedist_scale_decisions_total{direction=\"down\",$L} 1"
  pass "elastic: a pod unschedulable past --unschedulable-grace is given up; the job runs on minReplicas=2 (Event ScaledDown, metrics)"
  ! has_event j ScalingUp || fail "grew back before any capacity returned"
  add_test_node "$NS-c"
  eventually 30 "ScalingUp event" has_event j ScalingUp
  eventually 30 "3 pods running" all_running j 3
  eventually 30 "ScaledUp event" has_event j ScaledUp
  eventually 30 "Running on 3, elastic status cleared" bash -c "[ \"\$(kubectl -n $NS get tj/j -o jsonpath='{.status.phase} {.status.replicas} {.status.elastic}')\" = 'Running 3 ' ]"
  reasons_are j "node_lost=0 pod_failure=0 scale=0 worker_crash=0 restarts=0" || fail "restarts: $(reasons j)"
  eventually 10 "target metric 3" metric_is "kubedist_job_target_nodes{$L} 3"
  eventually 10 "one scale-up decision counted" metric_is "kubedist_scale_decisions_total{direction=\"up\",$L} 1"
  pass "elastic: with a node back the job grows to spec.replicas=3 again (Events ScalingUp, ScaledUp, metrics)"
  ;;

gang)
  # Three 8-GPU nodes. Gang jobs of 2 x 8 GPUs: a takes two nodes; b finds one free and waits whole (no pod bound,
  # condition GangScheduled False, Event GangWaiting) instead of holding that node; with a gone, b runs whole.
  # An elastic gang job (minReplicas 1) still shrinks to the one node left.
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
  ;;

nodelost)
  # j-node-1's node is deleted: the pod is force-deleted and recreated on the spare node, node 0 untouched.
  add_test_node "$NS-a" 8
  add_test_node "$NS-b" 8
  start_operator --watch-nodes --node-lost-grace=3s --launcher-poll-interval=0
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
  reasons_are j "node_lost=1 pod_failure=0 scale=0 worker_crash=0 restarts=1" || fail "restarts: $(reasons j)"
  pass "a pod whose node was deleted is recreated (node_lost=1, backoffLimit 0 unspent, node 0 kept)"
  # An eviction (the kubelet fails the pod with reason Evicted) is a node loss too, not a pod failure.
  old=$(pod_uid j-node-0)
  node1=$(pod_uid j-node-1)
  kubectl -n "$NS" patch pod j-node-0 --subresource=status --type=merge -p '{"status":{"phase":"Failed","reason":"Evicted","message":"The node was low on resource: memory."}}' >/dev/null
  evicted_back() { [ "$(pod_uid j-node-0)" != "$old" ] && all_running j 2; }
  eventually 30 "evicted node 0 recreated" evicted_back
  eventually 30 "job Running again" phase_is j Running
  [ "$(pod_uid j-node-1)" = "$node1" ] || fail "j-node-1 was recreated for node 0's eviction"
  reasons_are j "node_lost=2 pod_failure=0 scale=0 worker_crash=0 restarts=2" || fail "restarts: $(reasons j)"
  kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=PodLost -o jsonpath='{.items[*].message}' |
    grep -qF "reason Evicted" || fail "PodLost event for the eviction"
  pass "an evicted pod is recreated as node_lost; backoffLimit 0 is not spent, the job never Failed"
  # A node that stops reporting (kwok no longer plays its kubelet; its Ready condition turns False) loses its pod
  # once it has been NotReady for --node-lost-grace.
  victim=$(jp pod/j-node-1 '{.spec.nodeName}')
  old=$(pod_uid j-node-1)
  add_test_node "$NS-d" 8
  kubectl annotate node "$victim" kwok.x-k8s.io/node- >/dev/null
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  kubectl patch node "$victim" --subresource=status --type=strategic -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",
    \"status\":\"False\",\"reason\":\"KubeletStopped\",\"message\":\"test\",\"lastTransitionTime\":\"$now\",
    \"lastHeartbeatTime\":\"$now\"}]}}" >/dev/null
  moved_off() { [ "$(pod_uid j-node-1)" != "$old" ] && [ "$(jp pod/j-node-1 '{.spec.nodeName}')" = "$NS-d" ] && all_running j 2; }
  eventually 60 "j-node-1 recreated off the NotReady node" moved_off
  eventually 30 "job Running again" phase_is j Running
  reasons_are j "node_lost=3 pod_failure=0 scale=0 worker_crash=0 restarts=3" || fail "restarts: $(reasons j)"
  waited=$(kubectl -n "$NS" get events --field-selector involvedObject.name=j,reason=PodLost -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' |
    sed -n "s/.*node $victim has been NotReady for \([0-9]*\)s.*/\1/p")
  [ -n "$waited" ] && [ "$waited" -ge 3 ] || fail "PodLost for the NotReady node: waited '$waited' s (want >= 3)"
  pass "a pod on a node NotReady for --node-lost-grace=3s (here ${waited}s) is force-deleted and recreated (node_lost=3)"
  ;;

scalerange)
  start_operator --launcher-poll-interval=0
  job_yaml j 2 "  minReplicas: 2
  maxReplicas: 3" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  kubectl -n "$NS" scale tj/j --replicas=3 >/dev/null || fail "scale to 3 refused"
  eventually 30 "3 pods running" all_running j 3
  [ "$(kubectl -n "$NS" get tj/j -o jsonpath='{.spec.replicas}')" = 3 ] || fail "spec.replicas"
  pass "kubectl scale tj/j --replicas=3 (within [2, 3]) works through the scale subresource"
  for n in 4 1; do
    if out=$(kubectl -n "$NS" scale tj/j --replicas=$n 2>&1); then fail "--replicas=$n accepted: $out"; fi
    grep -qE "must be less than or equal to (maxReplicas|replicas)" <<<"$out" || fail "--replicas=$n: unclear refusal: $out"
  done
  [ "$(kubectl -n "$NS" get tj/j -o jsonpath='{.spec.replicas}')" = 3 ] || fail "a refused scale changed spec.replicas"
  got=$(kubectl get --raw "/apis/kubedist.io/v1alpha1/namespaces/$NS/trainingjobs/j/scale")
  grep -qF '"selector":"kubedist.io/job-name=j"' <<<"$got" || fail "scale subresource selector: $got"
  pass "kubectl scale outside [minReplicas, maxReplicas] is refused by the API server (CEL); the scale subresource reports the selector"
  ;;

launcher)
  # Real kubedist-launcher processes play the job's launchers. kwok gives pods addresses in 127.100.0.0/16, which
  # are this machine's loopback, so node 0's rendezvous service listens on j-node-0's podIP:masterPort+1 and the
  # operator's poller reaches it exactly as it would reach a pod.
  [ -x "$LAUNCHER" ] || fail "usage: operator_test.sh OPERATOR launcher LAUNCHER"
  port=$(/usr/bin/python3 -c 'import socket
for _ in range(50):
    a, b = socket.socket(), socket.socket()
    try:
        a.bind(("127.0.0.1", 0)); p = a.getsockname()[1]; b.bind(("127.0.0.1", p + 1)); print(p); break
    except OSError: pass
    finally: a.close(); b.close()')
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
  # The pods mount the job's rendezvous Secret, so node 0's launcher answers signed lines only, and the poller signs
  # with the Secret: the launchers here read it as the pods' mount would give it to them.
  [ "$(jp secret/j-rdzv '{.metadata.ownerReferences[0].uid}')" = "$(jp tj/j '{.metadata.uid}')" ] ||
    fail "Secret j-rdzv is not owned by the job"
  [ "$(jp pod/j-node-0 '{.spec.volumes[?(@.name=="kubedist-rdzv")].secret.secretName}')" = "j-rdzv" ] ||
    fail "pod j-node-0 does not mount Secret j-rdzv"
  kubectl -n "$NS" get secret j-rdzv -o jsonpath='{.data.secret}' | base64 -d >"$work/secret"
  [ "$(wc -c <"$work/secret")" = 64 ] || fail "Secret j-rdzv does not hold 32 bytes in hex"
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
  ;;

scale)
  start_operator
  job_yaml j 2 "  minReplicas: 1
  maxReplicas: 4" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  kubectl -n "$NS" scale tj/j --replicas=4 >/dev/null
  eventually 30 "4 pods running" all_running j 4
  eventually 30 "status.replicas 4 and Running" bash -c "[ \"\$(kubectl -n $NS get tj/j -o jsonpath='{.status.replicas} {.status.phase}')\" = '4 Running' ]"
  eventually 10 "ScaledUp event" has_event j ScaledUp
  pass "scale up to 4"
  kubectl -n "$NS" scale tj/j --replicas=1 >/dev/null
  eventually 30 "1 pod left" pods_are j 1
  [ "$(jp pod/j-node-0 '{.metadata.name}')" = j-node-0 ] || fail "node 0 must stay"
  eventually 30 "status.replicas 1" bash -c "[ \"\$(kubectl -n $NS get tj/j -o jsonpath='{.status.replicas} {.status.phase}')\" = '1 Running' ]"
  eventually 10 "ScaledDown event" has_event j ScaledDown
  pass "scale down to 1 keeps node 0"
  ;;

suspend)
  start_operator
  job_yaml j 3 | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "3 pods running" all_running j 3
  kubectl -n "$NS" patch tj j --type=merge -p '{"spec":{"suspend":true}}' >/dev/null
  eventually 30 "pods deleted" pods_are j 0
  eventually 30 "Suspended" phase_is j Suspended
  pass "suspend deletes the pods"
  kubectl -n "$NS" patch tj j --type=merge -p '{"spec":{"suspend":false}}' >/dev/null
  eventually 30 "3 pods running again" all_running j 3
  eventually 30 "Running again" phase_is j Running
  [ "$(jp tj/j '{.status.conditions[?(@.type=="Suspended")].status}')" = False ] || fail "Suspended condition"
  [ "$(jp tj/j '{.status.restarts}')" = 0 ] || fail "resume counted restarts"
  eventually 10 "Resumed event" has_event j Resumed
  pass "resume recreates them cleanly"
  ;;

gc)
  start_operator
  job_yaml j 3 | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "3 pods running" all_running j 3
  kubectl -n "$NS" delete tj j --wait=false >/dev/null
  gone() { [ "$(pod_count j)" -eq 0 ] && ! kubectl -n "$NS" get svc j >/dev/null 2>&1; }
  eventually 60 "pods and service garbage-collected" gone
  pass "deleting the TrainingJob garbage-collects its pods and Service"
  ;;

restart)
  # Six 8-node jobs with one worker: killing the operator as soon as the first pod appears lands mid-way.
  for j in a b c d e f; do job_yaml "$j" 8 | kubectl -n "$NS" apply -f - >/dev/null; done
  start_operator --workers 1
  eventually 30 "first pod created" bash -c "[ \$(kubectl -n $NS get pods --no-headers 2>/dev/null | wc -l) -ge 1 ]"
  stop_operator KILL || true
  pass "operator killed with $(kubectl -n "$NS" get pods --no-headers | wc -l) of 48 pods created"
  start_operator
  for j in a b c d e f; do
    eventually 60 "$j: 8 pods running" all_running "$j" 8
    eventually 30 "$j: Running" phase_is "$j" Running
    names=$(kubectl -n "$NS" get pods -l "kubedist.io/job-name=$j" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
    [ "$names" = "$(printf "$j-node-%s\n" 0 1 2 3 4 5 6 7 | sort)" ] || fail "$j pods: $names"
    [ "$(jp "tj/$j" '{.status.replicas} {.status.readyReplicas} {.status.restarts}')" = "8 8 0" ] || fail "$j status"
  done
  [ "$(kubectl -n "$NS" get pods --no-headers | wc -l)" -eq 48 ] || fail "not exactly 48 pods"
  pass "after a kill and restart: exactly 8 pods per job, status replicas=8 ready=8 restarts=0"
  ;;

apiserver)
  # Pods bound to a node up front: kube-scheduler can crash on pods it schedules right after an API server
  # restart ("scheduler cache is corrupted"), which is not the operator's to test and would stall later tests.
  bound="      nodeName: gpu-node-0"
  start_operator
  job_yaml j 2 "" "$bound" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  cluster=$(basename "$(dirname "$KUBECONFIG")")
  "$KUBEDIST_SOURCE_DIR/deploy/local/cluster.sh" restart-apiserver "$cluster" >/dev/null 2>&1
  eventually 60 "API server back" kubectl get --raw /readyz
  kill -0 "$OP_PID" || fail "operator died with the API server"
  # Only the operator's own work is checked: whether kube-scheduler survives the restart is not ours to test.
  old=$(jp pod/j-node-1 '{.metadata.uid}')
  kubectl -n "$NS" delete pod j-node-1 --wait=false >/dev/null
  recreated() { uid=$(jp pod/j-node-1 '{.metadata.uid}') && [ -n "$uid" ] && [ "$uid" != "$old" ]; }
  eventually 60 "j-node-1 recreated after the API server restart" recreated
  job_yaml k 3 "" "$bound" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "a new job's pods are created" pods_are k 3
  eventually 30 "a new job's status is written" bash -c "[ \"\$(kubectl -n $NS get tj/k -o jsonpath='{.status.replicas}')\" = 3 ]"
  grep -q 'watch error 410\|dropped' "$OP_LOG" || fail "the operator never noticed the restart"
  pass "the operator recovered from an API server restart by itself (watches resumed or relisted)"
  ;;

badspec)
  start_operator
  # The schema cannot require a command; the operator must refuse to run the image's entrypoint.
  kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: kubedist.io/v1alpha1
kind: TrainingJob
metadata: {name: nocmd}
spec:
  replicas: 2
  template: {spec: {containers: [{name: trainer, image: busybox}]}}
YAML
  eventually 30 "nocmd Failed" phase_is nocmd Failed
  got=$(jp tj/nocmd '{.status.conditions[?(@.type=="Failed")].reason}: {.status.conditions[?(@.type=="Failed")].message}')
  [[ $got == "InvalidSpec: spec.template.spec.containers[0] (trainer): command is required"* ]] || fail "condition: $got"
  eventually 10 "InvalidSpec event" has_event nocmd InvalidSpec
  [ "$(pod_count nocmd)" -eq 0 ] || fail "pods were created for an invalid job"
  pass "no command: Failed condition '$got' and an Event, no pods"
  # A template the API server itself rejects when creating a pod.
  job_yaml badpod 1 | sed 's/image: busybox/image: busybox, resources: {limits: {cpu: "1"}, requests: {cpu: "2"}}/' |
    kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "badpod Failed" phase_is badpod Failed
  got=$(jp tj/badpod '{.status.conditions[?(@.type=="Failed")].message}')
  [[ $got == *"the API server rejected pod badpod-node-0"* ]] || fail "condition: $got"
  pass "a pod the API server rejects: Failed condition '$got'"
  before=$(grep -c 'nocmd\|badpod' "$OP_LOG" || true)
  sleep 3  # measuring that nothing happens needs a quiet interval, not a condition
  after=$(grep -c 'nocmd\|badpod' "$OP_LOG" || true)
  [ "$after" -eq "$before" ] || fail "invalid jobs keep being worked on: $before -> $after log lines"
  [ "$(kubectl -n "$NS" get events --field-selector involvedObject.name=nocmd,reason=InvalidSpec -o jsonpath='{.items[*].count}')" = 1 ] ||
    fail "InvalidSpec reported more than once"
  kill -0 "$OP_PID" || fail "operator crashed"
  pass "no hot loop: invalid jobs are reported once and left alone"

  # Templates only the API server refuses as pods (two containers named trainer, an env entry without a name):
  # Failed once with the server's own message, and nothing retried until the spec changes.
  kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: kubedist.io/v1alpha1
kind: TrainingJob
metadata: {name: dup}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: trainer, image: busybox, command: [python, a.py]}
      - {name: trainer, image: busybox, command: [sleep, "10"]}
---
apiVersion: kubedist.io/v1alpha1
kind: TrainingJob
metadata: {name: noname}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - {name: trainer, image: busybox, command: [python, a.py], env: [{value: x}]}
YAML
  eventually 30 "dup Failed" phase_is dup Failed
  eventually 30 "noname Failed" phase_is noname Failed
  got=$(jp tj/dup '{.status.conditions[?(@.type=="Failed")].message}')
  [[ $got == *'the API server rejected pod dup-node-0: '*'spec.containers[1].name: Duplicate value: "trainer"'* ]] ||
    fail "dup condition: $got"
  got=$(jp tj/noname '{.status.conditions[?(@.type=="Failed")].message}')
  [[ $got == *'spec.containers[0].env[0].name: Required value'* ]] || fail "noname condition: $got"
  pass "templates the API server refuses as pods: Failed with its message ($got)"
  reconciles() { curl -sf "http://127.0.0.1:$OP_PORT/metrics" | awk '/^kubedist_reconcile_duration_seconds_count/ {n += $2} END {print n + 0}'; }
  event_rows() { kubectl -n "$NS" get events --field-selector "involvedObject.name=$1" --no-headers 2>/dev/null | wc -l; }
  rows_dup=$(event_rows dup) rows_noname=$(event_rows noname)
  status_dup=$(jp tj/dup '{.status}')
  before=$(reconciles)
  for i in 1 2 3; do kubectl -n "$NS" annotate tj dup noname --overwrite "poke=$i" >/dev/null; done
  grew() { [ "$(reconciles)" -ge $((before + 2)) ]; }
  eventually 30 "the operator reconciles the poked jobs again" grew
  [ "$(event_rows dup)" -eq "$rows_dup" ] && [ "$(event_rows noname)" -eq "$rows_noname" ] ||
    fail "a rejected job was retried: events $rows_dup -> $(event_rows dup), $rows_noname -> $(event_rows noname)"
  [ "$(jp tj/dup '{.status}')" = "$status_dup" ] || fail "dup's status changed without a spec change"
  ! has_event dup SpecFixed || fail "SpecFixed without a spec change"
  [ "$(pod_count dup)" -eq 0 ] || fail "pods of a rejected template exist"
  pass "reconciled again without a spec change: no retry, no new Event, the status unchanged"
  kubectl -n "$NS" patch tj noname --type=json \
    -p '[{"op":"add","path":"/spec/template/spec/containers/0/env/0/name","value":"X"}]' >/dev/null
  eventually 30 "noname runs once its spec is fixed" all_running noname 2
  has_event noname SpecFixed || fail "no SpecFixed Event"
  pass "fixing the spec (a new generation) starts the job"

  # Several containers and none named trainer: the schema refuses it, naming the rule.
  out=$(job_yaml twomain 1 | sed 's/containers: \[{name: trainer,/containers: [{name: side, image: busybox, command: [sleep, "1"]}, {name: main,/' |
    kubectl -n "$NS" apply -f - 2>&1) && fail "a template with two containers and no trainer was accepted"
  [[ $out == *"the one that runs under the launcher must be named trainer"* ]] || fail "refusal: $out"
  pass "two containers, none named trainer: refused by the schema ($out)"
  job_yaml solo 1 | sed 's/name: trainer,/name: main,/' | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "a single container named main runs" all_running solo 1
  cmd=$(jp pod/solo-node-0 '{.spec.containers[0].command[0]}')
  [ "$cmd" = /kubedist/bin/kubedist-launcher ] || fail "the only container was not wrapped: $cmd"
  pass "a pod's only container runs under the launcher whatever its name"
  ;;

leader)
  le="--leader-elect --leader-election-namespace=$NS --leader-election-id=op --leader-election-lease-seconds=4"
  start_operator $le
  eventually 30 "first replica leads" grep -q 'leading as' "$OP_LOG"
  OP2_LOG=$(mktemp /tmp/kubedist-operator-XXXXXX.log)
  "$OPERATOR" --namespace "$NS" --probe-address 127.0.0.1:0 $le >>"$OP2_LOG" 2>&1 &
  OP2_PID=$!
  eventually 30 "second replica waits" grep -q 'waiting to lead' "$OP2_LOG"
  port2=$(grep -o 'probes listening on port [0-9]*' "$OP2_LOG" | grep -o '[0-9]*$')
  grep -q standby <<<"$(curl -sf "http://127.0.0.1:$port2/readyz")" || fail "standby replica not ready"
  job_yaml j 2 | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  ! grep -q 'leading as' "$OP2_LOG" || fail "two leaders"
  ! grep -q 'component=event' "$OP2_LOG" || fail "the standby acted"
  pass "one leader acts, the standby waits (and is ready)"
  stop_operator KILL || true
  eventually 30 "standby takes over" grep -q 'leading as' "$OP2_LOG"
  old=$(jp pod/j-node-1 '{.metadata.uid}')
  kubectl -n "$NS" delete pod j-node-1 --wait=false >/dev/null
  recreated() { [ "$(jp pod/j-node-1 '{.metadata.uid}')" != "$old" ] && all_running j 2; }
  eventually 30 "the new leader recreates j-node-1" recreated
  pass "after the leader is killed the standby takes the lease and reconciles"
  kill -TERM "$OP2_PID"
  wait "$OP2_PID" || fail "new leader exited non-zero on SIGTERM"
  OP2_PID=
  [ -z "$(jp lease/op '{.spec.holderIdentity}')" ] || fail "lease not released on SIGTERM"
  pass "a clean shutdown releases the lease"
  ;;

deadline)
  start_operator
  job_yaml j 2 "  activeDeadlineSeconds: 3
  cleanPodPolicy: All" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  eventually 30 "job Failed after its deadline" phase_is j Failed
  [ "$(jp tj/j '{.status.conditions[?(@.type=="Failed")].reason}')" = DeadlineExceeded ] || fail "reason"
  eventually 30 "cleanPodPolicy All removes every pod" pods_are j 0
  eventually 10 "DeadlineExceeded event" has_event j DeadlineExceeded
  pass "activeDeadlineSeconds=3 fails the job (DeadlineExceeded) and cleanPodPolicy All deletes its pods"
  ;;

ttl)
  start_operator
  job_yaml j 2 "  ttlSecondsAfterFinished: 2
  cleanPodPolicy: None" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  finish_pod j-node-0 0
  finish_pod j-node-1 0
  eventually 30 "job Succeeded" phase_is j Succeeded
  [ "$(pod_count j)" -eq 2 ] || fail "cleanPodPolicy None must keep the pods"
  job_gone() { ! kubectl -n "$NS" get tj j >/dev/null 2>&1; }
  eventually 30 "job deleted after ttlSecondsAfterFinished" job_gone
  eventually 60 "its pods garbage-collected" pods_are j 0
  pass "ttlSecondsAfterFinished=2 deletes the finished job, and its pods with it"
  ;;

token)
  # Bearer tokens from a kubeconfig tokenFile, re-read when the file changes (service account tokens rotate).
  # Only what the operator needs (the Helm chart's rules): proves it asks for nothing more.
  kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: operator}
rules:
- {apiGroups: [kubedist.io], resources: [trainingjobs], verbs: [get, list, watch, delete]}
- {apiGroups: [kubedist.io], resources: [trainingjobs/status], verbs: [get, update, patch]}
- {apiGroups: [""], resources: [pods, services], verbs: [get, list, watch, create, delete]}
- {apiGroups: [""], resources: [secrets], verbs: [get, list, watch, create, delete]}
- {apiGroups: [""], resources: [events], verbs: [create, patch]}
YAML
  for sa in sa1 sa2; do
    kubectl -n "$NS" create serviceaccount "$sa" >/dev/null
    kubectl -n "$NS" create rolebinding "$sa" --role=operator --serviceaccount="$NS:$sa" >/dev/null
  done
  dir=$(mktemp -d /tmp/kubedist-token-XXXXXX)
  trap 'rm -rf "$dir"; cleanup' EXIT
  server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$dir/ca.crt"
  kubectl -n "$NS" create token sa1 --duration=1h >"$dir/token"
  cat >"$dir/kubeconfig" <<YAML
apiVersion: v1
kind: Config
current-context: sa
clusters: [{name: c, cluster: {server: "$server", certificate-authority: ca.crt}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: sa, context: {cluster: c, user: u, namespace: $NS}}]
YAML
  start_operator --kubeconfig "$dir/kubeconfig"
  job_yaml j 1 | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "pod running" all_running j 1
  eventually 30 "job Running" phase_is j Running
  eventually 10 "Created event" has_event j Created
  ! grep -q 'Forbidden\|forbidden' "$OP_LOG" || fail "the operator needed a permission the Role lacks"
  pass "token from a tokenFile and a CA file: the operator works as service account sa1 with least privilege"
  # This Role grants no podgroups: the operator starts without gang scheduling, and a job asking for it says why.
  grep -q 'may not list podgroups (HTTP 403): gang scheduling is off' "$OP_LOG" || fail "no word that gang scheduling is off"
  job_yaml g 1 "  scheduling: {gang: true}" | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "gang job Failed" phase_is g Failed
  [ "$(jp tj/g '{.status.conditions[?(@.type=="Failed")].reason}')" = GangSchedulingUnavailable ] ||
    fail "gang job without the Workload API: $(jp tj/g '{.status.conditions}')"
  [ "$(pod_count g)" -eq 0 ] || fail "a gang job the operator cannot gang-schedule must create no pod"
  pass "an operator that may not list PodGroups starts without gang scheduling; a gang job fails saying why (GangSchedulingUnavailable)"
  token1=$(cat "$dir/token")
  kubectl -n "$NS" create token sa2 --duration=1h >"$dir/token.new"
  mv "$dir/token.new" "$dir/token"
  old_token_dead() { ! kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$dir/ca.crt" \
    --token="$token1" -n "$NS" get pods; }
  kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$dir/ca.crt" --token="$token1" \
    -n "$NS" get pods >/dev/null || fail "sa1's token should still work before the account is deleted"
  kubectl -n "$NS" delete serviceaccount sa1 >/dev/null
  eventually 30 "sa1's tokens are refused" old_token_dead
  old=$(jp pod/j-node-0 '{.metadata.uid}')
  kubectl -n "$NS" delete pod j-node-0 --wait=false >/dev/null
  recreated() { [ "$(jp pod/j-node-0 '{.metadata.uid}')" != "$old" ] && all_running j 1; }
  eventually 30 "pod recreated with the rotated token" recreated
  pass "after the token file rotates (and the old account is gone) the operator keeps working"
  ;;

metrics)
  start_operator
  scrape() { curl -sf "http://127.0.0.1:$OP_PORT/metrics"; }
  has_line() { local out; out=$(scrape) || return 1; grep -qxF "$1" <<<"$out"; }
  has_prefix() { local out; out=$(scrape) || return 1; grep -qF "$1" <<<"$out"; }
  no_job_series() { local out; out=$(scrape) || return 1; ! grep -qF "job_name=\"j\"" <<<"$out"; }
  L="job_name=\"j\",job_namespace=\"$NS\""
  eventually 10 "namespace counters at 0 before any job" has_line "kubedist_jobs_failed_total{job_namespace=\"$NS\"} 0"
  job_yaml j 2 | kubectl -n "$NS" apply -f - >/dev/null
  eventually 30 "2 pods running" all_running j 2
  eventually 30 "job Running" phase_is j Running
  eventually 10 "jobs_created_total 1" has_line "kubedist_jobs_created_total{job_namespace=\"$NS\"} 1"
  eventually 10 "phase gauge Running" has_line "kubedist_job_phase{$L,phase=\"Running\"} 1"
  has_line "kubedist_job_phase{$L,phase=\"Pending\"} 0" || fail "other phases must read 0"
  ws=$(jp tj/j '{.status.worldSize}')
  eventually 10 "nodes and world size gauges" has_line "kubedist_job_nodes{$L} 2"
  has_line "kubedist_job_world_size{$L} $ws" || fail "world size gauge is not status.worldSize=$ws: $(scrape | grep world_size)"
  has_line "kubedist_restarts_total{$L,reason=\"pod_failure\"} 0" || fail "restarts must exist at 0 before the first one"
  pass "created counted, phase/nodes/world size gauges, restarts at 0 for every reason"
  old=$(jp pod/j-node-1 '{.metadata.uid}')
  finish_pod j-node-1 137
  eventually 30 "restarts_total{reason=pod_failure} 1" has_line "kubedist_restarts_total{$L,reason=\"pod_failure\"} 1"
  has_line "kubedist_restarts_total{$L,reason=\"worker_crash\"} 0" || fail "a pod failure counted as another reason"
  recreated() { [ "$(jp pod/j-node-1 '{.metadata.uid}')" != "$old" ] && phase_is j Running; }
  eventually 30 "pod recreated and job Running again" recreated
  eventually 10 "recovery time gauge" has_prefix "kubedist_job_last_recovery_seconds{$L} "
  eventually 10 "phase gauge Running again" has_line "kubedist_job_phase{$L,phase=\"Running\"} 1"
  pass "a failed pod: restarts_total{reason=pod_failure} 1, last recovery seconds set"
  out=$(scrape)
  for want in 'verb="create",code="201"' 'verb="patch",code="200"' 'verb="delete",code="200"' 'verb="list",code="200"' \
    'verb="watch",code="200"'; do
    code=${want#*code=}; verb=${want%%,*}
    grep -qE "^kubedist_api_requests_total\{code=$code,$verb\} [1-9]" <<<"$out" || fail "no API requests $want: $(grep api_requests <<<"$out")"
  done
  grep -qE '^kubedist_reconcile_duration_seconds_count [1-9]' <<<"$out" || fail "no reconcile durations observed"
  grep -qE '^kubedist_workqueue_depth [0-9]' <<<"$out" || fail "no work queue depth"
  grep -qE '^kubedist_workqueue_retries_total [0-9]' <<<"$out" || fail "no work queue retries counter"
  pass "API requests by verb and code, reconcile histogram, work queue depth and retries"
  stop_operator TERM || fail "operator exited non-zero"
  start_operator
  eventually 30 "a restarted operator shows the job" has_line "kubedist_job_phase{$L,phase=\"Running\"} 1"
  has_line "kubedist_restarts_total{$L,reason=\"pod_failure\"} 0" || fail "a restarted operator re-counted restarts in status"
  has_line "kubedist_jobs_created_total{job_namespace=\"$NS\"} 0" || fail "a restarted operator re-counted the job's creation"
  pass "a restarted operator takes the status as its baseline: no restart or creation counted twice"
  kubectl -n "$NS" delete tj j --wait=false >/dev/null
  eventually 30 "per-job series gone after delete" no_job_series
  has_line "kubedist_jobs_created_total{job_namespace=\"$NS\"} 0" || fail "namespace counters must stay"
  pass "deleting the job removes its per-job series"
  ;;

*)
  fail "unknown scenario $SCENARIO"
  ;;
esac
