// The working directory as a job ships it: the files no .kubedistignore/.gitignore excludes, as a tar archive
// (binary-safe, modes kept) that travels in ConfigMaps of at most kChunkBytes each.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

namespace kubedist::kubectl {

// A ConfigMap holds at most 1 MiB; 768 KiB of archive leaves room for base64 in the request and the metadata.
inline constexpr size_t kChunkBytes = 768 * 1024;
inline constexpr size_t kMaxChunks = 8;
inline constexpr size_t kMaxArchiveBytes = kChunkBytes * kMaxChunks;  // 6 MiB: the documented limit

struct WorkdirArchive {
  std::string tar;
  size_t files = 0;
  std::vector<std::pair<std::string, uint64_t>> sizes;  // every file shipped and its size, largest first
};

// Archives dir (.git is never shipped). Fails with one line on an unreadable file, or when the archive would
// exceed kMaxArchiveBytes (naming the largest files and the two ways out: an ignore file or --image).
Result<WorkdirArchive> archive_workdir(const std::string& dir);

// One tar header block (512 bytes) for an entry; typeflag '0' file, '5' directory, '2' symlink.
Result<std::string> tar_header(const std::string& path, char typeflag, unsigned mode, uint64_t size, int64_t mtime,
                               const std::string& link_target = "");

// The archive cut into chunks of at most kChunkBytes.
std::vector<std::string> split_chunks(const std::string& tar);

}  // namespace kubedist::kubectl
