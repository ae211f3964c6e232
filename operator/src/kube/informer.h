// List+watch of one kind into a local cache, with resume, relist on 410 and reconnect with backoff.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/client.h"
#include "common/log.h"

namespace kubedist::kube {

// An object's cache key: "namespace/name".
std::string object_key(const nlohmann::json& obj);

// Reconnect delays: 200 ms doubling to 5 s while the API server is away, reset by a healthy stream.
class Backoff {
 public:
  std::chrono::milliseconds next();
  void reset() { current_ = std::chrono::milliseconds(0); }

 private:
  std::chrono::milliseconds current_{0};
};

struct InformerOptions {
  std::string list_path;        // e.g. /api/v1/pods or /apis/kubedist.io/v1alpha1/namespaces/ns/trainingjobs
  std::string label_selector;   // "" = all
  int watch_timeout_s = 300;    // the server closes each watch after this; we resume from the last version
  int page_size = 500;
};

// Informer<T> caches T (a compact projection of each object, made by `project`) by "namespace/name" and
// an optional secondary index (e.g. the owning job). `on_change` gets the key and the index value of every
// object that was added, changed or deleted (for a delete, the last known state's index value).
template <typename T>
class Informer {
 public:
  using Project = std::function<T(const nlohmann::json&)>;
  using IndexOf = std::function<std::string(const T&)>;
  using OnChange = std::function<void(const std::string& key, const std::string& index)>;

  Informer(Client& client, InformerOptions options, Project project, IndexOf index_of, OnChange on_change)
      : client_(client), options_(std::move(options)), project_(std::move(project)), index_of_(std::move(index_of)),
        on_change_(std::move(on_change)) {}
  ~Informer() { stop(); }

  void start() { thread_ = std::thread([this] { run(); }); }
  void stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool synced() const { return synced_; }

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
  uint64_t relists() const { return relists_; }

 private:
  std::string with_query(bool watch) const {
    std::string p = options_.list_path + "?";
    if (!options_.label_selector.empty()) p += "labelSelector=" + query_escape(options_.label_selector) + "&";
    if (watch) {
      p += "watch=1&allowWatchBookmarks=true&timeoutSeconds=" + std::to_string(options_.watch_timeout_s) +
           "&resourceVersion=" + resource_version_;
    } else {
      p += "limit=" + std::to_string(options_.page_size);
    }
    return p;
  }

  // An object whose fields have unexpected types is skipped (and logged), never allowed to end the thread.
  std::optional<T> safe_project(const nlohmann::json& obj) const {
    try {
      return project_(obj);
    } catch (const std::exception& e) {
      log_warn("informer", "skipping malformed object " + object_key(obj) + ": " + e.what());
      return std::nullopt;
    }
  }

  void sleep_interruptibly(std::chrono::milliseconds d) {
    const auto until = std::chrono::steady_clock::now() + d;
    while (!stopping_ && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Lists every page and replaces the cache, reporting what changed.
  bool relist() {
    std::map<std::string, T> fresh;
    std::string cont;
    std::string rv;
    do {
      std::string path = with_query(false);
      if (!cont.empty()) path += "&continue=" + query_escape(cont);
      auto r = client_.get(path);
      if (!r) {
        log_warn("informer", "list " + options_.list_path + " failed: " + r.error().message);
        return false;
      }
      const nlohmann::json md = r->value("metadata", nlohmann::json::object());
      cont = md.value("continue", "");
      rv = md.value("resourceVersion", "");
      if (r->contains("items") && (*r)["items"].is_array()) {
        for (const auto& item : (*r)["items"]) {
          if (auto projected = safe_project(item)) fresh.emplace(object_key(item), std::move(*projected));
        }
      }
    } while (!cont.empty() && !stopping_);
    std::vector<std::pair<std::string, std::string>> changed;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [key, old] : items_) {
        if (fresh.count(key) == 0) changed.emplace_back(key, index_of_ ? index_of_(old) : "");
      }
      for (const auto& [key, obj] : fresh) {
        auto it = items_.find(key);
        if (it == items_.end() || !(it->second == obj)) changed.emplace_back(key, index_of_ ? index_of_(obj) : "");
      }
      items_.clear();
      index_.clear();
      for (auto& [key, obj] : fresh) put_locked(key, std::move(obj));
      resource_version_ = rv;
    }
    ++relists_;
    synced_ = true;
    for (const auto& [key, index] : changed) on_change_(key, index);
    return true;
  }

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

