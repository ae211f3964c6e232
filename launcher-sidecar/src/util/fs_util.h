// Small file-system helpers: mkdir -p, rm -r, read a file's beginning, find a program as execvp would.
#pragma once

#include <string>

#include "util/result.h"

namespace kubedist::launcher {

bool make_dirs(const std::string& path);
void remove_tree(const std::string& path);
// Up to max_bytes of the file, or "" when it cannot be read.
std::string read_file_prefix(const std::string& path, size_t max_bytes);
// Where execvp would find program: itself when it names a path (has a '/'), else the first executable regular
// file of that name in the directories of path_env ("/bin:/usr/bin" when null, as glibc). The error says why not.
Result<std::string> find_program(const std::string& program, const char* path_env);

}  // namespace kubedist::launcher
