// Keyring: the namespace keys the operator has seen (RendezvousKeys), kept in one Secret of the operator's own
// namespace as well as in memory, so that an operator started after a key was deleted or replaced can still give
// the jobs whose running pods derived their secret from it that secret (decide/rendezvous.h). The chart creates the
// Secret empty and grants get and patch on it by name only; job authors, who may touch the namespaces' Secrets,
// cannot reach it. One write per new key, none per job.
//
// Entries: "<namespace>.<fingerprint>" -> the key in hex (a replaced key may be any bytes), at most
// RendezvousKeys::kKeptPerNamespace per namespace: keys memory no longer keeps are removed in the same write.
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "common/result.h"
#include "kube/api.h"
#include "trainingjob/act/rendezvous_keys.h"

namespace kubedist::trainingjob {

class Keyring {
 public:
  // secret: "NAMESPACE/NAME" (check_keyring_secret says whether it is one).
  Keyring(kube::Api& api, const std::string& secret);

  // Loads the Secret's keys into keys once (the first call that reaches the API server; the operator calls it from
  // its reconciles, which run only while it leads). A Secret that does not exist is said once in the log and
  // leaves the keys in memory only, as without a keyring; any other failure is returned, and tried again next call.
  Result<void> load_into(RendezvousKeys& keys);
  // Stores every key of ns in `all` (RendezvousKeys::all: fingerprint -> key) that the Secret does not hold, and
  // removes the ones of ns it holds that `all` no longer has, in one merge patch; nothing when they agree. A failure
  // is returned: the caller renders no pod for a key that is not stored yet.
  Result<void> keep(const std::string& ns, const std::map<std::string, std::string>& all);

 private:
  std::string path() const;

  kube::Api& api_;
  std::string ns_, name_;
  std::mutex mu_;
  bool loaded_ = false;
  bool missing_ = false;                               // the Secret does not exist: memory only
  std::map<std::string, std::set<std::string>> kept_;  // namespace -> fingerprints the Secret holds
};

// "" when secret names a Secret as NAMESPACE/NAME (two DNS labels, the name a DNS subdomain), else why not.
std::string check_keyring_secret(const std::string& secret);

// The Secret's entry name for a key of ns, and back (false for an entry that is no key of this format).
std::string keyring_entry(const std::string& ns, const std::string& fingerprint);
bool parse_keyring_entry(const std::string& entry, std::string* ns, std::string* fingerprint);

}  // namespace kubedist::trainingjob