  // Applies one watch event; returns false when the stream must be dropped and the cache relisted.
  bool apply(const nlohmann::json& event, bool* need_relist) {
    static const nlohmann::json kNull;
    const std::string type = event.value("type", "");
    auto found = event.find("object");
    const nlohmann::json& obj = found != event.end() ? *found : kNull;
    if (type == "ERROR") {
      const int code = obj.is_object() ? obj.value("code", 0) : 0;
      log_info("informer", options_.list_path + ": watch error " + std::to_string(code) + ", " +
                               (obj.is_object() ? obj.value("message", "") : ""));
      *need_relist = code == 410;
      return false;
    }
    if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return true;
    const std::string rv = obj["metadata"].value("resourceVersion", "");
    if (type == "BOOKMARK") {
      std::lock_guard<std::mutex> lock(mu_);
      resource_version_ = rv;
      return true;
    }
    const std::string key = object_key(obj);
    std::string index;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (type == "DELETED") {
        auto it = items_.find(key);
        if (it != items_.end() && index_of_) index = index_of_(it->second);
        erase_locked(key);
      } else {
        auto maybe = safe_project(obj);
        if (!maybe) return true;
        T projected = std::move(*maybe);
        auto it = items_.find(key);
        if (it != items_.end() && it->second == projected) {  // nothing we look at changed
          resource_version_ = rv;
          return true;
        }
        if (it != items_.end()) erase_locked(key);
        if (index_of_) index = index_of_(projected);
        put_locked(key, std::move(projected));
      }
      resource_version_ = rv;
    }
    on_change_(key, index);
    return true;
  }

  void run() {
    while (!stopping_) {
      try {
        run_loop();
      } catch (const std::exception& e) {  // no exception may end the informer: relist after a pause
        log_error("informer", options_.list_path + ": " + e.what());
        sleep_interruptibly(std::chrono::seconds(1));
      }
    }
  }

  void run_loop() {
    Backoff backoff;
    bool need_relist = true;
    while (!stopping_) {
      if (need_relist) {
        if (!relist()) {
          sleep_interruptibly(backoff.next());
          continue;
        }
        need_relist = false;
      }
      bool relist_now = false;
      bool saw_event = false;
      const auto started = std::chrono::steady_clock::now();
      auto r = client_.watch(with_query(true), [&](const nlohmann::json& ev) {
        saw_event = true;
        return !stopping_ && apply(ev, &relist_now);
      });
      if (stopping_) break;
      if (relist_now) {
        need_relist = true;
        continue;
      }
      if (!r) {
        if (r.error().kind == Error::Kind::kGone) {
          need_relist = true;
          continue;
        }
        // Servers end watches at timeoutSeconds in ways cpprest reports as a broken stream; only early drops matter.
        const bool early = std::chrono::steady_clock::now() - started < std::chrono::seconds(options_.watch_timeout_s / 2);
        log(early ? LogLevel::kWarn : LogLevel::kDebug, "informer",
            "watch " + options_.list_path + " dropped: " + r.error().message);
        sleep_interruptibly(backoff.next());
        continue;
      }
      if (saw_event) {
        backoff.reset();
      } else if (std::chrono::steady_clock::now() - started < std::chrono::seconds(1)) {
        sleep_interruptibly(backoff.next());  // a server that closes watches at once must not spin us
      }
    }
  }

  Client& client_;
  const InformerOptions options_;
  const Project project_;
  const IndexOf index_of_;
  const OnChange on_change_;
  mutable std::mutex mu_;
  std::map<std::string, T> items_;
  std::map<std::string, std::set<std::string>> index_;
  std::string resource_version_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> synced_{false};
  std::atomic<uint64_t> relists_{0};
  std::thread thread_;
};

}  // namespace kubedist::kube
