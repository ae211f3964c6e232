#include "trainingjob/api/pod_event.h"

#include <cstdint>
#include <vector>

#include "common/json_reader.h"
#include "trainingjob/api/facts.h"
#include "contract/pod_env.h"
#include "trainingjob/api/json_fields.h"

namespace kubedist::trainingjob {
namespace {

// The handler of json_reader (common/json_reader.h): it knows where it is by a stack of the objects and arrays it is
// in, each named by the field that holds it (F), and wants only the values facts are made of, so that the reader
// skips every other field whole. Facts that depend on several fields (the trainer container's state, the
// controller owner) are settled in finish(), since the API server may send status before spec.
class PodEventReader {
 public:
  // bare: the text is the object itself, as an ADDED event's (a list's item), not an event around it.
  PodEventReader(PodEvent& out, bool bare) : out_(out), bare_(bare) {
    frames_.reserve(16);
    if (bare_) type_ = "ADDED";
  }

  // Every call below is for a value at a place wants() said yes to.
  bool wants() const { return here() != F::kOther; }
  void null() {
    scalar(here(), false);
    if (here() == F::kDelTs) deleting_ = false;
  }
  void boolean(bool v) {
    scalar(here(), true);
    switch (here()) {
      case F::kOwnerCtrl: owner_.controller = v; break;
      case F::kDelTs: deleting_ = true; break;
      default: break;
    }
  }
  void number_integer(int64_t v) { integer(v); }
  void number_unsigned(uint64_t v) { integer(static_cast<int64_t>(v)); }
  void number_float() {
    scalar(here(), false);
    if (here() == F::kDelTs) deleting_ = true;
  }
  void string(std::string_view s) {
    scalar(here(), false);
    PodFacts& f = out_.facts;
    switch (here()) {
      case F::kType: type_ = s; break;
      case F::kNs: f.ns = s; break;
      case F::kName: f.name = s; break;
      case F::kUid: f.uid = s; break;
      case F::kRv: out_.resource_version = s; break;
      case F::kDelTs: deleting_ = true; break;
      case F::kJobLabel: f.job_name = s; break;
      case F::kRdzvKey: f.rdzv_key = s; break;
      case F::kTopologyDomain: f.topology_domain = std::string(s).substr(0, kMaxTopologyDomain); break;
      case F::kRankLabel: rank_ = s; break;
      case F::kOwnerUid: owner_.uid = s; break;
      case F::kNodeName: f.node_name = s; break;
      case F::kVolumeName: volume_name_ = s; break;
      case F::kContainerName: container_name_ = s; break;
      case F::kPhase: f.phase = s; break;
      case F::kStartTime: f.start_time = s; break;
      case F::kPodIp: f.pod_ip = s; break;
      case F::kReason: f.failure_reason = s; break;
      case F::kCondType: cond_.type = s; break;
      case F::kCondStatus: cond_.status = s; break;
      case F::kCondReason: cond_.reason = s; break;
      case F::kCondLtt: cond_.ltt = s; break;
      case F::kCondMessage: cond_.message = first_line(s, kMaxSchedulingMessage); break;
      case F::kCsName: cs_.name = s; break;
      case F::kTReason: cs_.reason = s; break;
      case F::kTFinished: cs_.finished = s; break;
      case F::kTMessage: cs_.message = s; break;
      case F::kErrMessage: out_.error_message = s; break;
      default: break;
    }
  }
  void start_object() { open(false); }
  void start_array() { open(true); }
  void end_object() { close(); }
  void end_array() { close(); }
  void key(std::string_view k) { frames_.back().key = child(frames_.back().id, k); }

  // After a successful parse: the event, with parse_pod_facts' rules for what depends on several fields.
  void finish() {
    if (!root_object_) return;
    out_.type = type_;
    if (type_ == "ERROR" || !object_object_ || !metadata_object_) return;
    out_.has_object = true;
    out_.malformed = malformed_;
    PodFacts& f = out_.facts;
    out_.key = f.ns + "/" + f.name;
    f.deleting = deleting_;
    f.rank = node_rank_from_label(rank_);
    if (f.phase.empty()) f.phase = "Pending";
    const std::string_view trainer = has_trainer_ ? std::string_view("trainer") : std::string_view(first_container_);
    for (const Terminated& t : terminated_) {
      if (!trainer.empty() && t.name != trainer) continue;
      if (t.exit_code_set) f.exit_code = t.exit_code;
      if (f.failure_reason.empty()) f.failure_reason = t.reason;
      f.finished_at = t.finished;
      f.termination_message = first_line(t.message, kMaxTerminationMessage);
    }
  }

