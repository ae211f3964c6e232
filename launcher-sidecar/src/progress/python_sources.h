// The helper's Python files, built into the launcher from launcher-sidecar/python (python_sources.cc is generated
// by CMake from them).
#pragma once

#include <string_view>
#include <utility>
#include <vector>

namespace kubedist::launcher {

// (path below the helper directory, content) of each file: kubedist/progress.py, sitecustomize.py...
const std::vector<std::pair<std::string_view, std::string_view>>& python_sources();

}  // namespace kubedist::launcher
