// A pod watch event read straight into the pod's facts, its cache key and its resourceVersion, without building the
// JSON tree, and skipping whole every field it does not read (common/json_reader.h): the pod informer's decoder
// (act/setup.cc). It reads the fields parse_pod_facts reads, with its rules, and refuses what parse_pod_facts
// refuses; the unit tests hold the two together. decode-bench (tests/bench/operator) measures it against the DOM
// path and nlohmann's SAX reading it replaced.
#pragma once

#include <string>
#include <string_view>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

struct PodEvent {
  std::string type;         // as sent: ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  bool has_object = false;  // the object is a JSON object with a metadata object (else nothing to apply)
  bool malformed = false;   // the object has fields parse_pod_facts refuses (the store skips it, as it would)
  std::string key;          // "namespace/name"
  std::string resource_version;
  int error_code = 0;  // ERROR: the Status' code and message
  std::string error_message;
  PodFacts facts;
};

// Reads one pod watch event line (a JSON object, as the API server sends it); false when it is not JSON.
bool read_pod_event(std::string_view line, PodEvent& out);
// Reads one pod (an item of a list page: kube/list_page.h) as read_pod_event reads an ADDED event's object.
bool read_pod_object(std::string_view pod, PodEvent& out);

}  // namespace kubedist::trainingjob
