// FakeApi and FakeCache: an in-memory API server and caches for the act layer's unit tests, in the manner of
// controller-runtime's client/fake. FakeApi keeps objects by path, gives each created one a uid and every write a
// resourceVersion, honours uid preconditions and resourceVersions, records every call, and answers a request with
// the HTTP status a test asks for (403, 409, 422, 500, ...). It is no API server: no admission, no defaults, no
// watch; a test moves objects into the caches itself, as a watch would.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/api.h"
#include "kube/client.h"
#include "kube/lister.h"

namespace kubedist::testing {

// Bytes base64-encoded, as the API server serves a Secret's data.
inline std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])) << 16;
    if (i + 1 < bytes.size()) n |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size()) n |= static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kAlphabet[n & 63] : '=';
  }
  return out;
}

class FakeApi final : public kube::Api {
 public:
  struct Call {
    std::string verb;  // get | create | patch | delete
    std::string path;
    nlohmann::json body;
  };

  // The next `times` requests of verb whose path contains path_part are answered with http_status (and, for 409,
  // reason AlreadyExists or Conflict) instead of being carried out.
  void answer(const std::string& verb, const std::string& path_part, int http_status, const std::string& reason = "",
              int times = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    answers_.push_back({verb, path_part, http_status, reason, times});
  }
  // Puts obj at path as it is (a test's starting state).
  void put(const std::string& path, nlohmann::json obj) {
    std::lock_guard<std::mutex> lock(mu_);
    objects_[path] = std::move(obj);
  }
  void erase(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    objects_.erase(path);
  }
  std::optional<nlohmann::json> object(const std::string& path) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(path);
    return it != objects_.end() ? std::optional(it->second) : std::nullopt;
  }
  // The objects directly under a collection path.
  std::vector<nlohmann::json> list(const std::string& collection) const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<nlohmann::json> out;
    for (const auto& [path, obj] : objects_) {
      if (path.rfind(collection + "/", 0) == 0 && path.find('/', collection.size() + 1) == std::string::npos) {
        out.push_back(obj);
      }
    }
    return out;
  }
  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  // The calls of verb whose path contains path_part, in order.
  std::vector<Call> calls(const std::string& verb, const std::string& path_part) const {
    std::vector<Call> out;
    for (const auto& c : calls()) {
      if (c.verb == verb && c.path.find(path_part) != std::string::npos) out.push_back(c);
    }
    return out;
  }
  void clear_calls() {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.clear();
  }

  Result<nlohmann::json> get(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto e = called("get", path, nullptr)) return *e;
    auto it = objects_.find(path.substr(0, path.find('?')));
    if (it == objects_.end()) return status(404, "NotFound", path + " not found");
    return it->second;
  }

  Result<nlohmann::json> create(const std::string& path, const nlohmann::json& body) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto e = called("create", path, body)) return *e;
    nlohmann::json obj = body;
    nlohmann::json& md = obj["metadata"];
    std::string name = md.value("name", "");
    if (name.empty()) name = md.value("generateName", "") + std::to_string(++generated_);
    md["name"] = name;
    const std::string at = path + "/" + name;
    if (objects_.count(at) != 0) return status(409, "AlreadyExists", at + " already exists");
    md["uid"] = "fake-uid-" + std::to_string(++uids_);
    md["resourceVersion"] = std::to_string(++version_);
    objects_[at] = obj;
    return obj;
  }

  Result<nlohmann::json> merge_patch(const std::string& path, const nlohmann::json& patch) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto e = called("patch", path, patch)) return *e;
    const std::string suffix = "/status";
    const bool status_only = path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
    auto it = objects_.find(status_only ? path.substr(0, path.size() - suffix.size()) : path);
    if (it == objects_.end()) return status(404, "NotFound", path + " not found");
    nlohmann::json& obj = it->second;
    const auto md = patch.find("metadata");
    if (md != patch.end() && md->contains("resourceVersion") &&
        (*md)["resourceVersion"] != obj["metadata"].value("resourceVersion", "")) {
      return status(409, "Conflict", "the object has been modified");
    }
    nlohmann::json applied = patch;
    if (status_only) applied = nlohmann::json{{"status", patch.value("status", nlohmann::json::object())}};
    obj.merge_patch(applied);
    obj["metadata"]["resourceVersion"] = std::to_string(++version_);
    return obj;
  }

  Result<void> remove(const std::string& path, const nlohmann::json& options) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto e = called("delete", path, options)) return *e;
    auto it = objects_.find(path);
    if (it == objects_.end()) return status(404, "NotFound", path + " not found");
    if (options.is_object() && options.contains("preconditions") &&
        options["preconditions"].value("uid", "") != it->second["metadata"].value("uid", "")) {
      return status(409, "Conflict", "Precondition failed: UID in precondition does not match");
    }
    objects_.erase(it);
    return {};
  }

 private:
  struct Answer {
    std::string verb;
    std::string path_part;
    int http_status;
    std::string reason;
    int times;
  };

  static Error status(int code, const std::string& reason, const std::string& message) {
    return kube::error_from_response(code, {{"reason", reason}, {"message", message}});
  }
  // Records the call; the error a test asked for, if any, or the real client's for a body it cannot write as JSON
  // (a string that is not UTF-8).
  std::optional<Error> called(const std::string& verb, const std::string& path, const nlohmann::json& body) {
    calls_.push_back({verb, path, body});
    try {
      (void)body.dump();
    } catch (const nlohmann::json::exception& e) {
      return Error{Error::Kind::kUnserializable, std::string("request body cannot be written as JSON: ") + e.what(), 0};
    }
    for (auto it = answers_.begin(); it != answers_.end(); ++it) {
      if (it->verb != verb || path.find(it->path_part) == std::string::npos) continue;
      const Error e = status(it->http_status, it->reason, "fake " + verb + " " + path + ": HTTP " +
                                                             std::to_string(it->http_status));
      if (--it->times == 0) answers_.erase(it);
      return e;
    }
    return std::nullopt;
  }

  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> objects_;
  std::vector<Call> calls_;
  std::vector<Answer> answers_;
  uint64_t uids_ = 0;
  uint64_t version_ = 100;
  uint64_t generated_ = 0;
};

// A cache a test fills: objects by key, with one index.
template <typename T>
class FakeCache final : public kube::Lister<T> {
 public:
  explicit FakeCache(std::function<std::string(const T&)> index_of = nullptr) : index_of_(std::move(index_of)) {}

  void set(const std::string& key, T obj) { items_.insert_or_assign(key, std::move(obj)); }
  void erase(const std::string& key) { items_.erase(key); }
  void clear() { items_.clear(); }

  std::optional<T> get(const std::string& key) const override {
    auto it = items_.find(key);
    return it != items_.end() ? std::optional<T>(it->second) : std::nullopt;
  }
  std::vector<T> by_index(const std::string& index) const override {
    std::vector<T> out;
    for (const auto& [key, obj] : items_) {
      if ((index_of_ ? index_of_(obj) : std::string()) == index) out.push_back(obj);
    }
    return out;
  }
  std::vector<std::string> keys() const override {
    std::vector<std::string> out;
    for (const auto& [key, obj] : items_) out.push_back(key);
    return out;
  }
  bool synced() const override { return true; }

 private:
  std::function<std::string(const T&)> index_of_;
  std::map<std::string, T> items_;
};

}  // namespace kubedist::testing
