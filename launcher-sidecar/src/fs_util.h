// Small file-system helpers: mkdir -p, rm -r, read a file's beginning.
#pragma once

#include <string>

namespace kubedist::launcher {

bool make_dirs(const std::string& path);
void remove_tree(const std::string& path);
// Up to max_bytes of the file, or "" when it cannot be read.
std::string read_file_prefix(const std::string& path, size_t max_bytes);

}  // namespace kubedist::launcher