 private:
  enum class F : uint8_t {
    kOther, kRoot, kType, kObject, kErrCode, kErrMessage, kMd, kNs, kName, kUid, kRv, kDelTs, kAnnotations, kRdzvKey,
    kTopologyDomain, kLabels, kJobLabel,
    kRankLabel, kOwners, kOwner, kOwnerCtrl, kOwnerUid, kSpec, kNodeName, kVolumes, kVolume, kVolumeName,
    kContainers, kContainer, kContainerName, kStatus, kPhase, kStartTime, kPodIp, kReason, kConds, kCond, kCondType,
    kCondStatus, kCondReason, kCondLtt, kCondMessage, kCStatuses, kCStatus, kCsName, kCsState, kTerminated, kTExit, kTReason,
    kTFinished, kTMessage,
  };
  struct Frame {
    F id;
    bool array;
    F key = F::kOther;  // objects: where the value of the last key goes
  };
  struct Owner {
    bool controller = false;
    std::string uid;
  };
  struct Cond {
    std::string type, status, reason, ltt, message;
  };
  struct Terminated {
    std::string name;
    bool terminated = false;
    bool exit_code_set = false;
    int exit_code = 0;
    std::string reason, finished, message;
  };

  static F child(F parent, std::string_view k) {
    switch (parent) {
      case F::kRoot:
        if (k == "type") return F::kType;
        if (k == "object") return F::kObject;
        break;
      case F::kObject:
        if (k == "metadata") return F::kMd;
        if (k == "spec") return F::kSpec;
        if (k == "status") return F::kStatus;
        if (k == "code") return F::kErrCode;
        if (k == "message") return F::kErrMessage;
        break;
      case F::kMd:
        if (k == "namespace") return F::kNs;
        if (k == "name") return F::kName;
        if (k == "uid") return F::kUid;
        if (k == "resourceVersion") return F::kRv;
        if (k == "deletionTimestamp") return F::kDelTs;
        if (k == "annotations") return F::kAnnotations;
        if (k == "labels") return F::kLabels;
        if (k == "ownerReferences") return F::kOwners;
        break;
      case F::kAnnotations:
        if (k == kRdzvKeyAnnotation) return F::kRdzvKey;
        if (k == contract::kTopologyDomainAnnotation) return F::kTopologyDomain;
        break;
      case F::kLabels:
        if (k == kJobNameLabel) return F::kJobLabel;
        if (k == kNodeRankLabel) return F::kRankLabel;
        break;
      case F::kOwner:
        if (k == "controller") return F::kOwnerCtrl;
        if (k == "uid") return F::kOwnerUid;
        break;
      case F::kSpec:
        if (k == "nodeName") return F::kNodeName;
        if (k == "volumes") return F::kVolumes;
        if (k == "containers") return F::kContainers;
        break;
      case F::kVolume:
        if (k == "name") return F::kVolumeName;
        break;
      case F::kContainer:
        if (k == "name") return F::kContainerName;
        break;
      case F::kStatus:
        if (k == "phase") return F::kPhase;
        if (k == "startTime") return F::kStartTime;
        if (k == "podIP") return F::kPodIp;
        if (k == "reason") return F::kReason;
        if (k == "conditions") return F::kConds;
        if (k == "containerStatuses") return F::kCStatuses;
        break;
      case F::kCond:
        if (k == "type") return F::kCondType;
        if (k == "status") return F::kCondStatus;
        if (k == "reason") return F::kCondReason;
        if (k == "lastTransitionTime") return F::kCondLtt;
        if (k == "message") return F::kCondMessage;
        break;
      case F::kCStatus:
        if (k == "name") return F::kCsName;
        if (k == "state") return F::kCsState;
        break;
      case F::kCsState:
        if (k == "terminated") return F::kTerminated;
        break;
      case F::kTerminated:
        if (k == "exitCode") return F::kTExit;
        if (k == "reason") return F::kTReason;
        if (k == "finishedAt") return F::kTFinished;
        if (k == "message") return F::kTMessage;
        break;
      default:
        break;
    }
    return F::kOther;
  }
  static F element(F array) {
    switch (array) {
      case F::kOwners: return F::kOwner;
      case F::kVolumes: return F::kVolume;
      case F::kContainers: return F::kContainer;
      case F::kConds: return F::kCond;
      case F::kCStatuses: return F::kCStatus;
      default: return F::kOther;
    }
  }
  F here() const {
    if (frames_.empty()) return bare_ ? F::kObject : F::kRoot;
    const Frame& f = frames_.back();
    return f.array ? element(f.id) : f.key;
  }

