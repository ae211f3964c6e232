// Write: one request to the API server that a Plan asks for, as data the act layer carries out in order.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace kubedist::trainingjob {

struct Write {
  enum class Verb;
  Write() = default;
  Write(Verb verb, std::string kind, std::string name, std::string path, nlohmann::json body,
        std::string precondition = "")
      : verb(verb), kind(std::move(kind)), name(std::move(name)), path(std::move(path)), body(std::move(body)),
        precondition(std::move(precondition)) {}

  enum class Verb {
    kCreate,       // AlreadyExists counts as done: the caches have not shown the object yet
    kDelete,       // NotFound counts as done, and so does a precondition that no longer holds (a newer object)
    kPatchStatus,  // a merge patch of the object's status; NotFound is done, a 409 Conflict comes back next pass
    kMergePatch,   // a merge patch of another object (a Node's taints): the same, and any other refusal is logged
                   // and passed over (it must not hold up the job)
  };
  Verb verb = Verb::kCreate;
  std::string kind;     // the object's kind (Pod, Service, Workload, TrainingJob, ...)
  std::string name;     // the object's name
  std::string path;     // kCreate: the collection; kDelete: the object; kPatchStatus: the object's status
  nlohmann::json body;  // kCreate: the object; kDelete: DeleteOptions; kPatchStatus: the merge patch
  // kDelete: the uid the object must still have, so that a newer object of the same name is never deleted;
  // kPatchStatus, kMergePatch: the resourceVersion the patch was decided on, so that the server refuses it on a
  // changed object.
  // Empty: none.
  std::string precondition;
  bool operator==(const Write&) const = default;
};

}  // namespace kubedist::trainingjob
