#!/usr/bin/env bash
# A job gets a headless service a rendezvous secret and wrapped pods.
# usage: a_job_gets_a_headless_service_a_rendezvous_secret_and_wrapped_pods.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR set, as ctest does)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario example

start_operator
kubectl -n "$NS" apply -f "$KUBEDIST_SOURCE_DIR/crd/examples/trainingjob.yaml" >/dev/null
eventually 30 "2 pods exist" pods_are resnet 2
uid=$(jp tj/resnet '{.metadata.uid}')
[ "$(jp svc/resnet '{.spec.clusterIP} {.spec.publishNotReadyAddresses} {.spec.selector.kubedist\.io/job-name}')" = "None true resnet" ] ||
  fail "service: $(kubectl -n "$NS" get svc resnet -o yaml)"
[ "$(jp svc/resnet '{.metadata.ownerReferences[0].uid}')" = "$uid" ] || fail "service not owned by the job"
pass "headless Service resnet selects the job's pods and is owned by it"
[ "$(jp secret/kubedist-rendezvous '{.metadata.labels.kubedist\.io/rendezvous-secret} {.metadata.ownerReferences}')" = "namespace " ] ||
  fail "Secret kubedist-rendezvous: $(kubectl -n "$NS" get secret kubedist-rendezvous -o yaml)"
[ "$(jp secret/kubedist-rendezvous '{.data.secret}' | base64 -d | wc -c)" = 64 ] || fail "the namespace secret is not 32 bytes in hex"
pass "the namespace's rendezvous Secret kubedist-rendezvous exists, owned by no job"
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
    KUBEDIST_RDZV_SECRET_FILE=/kubedist/bin/rdzv-secret; do
    grep -qxF "$want" <<<"$env" || fail "$p lacks env $want; has: $env"
  done
  cmd=$(jp "pod/$p" '{.spec.containers[0].command}')
  [ "$cmd" = '["/kubedist/bin/kubedist-launcher","--no-python","--","python","train.py","--epochs","10"]' ] ||
    fail "$p command: $cmd"
  [ "$(jp "pod/$p" '{.spec.initContainers[0].image} {.spec.volumes[0].name}')" = "ghcr.io/kubedist/launcher:0.1.0 kubedist-bin" ] ||
    fail "$p launcher init container/volume"
  got=$(jp "pod/$p" '{.spec.volumes[?(@.name=="kubedist-rendezvous")].secret.secretName} {.spec.initContainers[0].volumeMounts[?(@.name=="kubedist-rendezvous")].mountPath} {.spec.containers[0].volumeMounts[?(@.name=="kubedist-rendezvous")].mountPath}')
  [ "$got" = "kubedist-rendezvous /kubedist/rendezvous " ] || fail "$p rendezvous Secret mount (init container only): $got"
  got=$(jp "pod/$p" '{.spec.initContainers[0].command}')
  [ "$got" = "[\"/kubedist-launcher\",\"--install\",\"/kubedist/bin\",\"--rdzv-secret-from\",\"/kubedist/rendezvous/secret\",\"--rdzv-job\",\"$uid\"]" ] ||
    fail "$p init container command: $got"
done
pass "pods resnet-node-0/1: hostname, subdomain, labels, owner refs, env, wrapped command, launcher init container deriving the job's secret from the namespace's"
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
