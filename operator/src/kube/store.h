// Store<T>: the local cache of one kind, by "namespace/name" with one secondary index, changed only by watch
// events (apply) and whole relists (replace). No I/O: it is tested with synthetic events.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "kube/watch_event.h"

namespace kubedist::kube {

// Store<T> keeps T, a compact projection of each object (made by `project`), so that equal projections of a
// changed object (a field we do not look at changed) cause no work.
template <typename T>
class Store {
 public:
  using Project = std::function<T(const nlohmann::json&)>;
  using IndexOf = std::function<std::string(const T&)>;  // null: no index (by_index finds nothing)

  // An object that was added, changed or deleted, and its index value (for a delete, the last known state's).
  struct Change {
    std::string key;
    std::string index;
    bool operator==(const Change&) const = default;
  };
  struct Applied {
    AfterEvent next = AfterEvent::kContinue;
    std::optional<Change> change;  // none: the cache did not change
  };

  Store(Project project, IndexOf index_of) : project_(std::move(project)), index_of_(std::move(index_of)) {}

  // Applies one watch event. An ERROR asks for a relist when it is 410 Gone (our resourceVersion is too old),
  // else for a new watch; the cache keeps its contents either way. A delete of an object we never had changes
  // nothing.
  Applied apply(const WatchEvent& event) {
    using Type = WatchEvent::Type;
    if (event.type != Type::kAdded && event.type != Type::kModified && event.type != Type::kDeleted) {
      return apply_projected(event, "", std::nullopt);
    }
    const std::string key = object_key(event.object);
    if (event.type == Type::kDeleted) return apply_projected(event, key, std::nullopt);
    return apply_projected(event, key, project(event.object));
  }

  // The same for an event whose object was projected already (DecodedEvent): key is the object's, projected its
  // projection (nullopt: skipped); event.object is not looked at.
  Applied apply_projected(const WatchEvent& event, const std::string& key, std::optional<T> projected) {
    using Type = WatchEvent::Type;
    switch (event.type) {
      case Type::kError:
        return {event.error_code == 410 ? AfterEvent::kRelist : AfterEvent::kRewatch, std::nullopt};
      case Type::kBookmark:
      case Type::kIgnored:
        return {};
      case Type::kDeleted: {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = items_.find(key);
        if (it == items_.end()) return {};
        Change change{key, index_locked(it->second)};
        erase_locked(key);
        return {AfterEvent::kContinue, std::move(change)};
      }
      case Type::kAdded:
      case Type::kModified: {
        if (!projected) return {};
        std::lock_guard<std::mutex> lock(mu_);
        auto it = items_.find(key);
        if (it != items_.end() && it->second == *projected) return {};  // nothing we look at changed
        if (it != items_.end()) erase_locked(key);
        Change change{key, index_locked(*projected)};
        put_locked(key, std::move(*projected));
        return {AfterEvent::kContinue, std::move(change)};
      }
    }
    return {};
  }

  // Replaces the whole cache with a fresh list; returns what differs (gone, new or changed objects).
  std::vector<Change> replace(std::map<std::string, T> fresh) {
    std::vector<Change> changed;
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, old] : items_) {
      if (fresh.count(key) == 0) changed.push_back({key, index_locked(old)});
    }
    for (const auto& [key, obj] : fresh) {
      auto it = items_.find(key);
      if (it == items_.end() || !(it->second == obj)) changed.push_back({key, index_locked(obj)});
    }
    items_.clear();
    index_.clear();
    for (auto& [key, obj] : fresh) put_locked(key, std::move(obj));
    return changed;
  }

  // The projection of obj; an object whose fields have unexpected types is skipped (and logged), never allowed
  // to end the caller's thread.
  std::optional<T> project(const nlohmann::json& obj) const {
    try {
      return project_(obj);
    } catch (const std::exception& e) {
      log_warn("informer", "skipping malformed object " + object_key(obj) + ": " + e.what());
      return std::nullopt;
    }
  }

  std::optional<T> get(const std::string& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) return std::nullopt;
    return it->second;
  }
  std::vector<T> by_index(const std::string& index) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<T> out;
    auto it = index_.find(index);
    if (it == index_.end()) return out;
    for (const auto& key : it->second) out.push_back(items_.at(key));
    return out;
  }
  std::vector<std::string> keys() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [k, v] : items_) out.push_back(k);
    return out;
  }

 private:
  std::string index_locked(const T& obj) const { return index_of_ ? index_of_(obj) : std::string(); }

  void put_locked(const std::string& key, T obj) {
    if (index_of_) index_[index_of_(obj)].insert(key);
    items_.insert_or_assign(key, std::move(obj));
  }

  void erase_locked(const std::string& key) {
    auto it = items_.find(key);
    if (it == items_.end()) return;
    if (index_of_) {
      auto idx = index_.find(index_of_(it->second));
      if (idx != index_.end()) {
        idx->second.erase(key);
        if (idx->second.empty()) index_.erase(idx);
      }
    }
    items_.erase(it);
  }

  const Project project_;
  const IndexOf index_of_;
  mutable std::mutex mu_;
  std::map<std::string, T> items_;
  std::map<std::string, std::set<std::string>> index_;
};

}  // namespace kubedist::kube
