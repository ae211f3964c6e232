// RendezvousKeys: every namespace key (Secret kubedist-rendezvous) the operator has seen, kept in memory so that a
// job whose running pods derive from a key that was deleted or replaced can be given its secret (decide/rendezvous.h).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace kubedist::trainingjob {

class RendezvousKeys {
 public:
  // The keys kept per namespace, newest last: one a deletion or replacement, so a few cover any job still running.
  static constexpr size_t kKeptPerNamespace = 8;
  // And at most this many bytes of keys per namespace (the newest always kept), so that no namespace, whatever keys
  // it is given (up to contract::kMaxSecretBytes each), takes more of the operator's memory or of the keyring
  // Secret (1 MiB for every namespace, keys in hex) than 8 keys of the operator's own making would.
  static constexpr size_t kKeptBytesPerNamespace = 16 * 1024;

  // Remembers key as a key of namespace ns; returns its fingerprint (rendezvous::rdzv_key_fingerprint).
  std::string seen(const std::string& ns, const std::string& key);
  // The key the operator will create for ns when it has none: made once and kept until it is seen in the
  // namespace (or another key is), so that concurrent passes of the namespace's jobs create the same one and
  // render their pods for it. Remembered as seen, since pods are rendered for it before the cache shows it.
  Result<std::string> to_create(const std::string& ns);
  // The key of ns with this fingerprint, if the operator has seen it.
  std::optional<std::string> find(const std::string& ns, const std::string& fingerprint) const;
  // Fingerprint -> key, for every key of ns the operator has seen.
  std::map<std::string, std::string> all(const std::string& ns) const;

 private:
  struct Kept {
    std::string fingerprint;
    std::string key;
  };
  void remember(std::vector<Kept>& kept, const std::string& fingerprint, const std::string& key);

  mutable std::mutex mu_;
  std::map<std::string, std::vector<Kept>> keys_;     // namespace -> keys seen, oldest first
  std::map<std::string, std::string> to_create_;      // namespace -> the key the operator will create there
};

}  // namespace kubedist::trainingjob
