// The pod informer's decoders: a pod watch event, and a pod of a list page, read straight into PodFacts
// (api/pod_event.h) as the informer's store takes them, without the JSON tree the other informers build.
#pragma once

#include <optional>
#include <string_view>

#include "kube/watch_event.h"
#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// nullopt when the line is not JSON. An object parse_pod_facts would refuse is logged and not projected.
std::optional<kube::DecodedEvent<PodFacts>> decode_pod_event(std::string_view line);
// The same for one pod of a list, as an ADDED event's object.
std::optional<kube::DecodedEvent<PodFacts>> decode_pod_object(std::string_view pod);

}  // namespace kubedist::trainingjob
