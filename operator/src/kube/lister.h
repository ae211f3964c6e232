// Lister<T>: what a reconciler reads of one kind's local cache: an object by key, the objects of an index value.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace kubedist::kube {

// An Informer is one; unit tests give a reconciler one they fill themselves.
template <typename T>
class Lister {
 public:
  virtual ~Lister() = default;
  virtual std::optional<T> get(const std::string& key) const = 0;
  virtual std::vector<T> by_index(const std::string& index) const = 0;
  virtual std::vector<std::string> keys() const = 0;
  // Whether the cache holds a complete list yet (an informer's first list has come).
  virtual bool synced() const = 0;
};

}  // namespace kubedist::kube
