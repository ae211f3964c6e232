// Readers of a Plan for the operator's unit tests: the writes it asks for, by kind and verb.
#pragma once

#include <string>
#include <vector>

#include "trainingjob/decide/plan.h"

namespace kubedist::trainingjob::testing {

// The plan's writes of this verb and kind, in order.
inline std::vector<Write> writes(const Plan& p, Write::Verb verb, const std::string& kind) {
  std::vector<Write> out;
  for (const auto& w : p.writes) {
    if (w.verb == verb && w.kind == kind) out.push_back(w);
  }
  return out;
}

inline bool writes_any(const Plan& p, Write::Verb verb, const std::string& kind) {
  return !writes(p, verb, kind).empty();
}

// Whether the plan writes the object of this verb, kind and name.
inline bool writes_named(const Plan& p, Write::Verb verb, const std::string& kind, const std::string& name) {
  for (const auto& w : writes(p, verb, kind)) {
    if (w.name == name) return true;
  }
  return false;
}

// The pods the plan deletes, as decide() decided them (name, uid precondition, forced).
inline std::vector<PodDeletion> pod_deletions(const Plan& p) {
  std::vector<PodDeletion> out;
  for (const auto& w : writes(p, Write::Verb::kDelete, "Pod")) {
    out.push_back({w.name, w.precondition, w.body.value("gracePeriodSeconds", -1) == 0});
  }
  return out;
}

inline bool has_event(const Plan& p, const std::string& reason) {
  for (const auto& e : p.events) {
    if (e.reason == reason) return true;
  }
  return false;
}

}  // namespace kubedist::trainingjob::testing
