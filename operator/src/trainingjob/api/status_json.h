// A TrainingJob's status as the API stores it: nlohmann's to_json/from_json for Status and its parts.
#pragma once

#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainingjob/api/types.h"

namespace kubedist::trainingjob {

// Reading is lenient: a field of another type is skipped, or (where a count has the wrong type) the whole status
// reads as a fresh one (parse_status). Writing is a merge patch: a part no longer wanted is written as null.
void to_json(nlohmann::json& j, const Condition& c);
// A condition of one of the kept types (job_state.h); nullopt for any other type.
std::optional<Condition> condition_from_json(const nlohmann::json& j, const std::vector<ConditionType>& kept);
void to_json(nlohmann::json& j, const LauncherSeen& l);
void from_json(const nlohmann::json& j, LauncherSeen& l);
void to_json(nlohmann::json& j, const ElasticStatus& e);
void from_json(const nlohmann::json& j, ElasticStatus& e);
void to_json(nlohmann::json& j, const LastFailure& f);
void from_json(const nlohmann::json& j, LastFailure& f);
void to_json(nlohmann::json& j, const SlowestRank& r);
void from_json(const nlohmann::json& j, SlowestRank& r);
void to_json(nlohmann::json& j, const ProgressStatus& p);
void from_json(const nlohmann::json& j, ProgressStatus& p);
void to_json(nlohmann::json& j, const Status& s);
// All but the conditions, whose kept types parse_status knows. Throws nlohmann::json::exception on a wrongly typed
// count.
void from_json(const nlohmann::json& j, Status& s);

// The status of a stored object, with the conditions of the kept types (the core's, and those of the integrations
// in use); a status someone else wrote with wrong types reads as Status{} (start afresh).
Status parse_status(const nlohmann::json& status, const std::vector<ConditionType>& kept = core_condition_types());
nlohmann::json status_to_json(const Status& status);
// The merge patch that turns status `before` into `after`: status_to_json(after), with null for each key of a map
// that `after` no longer has (status.progress.metrics), which a merge patch would otherwise keep.
nlohmann::json status_patch(const Status& before, const Status& after);

}  // namespace kubedist::trainingjob
