#include "trainingjob/act/pod_decoder.h"

#include "common/log.h"
#include "trainingjob/api/pod_event.h"

namespace kubedist::trainingjob {

namespace {

kube::DecodedEvent<PodFacts> decoded(PodEvent& read) {
  using Type = kube::WatchEvent::Type;
  kube::DecodedEvent<PodFacts> out;
  // As WatchEvent::parse: an ERROR carries a Status; any other event needs an object with metadata.
  const Type type = kube::WatchEvent::type_of(read.type);
  out.event.type = type == Type::kError || read.has_object ? type : Type::kIgnored;
  out.event.error_code = read.error_code;
  out.event.error_message = read.error_message;
  if (type == Type::kError) return out;
  out.event.resource_version = read.resource_version;
  out.key = read.key;
  if (read.malformed) {
    log_warn("informer", "skipping malformed object " + read.key +
                             ": a container that is no object, or an owner reference's controller that is no boolean");
  } else {
    out.projected = std::move(read.facts);
  }
  return out;
}

}  // namespace

std::optional<kube::DecodedEvent<PodFacts>> decode_pod_event(std::string_view line) {
  PodEvent read;
  if (!read_pod_event(line, read)) return std::nullopt;
  return decoded(read);
}

std::optional<kube::DecodedEvent<PodFacts>> decode_pod_object(std::string_view pod) {
  PodEvent read;
  if (!read_pod_object(pod, read)) return std::nullopt;
  return decoded(read);
}

}  // namespace kubedist::trainingjob
