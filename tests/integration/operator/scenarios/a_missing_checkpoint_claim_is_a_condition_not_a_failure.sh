#!/usr/bin/env bash
# spec.checkpoint naming a PersistentVolumeClaim that does not exist (issue 37, bad input): the real scheduler leaves
# the job's pods Pending (`persistentvolumeclaim "..." not found`), and the job says so in condition
# CheckpointVolumeMissing (True, ClaimNotFound) with one Warning Event, never Failed and never a create loop; once
# the claim exists the condition turns False (ClaimFound). The pods mount the claim at the path the job says, with
# the helper's settings in their environment.
# usage: a_missing_checkpoint_claim_is_a_condition_not_a_failure.sh OPERATOR_BINARY   (KUBECONFIG, KUBEDIST_SOURCE_DIR)
set -euo pipefail
OPERATOR=$1
. "$KUBEDIST_SOURCE_DIR/tests/lib/kube.sh"
. "$KUBEDIST_SOURCE_DIR/tests/integration/operator/lib.sh"
begin_scenario ckptclaim

start_operator
job_yaml j 2 "  checkpoint: {claimName: ckpt, everySteps: 50}" | kubectl -n "$NS" apply -f - >/dev/null
eventually 30 "2 pods" pods_are j 2
[ "$(jp pod/j-node-1 '{.spec.volumes[?(@.name=="kubedist-checkpoint")].persistentVolumeClaim.claimName}')" = ckpt ] ||
  fail "pod j-node-1 does not mount claim ckpt"
[ "$(jp pod/j-node-1 '{.spec.containers[0].volumeMounts[?(@.name=="kubedist-checkpoint")].mountPath}')" = /checkpoints ] ||
  fail "the trainer does not mount it at /checkpoints"
[ "$(jp pod/j-node-1 '{.spec.containers[0].env[?(@.name=="KUBEDIST_CHECKPOINT_EVERY_STEPS")].value}')" = 50 ] ||
  fail "the trainer lacks KUBEDIST_CHECKPOINT_EVERY_STEPS=50"
pass "the pods mount claim ckpt at /checkpoints, with KUBEDIST_CHECKPOINT_DIR and the schedule in their env"

condition() { jp tj/j '{.status.conditions[?(@.type=="CheckpointVolumeMissing")].status}/{.status.conditions[?(@.type=="CheckpointVolumeMissing")].reason}'; }
condition_is() { [ "$(condition)" = "$1" ]; }
eventually 60 "condition CheckpointVolumeMissing True/ClaimNotFound" condition_is True/ClaimNotFound
eventually 10 "Event CheckpointVolumeMissing" has_event j CheckpointVolumeMissing
message=$(jp tj/j '{.status.conditions[?(@.type=="CheckpointVolumeMissing")].message}')
[[ $message == *'PersistentVolumeClaim ckpt (spec.checkpoint.claimName) does not exist in namespace '"$NS"* ]] ||
  fail "the condition's message: $message"
uids=$(kubectl -n "$NS" get pods -l kubedist.io/job-name=j -o jsonpath='{.items[*].metadata.uid}')
sleep 3
[ "$(kubectl -n "$NS" get pods -l kubedist.io/job-name=j -o jsonpath='{.items[*].metadata.uid}')" = "$uids" ] ||
  fail "the pods were made again while they waited for the claim"
[ "$(jp tj/j '{.status.phase}')" != Failed ] || fail "the job failed for a missing claim"
pass "a missing claim: condition CheckpointVolumeMissing (ClaimNotFound) and its Event; the job waits, not failed"

kubectl -n "$NS" apply -f - >/dev/null <<'YAML'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: ckpt}
spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Gi}}}
YAML
eventually 60 "condition CheckpointVolumeMissing False/ClaimFound" condition_is False/ClaimFound
pass "once the claim exists the condition turns False (ClaimFound)"
