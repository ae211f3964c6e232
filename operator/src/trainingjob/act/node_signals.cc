#include "trainingjob/act/node_signals.h"

#include <algorithm>

namespace kubedist::trainingjob {

void NodeSignals::record(const std::string& node, const std::string& ns, UnixSeconds at) {
  if (node.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = seen_.find(node);
  if (it == seen_.end()) {
    if (seen_.size() >= kMaxNodes) forget_before(at - kWindowS);
    if (seen_.size() >= kMaxNodes) return;
    it = seen_.emplace(node, std::map<std::string, UnixSeconds>()).first;
  }
  auto& by_ns = it->second;
  if (auto known = by_ns.find(ns); known != by_ns.end()) {
    known->second = std::max(known->second, at);
    return;
  }
  if (by_ns.size() >= kMaxNamespacesPerNode) {  // the oldest makes room: a fresh one is the better evidence
    by_ns.erase(std::min_element(by_ns.begin(), by_ns.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; }));
  }
  by_ns.emplace(ns, at);
}

void NodeSignals::forget_before(UnixSeconds cutoff) {
  std::erase_if(seen_, [cutoff](const auto& node) {
    return std::all_of(node.second.begin(), node.second.end(), [cutoff](const auto& ns) { return ns.second < cutoff; });
  });
}

std::set<std::string> NodeSignals::namespaces(const std::string& node, UnixSeconds now) const {
  std::set<std::string> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = seen_.find(node);
  if (it == seen_.end()) return out;
  for (const auto& [ns, at] : it->second) {
    if (now - at <= kWindowS) out.insert(ns);
  }
  return out;
}

}  // namespace kubedist::trainingjob
