// NodeSignals: which namespaces' pods were ended by SIGBUS on each node lately, across every job the operator runs.
// One job's pods ending by a signal is no proof against their node (the program may raise it: bad_nodes.h); the same
// bus error in the pods of another namespace, whose author is someone else, is (a memory or device fault).
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>

#include "common/time.h"

namespace kubedist::trainingjob {

class NodeSignals {
 public:
  // How long a bus error on a node counts; at most this many nodes (those whose bus errors are all past the window
  // make room for a new one) and namespaces per node are kept.
  static constexpr UnixSeconds kWindowS = 3600;
  static constexpr size_t kMaxNodes = 4096;
  static constexpr size_t kMaxNamespacesPerNode = 16;

  // A pod of namespace ns was ended by SIGBUS on node at `at`.
  void record(const std::string& node, const std::string& ns, UnixSeconds at);
  // The namespaces whose pods were ended by SIGBUS on node within kWindowS before now.
  std::set<std::string> namespaces(const std::string& node, UnixSeconds now) const;

 private:
  void forget_before(UnixSeconds cutoff);  // the nodes whose every bus error is older than cutoff (mu_ held)

  mutable std::mutex mu_;  // guards seen_ (reconcile workers record and read it concurrently)
  std::map<std::string, std::map<std::string, UnixSeconds>> seen_;  // node -> namespace -> latest bus error
};

}  // namespace kubedist::trainingjob
