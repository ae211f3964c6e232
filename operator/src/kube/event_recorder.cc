#include "kube/event_recorder.h"

#include "common/log.h"
#include "common/time.h"
#include "common/utf8.h"

namespace kubedist::kube {

std::string event_message(const std::string& message) { return cut_utf8(message, kMaxEventMessage, "..."); }

void EventRecorder::record(const ObjectRef& object, const std::string& type, const std::string& reason,
                           const std::string& raw_message) {
  // Messages quote what workers wrote (termination messages, hang stacks): made valid and cut at a character
  // boundary, or the Event could not be sent at all.
  const std::string message = event_message(raw_message);
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
      {"message", message},
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
