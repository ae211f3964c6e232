// What a TrainingJob's pod template may not do, and the types of everything the operator reads from it.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace kubedist::trainingjob {

// The volume names the operator gives its own volumes (the launcher's emptyDir, the namespace's rendezvous Secret,
// an earlier operator's per-job Secret) and the directories it mounts them at (render.h's kBinDir, kRdzvSecretDir,
// kNamespaceRdzvDir): a template may use none of them. Other paths under /kubedist stay the user's (the kubectl
// plugin mounts its working directory and pip packages there).
inline constexpr const char* kReservedVolumes[] = {"kubedist-bin", "kubedist-rendezvous", "kubedist-rdzv",
                                                   "kubedist-podinfo"};
inline constexpr const char* kReservedMountDirs[] = {"/kubedist/bin", "/kubedist/rdzv", "/kubedist/rendezvous",
                                                     "/kubedist/podinfo"};
inline constexpr const char* kLauncherContainer = "kubedist-launcher";  // the operator's init container

// Checks spec.template (a core/v1 PodTemplateSpec) before the operator renders pods from it:
//  - every field the operator reads or rewrites has the type Kubernetes gives it (labels and annotations maps of
//    strings; containers, initContainers, volumes, env, envFrom, ports, volumeMounts lists of objects; names,
//    mount paths and terminationMessagePath strings; containerPort an integer), so rendering cannot fail on it;
//  - it keeps the namespace's rendezvous key from the job's author: no volume, projected source, env or envFrom
//    refers to Secret kubedist-rendezvous, no volume or container mount uses a reserved volume name, no mount path
//    lies under /kubedist, and no container is named kubedist-launcher.
// The error names the field ("spec.template.spec.containers[0].env[2].name: must be a string, got 5").
// The CRD's schema and CEL rules refuse the same templates; this covers objects stored before them.
Result<void> check_template(const nlohmann::json& tmpl);

}  // namespace kubedist::trainingjob