  // What parse_pod_facts throws on (and the store skips): a container that is no object, a controller flag that is
  // no boolean.
  void scalar(F at, bool is_bool) {
    if (at == F::kContainer || (at == F::kOwnerCtrl && !is_bool)) malformed_ = true;
  }

  void integer(int64_t v) {  // exitCode as parse_pod_facts' get<int>() has it
    scalar(here(), false);
    switch (here()) {
      case F::kTExit:
        cs_.exit_code_set = true;
        cs_.exit_code = static_cast<int>(v);
        break;
      case F::kErrCode: out_.error_code = static_cast<int>(v); break;
      case F::kDelTs: deleting_ = true; break;
      default: break;
    }
  }

  // An object or array opens at a wanted place; below a place that wants a scalar (kDelTs, kOwnerCtrl, a
  // container that is an array) every field is kOther, which the reader skips.
  void open(bool array) {
    const F at = here();
    if (at == F::kDelTs) deleting_ = true;
    if (at == F::kOwnerCtrl || (at == F::kContainer && array)) malformed_ = true;
    if (!array) {
      if (frames_.empty()) root_object_ = true;  // the text itself: the event, or the bare object
      switch (at) {
        case F::kObject: object_object_ = true; break;
        case F::kMd: metadata_object_ = true; break;
        case F::kOwner: owner_ = Owner{}; break;
        case F::kVolume: volume_name_.clear(); break;
        case F::kContainer: container_name_.clear(); break;
        case F::kCond: cond_ = Cond{}; break;
        case F::kCStatus: cs_ = Terminated{}; break;
        case F::kTerminated: cs_.terminated = true; break;
        default: break;
      }
    }
    frames_.push_back({at, array});
  }

  void close() {
    const Frame f = frames_.back();
    frames_.pop_back();
    if (f.array) return;
    PodFacts& facts = out_.facts;
    switch (f.id) {
      case F::kOwner:
        if (owner_.controller && !owner_found_) {
          facts.owner_uid = owner_.uid;
          owner_found_ = true;
        }
        break;
      case F::kVolume:
        facts.rdzv_secret = facts.rdzv_secret || volume_name_ == kRdzvSecretVolume ||
                            volume_name_ == kNamespaceRdzvSecret;
        facts.job_rdzv_secret = facts.job_rdzv_secret || volume_name_ == kRdzvSecretVolume;
        break;
      case F::kContainer:
        if (containers_++ == 0) first_container_ = container_name_;
        if (container_name_ == "trainer") has_trainer_ = true;
        break;
      case F::kCond:
        if (cond_.type == "Ready") facts.ready = cond_.status == "True";
        if (cond_.type == "PodScheduled" && cond_.status == "False" && cond_.reason == "Unschedulable") {
          facts.unschedulable_since = cond_.ltt;
          facts.unschedulable_message = cond_.message;
        }
        break;
      case F::kCStatus:
        if (cs_.terminated) terminated_.push_back(std::move(cs_));
        break;
      default:
        break;
    }
  }

  PodEvent& out_;
  const bool bare_;
  std::vector<Frame> frames_;
  bool malformed_ = false;
  bool root_object_ = false, object_object_ = false, metadata_object_ = false;
  std::string type_;
  bool deleting_ = false;
  std::string rank_;
  Owner owner_;
  bool owner_found_ = false;
  std::string volume_name_, container_name_, first_container_;
  int containers_ = 0;
  bool has_trainer_ = false;
  Cond cond_;
  Terminated cs_;
  std::vector<Terminated> terminated_;
};

}  // namespace

namespace {

bool read_pod(std::string_view text, PodEvent& out, bool bare) {
  out = PodEvent{};
  PodEventReader reader(out, bare);
  if (!json_reader::read(text, reader)) return false;
  reader.finish();
  return true;
}

}  // namespace

bool read_pod_event(std::string_view line, PodEvent& out) { return read_pod(line, out, false); }

bool read_pod_object(std::string_view pod, PodEvent& out) { return read_pod(pod, out, true); }

}  // namespace kubedist::trainingjob
