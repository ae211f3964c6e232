// Write: one request to the API server that a Plan asks for, as data the act layer carries out.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kubedist::trainingjob {

struct Write {
  enum class Verb {
    kCreate,       // AlreadyExists counts as done: the caches have not shown the object yet
    kDelete,       // NotFound counts as done
    kPatchStatus,  // a merge patch of the object's status; NotFound is done, a 409 Conflict comes back next pass
  };
  Verb verb = Verb::kCreate;
  std::string kind;     // the object's kind (Pod, Service, Workload, ...), for messages
  std::string name;     // the object's name
  std::string path;     // kCreate: the collection; kDelete: the object; kPatchStatus: the object's status
  nlohmann::json body;  // kCreate: the object; kDelete: DeleteOptions; kPatchStatus: the merge patch
  bool operator==(const Write&) const = default;
};

}  // namespace kubedist::trainingjob
