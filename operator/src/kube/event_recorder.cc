#include "kube/event_recorder.h"

#include "common/log.h"
#include "common/time.h"

namespace kubedist::kube {

void EventRecorder::record(const ObjectRef& object, const std::string& type, const std::string& reason,
                           const std::string& message) {
  log(type == "Warning" ? LogLevel::kWarn : LogLevel::kInfo, "event",
      object.kind + " " + object.ns + "/" + object.name + " " + reason + ": " + message);
  const std::string now = format_rfc3339(now_unix());
  const nlohmann::json event = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", object.name + "."}, {"namespace", object.ns}}},
      {"involvedObject",
       {{"apiVersion", object.api_version},
        {"kind", object.kind},
        {"namespace", object.ns},
        {"name", object.name},
        {"uid", object.uid}}},
      {"type", type},
      {"reason", reason},
      {"message", message.size() > 1024 ? message.substr(0, 1021) + "..." : message},
      {"source", {{"component", component_}}},
      {"reportingComponent", component_},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1},
  };
  auto r = client_.create_unparsed("/api/v1/namespaces/" + object.ns + "/events", event);
  if (!r) log_warn("event", "could not record event " + reason + " on " + object.name + ": " + r.error().message);
}

}  // namespace kubedist::kube
