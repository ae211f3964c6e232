// Api: the requests a controller's act layer makes of the API server (get, create, merge patch, delete), so that
// it can be unit-tested on an in-memory fake (tests/unit/operator/fake_api.h) as on the real Client.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kubedist::kube {

class Api {
 public:
  virtual ~Api() = default;
  // path: an API path with query, e.g. "/api/v1/namespaces/ns/pods/p".
  virtual Result<nlohmann::json> get(const std::string& path) = 0;
  // POST of body to the collection path; the answer is the object as created (with its uid).
  virtual Result<nlohmann::json> create(const std::string& path, const nlohmann::json& body) = 0;
  // The same for a caller that needs only to know whether it worked (the Client does not parse the server's copy,
  // several KiB of JSON for a pod).
  virtual Result<void> create_unparsed(const std::string& path, const nlohmann::json& body) {
    auto r = create(path, body);
    if (!r) return r.error();
    return {};
  }
  // JSON merge patch. With metadata.resourceVersion in the patch the server refuses stale writes (Conflict).
  virtual Result<nlohmann::json> merge_patch(const std::string& path, const nlohmann::json& patch) = 0;
  // DELETE with optional DeleteOptions (preconditions, propagationPolicy, gracePeriodSeconds). NotFound is an error
  // for the caller; a precondition that does not hold is a Conflict.
  virtual Result<void> remove(const std::string& path, const nlohmann::json& options = nullptr) = 0;
};

}  // namespace kubedist::kube
