// The working directory as a job ships it: the files no .kubedistignore/.gitignore excludes and that do not look
// like credentials, as a tar archive (binary-safe, modes and symbolic links kept, no link followed) that travels in
// ConfigMaps of at most kChunkBytes each.
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
// A .gitignore or .kubedistignore larger than this is refused rather than read.
inline constexpr size_t kMaxIgnoreFileBytes = 1024 * 1024;

struct WorkdirArchive {
  std::string tar;
  size_t files = 0;
  std::vector<std::pair<std::string, uint64_t>> sizes;  // every file shipped and its size, largest first
  std::vector<std::string> withheld;       // left home as they look like credentials ("d/" for a directory)
  std::vector<std::string> outside_links;  // "link -> target" for each link that resolves out of the directory
};

// Archives dir (.git is never shipped; credential-like files only through a '!' rule of a .kubedistignore). Sizes
// come from lstat() before any file is read, so nothing is read once the archive would exceed kMaxArchiveBytes.
// A symbolic link is shipped as a link, never followed: one to an absolute path inside dir is made relative so
// that it works in the pods; one that resolves out of dir is kept as it is (it resolves in the pod, not here).
// Fails with one line on an unreadable file, a file that changed while read, or when the archive would exceed
// kMaxArchiveBytes (naming the largest files and the two ways out: an ignore file or --image).
Result<WorkdirArchive> archive_workdir(const std::string& dir);

// One tar header block (512 bytes) for an entry; typeflag '0' file, '5' directory, '2' symlink.
Result<std::string> tar_header(const std::string& path, char typeflag, unsigned mode, uint64_t size, int64_t mtime,
                               const std::string& link_target = "");

// The archive cut into chunks of at most kChunkBytes.
std::vector<std::string> split_chunks(const std::string& tar);

}  // namespace kubedist::kubectl
