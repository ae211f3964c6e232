#include "trainingjob/act/rendezvous_keys.h"

#include <algorithm>

#include "rendezvous/rdzv_auth.h"

namespace kubedist::trainingjob {

void RendezvousKeys::remember(std::vector<Kept>& kept, const std::string& fingerprint, const std::string& key) {
  auto it = std::find_if(kept.begin(), kept.end(), [&](const Kept& k) { return k.fingerprint == fingerprint; });
  if (it != kept.end()) {
    if (it + 1 == kept.end()) return;
    kept.erase(it);  // seen again: newest
  }
  kept.push_back({fingerprint, key});
  size_t bytes = 0;
  for (const auto& k : kept) bytes += k.key.size();
  while (kept.size() > 1 && (kept.size() > kKeptPerNamespace || bytes > kKeptBytesPerNamespace)) {
    bytes -= kept.front().key.size();
    kept.erase(kept.begin());
  }
}

std::string RendezvousKeys::seen(const std::string& ns, const std::string& key) {
  {
    // Every pass of every job in the namespace sees the same key: its fingerprint (an HMAC) is taken once.
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = keys_.find(ns); it != keys_.end() && !it->second.empty() && it->second.back().key == key) {
      to_create_.erase(ns);
      return it->second.back().fingerprint;
    }
  }
  const std::string fingerprint = rendezvous::rdzv_key_fingerprint(key);
  std::lock_guard<std::mutex> lock(mu_);
  remember(keys_[ns], fingerprint, key);
  to_create_.erase(ns);  // the namespace has a key now: a later deletion gets a fresh one
  return fingerprint;
}

Result<std::string> RendezvousKeys::to_create(const std::string& ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = to_create_.find(ns); it != to_create_.end()) return it->second;
  auto key = rendezvous::new_rdzv_secret();
  if (!key) return key.error();
  to_create_[ns] = *key;
  remember(keys_[ns], rendezvous::rdzv_key_fingerprint(*key), *key);
  return *key;
}

std::optional<std::string> RendezvousKeys::find(const std::string& ns, const std::string& fingerprint) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(ns);
  if (it == keys_.end()) return std::nullopt;
  for (const auto& k : it->second) {
    if (k.fingerprint == fingerprint) return k.key;
  }
  return std::nullopt;
}

std::map<std::string, std::string> RendezvousKeys::all(const std::string& ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> out;
  if (auto it = keys_.find(ns); it != keys_.end()) {
    for (const auto& k : it->second) out[k.fingerprint] = k.key;
  }
  return out;
}

}  // namespace kubedist::trainingjob
