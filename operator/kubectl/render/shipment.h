// What `run` says it ships before it creates anything: the files and their sizes, what it left home as credentials
// and the links that point out of the directory.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kubectl/render/workdir.h"

namespace kubedist::kubectl {

// At most this many files are named; the rest are counted.
inline constexpr size_t kListedFiles = 10;

// The lines to print (without the "kubectl-kubedist: " prefix of the first), file names made terminal-safe:
//   shipping DIR: N files, SIZE
//     PATH  SIZE            (the kListedFiles largest, largest first)
//     and M more (SIZE)
//   left home, as they look like credentials: .env, .ssh/ (to ship one on purpose, add !PATH to .kubedistignore)
//   N links point out of DIR, shipped as links and not followed (in the pods they resolve there): a -> /x
std::vector<std::string> describe_shipment(const WorkdirArchive& archive, const std::string& dir);

// "512 B", "12.0 KiB", "3.4 MiB", "10.0 GiB".
std::string byte_size(uint64_t bytes);

}  // namespace kubedist::kubectl
