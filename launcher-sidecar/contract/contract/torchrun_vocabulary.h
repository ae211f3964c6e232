// One vocabulary for torchrun's numbers and words that three readers share: the launcher's flags
// (cli/launch_config.cc), the operator's spec parser (trainingjob/api/parse_spec.cc) and the plugin's reading of a
// torchrun command line (kubectl/cli/training_command.cc). The CRD's rules spell the same bounds (crd/, checked
// against these by unit Vocabulary.TheCrdSpellsTheSameBounds).
#pragma once

#include <string>
#include <string_view>

namespace kubedist::contract {

// --nproc-per-node / spec.nprocPerNode: an integer from 1 to kMaxNprocPerNode, or one of the modes.
inline constexpr long kMaxNprocPerNode = 1024;
inline bool is_nproc_mode(std::string_view s) { return s == "auto" || s == "gpu" || s == "cpu"; }
inline std::string nproc_per_node_expected() {
  return "an integer from 1 to " + std::to_string(kMaxNprocPerNode) + ", auto, gpu or cpu";
}

// --max-restarts / spec.maxRestarts, and spec.backoffLimit: an integer from 0 to kMaxRestartsUpperBound.
inline constexpr long kMaxRestartsUpperBound = 10000;
inline std::string max_restarts_expected() { return "an integer from 0 to " + std::to_string(kMaxRestartsUpperBound); }

}  // namespace kubedist::contract
