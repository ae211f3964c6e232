// Which rendezvous Secret a job's new pods mount, and what the job does when the namespace key its running pods
// derive from was deleted or replaced.
#pragma once

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

// Sets plan.job_rdzv_secret, job_rdzv_secret_fingerprint and create_namespace_secret. A job whose running pods derive their secret from a
// namespace key (annotation kubedist.io/rendezvous-key) that is no longer the one new pods would get keeps the old
// one: when the operator has seen that key (obs.job_secrets), Secret J-rdzv is created holding the job's secret
// derived from it, status.rendezvousSecret names it, new pods mount it, and one Warning RendezvousSecretChanged
// says so. When it has not (the key changed while no operator ran), the Event says that new pods cannot join
// (status.rendezvousKeyLost keeps it to one).
void decide_rendezvous_secret(DecideState& s);

// Before the plan's new pods of a job on its own J-rdzv (status.rendezvousSecret): J-rdzv is created again from the
// key it was derived from (status.rendezvousSecretKey, the keys the operator keeps), in case someone deleted it, so
// that they do not wait for a Secret that is gone. Nothing for a J-rdzv whose key the operator does not know.
void keep_job_rdzv_secret(DecideState& s);

// Whether the job's pods mount J-rdzv, its own Secret, rather than deriving from the namespace key: the status
// names J-rdzv, or a live pod mounts it.
bool on_own_rdzv_secret(const DecideState& s);

// A namespace key the operator refuses (obs.namespace_key_refused) holds the job's new pods that would derive from
// it: true with the condition PodsRefused (reason RendezvousKeyInvalid) and a Warning Event of the same reason when
// it is new; the Secret's change requeues the job. False otherwise, clearing that condition once the key is taken.
bool hold_for_refused_key(DecideState& s);

}  // namespace kubedist::trainingjob
