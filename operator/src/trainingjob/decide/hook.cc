#include "trainingjob/decide/hook.h"

#include "trainingjob/decide/decide_state.h"

namespace kubedist::trainingjob {

std::optional<Plan> Hook::gate(DecideState&) const { return std::nullopt; }

std::optional<Ending> Hook::prepare(DecideState&) const { return std::nullopt; }

}  // namespace kubedist::trainingjob
