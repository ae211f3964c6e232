// The TrainingJob, and the ConfigMaps that carry its working directory, for a torchrun command line and the
// plugin's run options: pure, so that what `run` creates and what `--dry-run -o yaml` prints are the same.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "kubectl/cli/options.h"
#include "kubectl/cli/training_command.h"

namespace kubedist::kubectl {

// Where things live in the pod.
inline constexpr const char* kWorkdirPath = "/kubedist-run/workdir";  // the workers' working directory
inline constexpr const char* kCodePath = "/kubedist-run/code";        // the ConfigMaps' archive chunks
inline constexpr const char* kPipPath = "/kubedist-run/pip";          // --pip packages (on PYTHONPATH)
inline constexpr const char* kSetupContainer = "kubedist-setup";  // unpacks the code, installs --pip packages
inline constexpr const char* kWorkdirLabel = "kubedist.io/workdir-of";
inline constexpr const char* kChunkKeyPrefix = "workdir.tar.";
// The image when --image and $KUBEDIST_IMAGE are not given: the local cluster's CPU example (deploy/local).
inline constexpr const char* kDefaultImage = "10.250.0.1:5000/kubedist/example-cpu:latest";

struct JobInputs {
  std::string name;
  std::string ns;
  std::string image;
  RunOptions options;
  TrainingCommand command;
  std::string program;              // as the pod runs it: relative to the working directory when shipped
  std::vector<std::string> chunks;  // the working directory's archive (workdir.h); empty: nothing shipped
};

struct RenderedJob {
  nlohmann::json job;
  std::vector<nlohmann::json> config_maps;
  std::vector<std::string> notes;  // one line per -e variable dropped on purpose
};

// Fails with one line for a variable the operator owns (check_user_env), or a spec the operator would refuse.
Result<RenderedJob> render_job(const JobInputs& in);

// ConfigMap J-workdir-K.
std::string workdir_config_map_name(const std::string& job, size_t k);

// The ConfigMap with an owner reference to the created job, so that deleting the job deletes it.
nlohmann::json owned_by_job(nlohmann::json config_map, const nlohmann::json& job);

// The objects as a YAML stream (documents separated by ---), strings quoted wherever YAML would read them
// otherwise (numbers, booleans), so that `kubectl apply -f -` reads them back as they were.
std::string to_yaml(const std::vector<nlohmann::json>& docs);

// The worker's command: python3 -u SCRIPT ARGS, python3 -u -m MODULE ARGS, or the executable as is.
std::vector<std::string> worker_command(const TrainingCommand& cmd, const std::string& program);

}  // namespace kubedist::kubectl
