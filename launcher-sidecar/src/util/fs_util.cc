#include "util/fs_util.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kubedist::launcher {

bool make_dirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') {
      std::string prefix = path.substr(0, pos);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

void remove_tree(const std::string& path) {
  // Depth first, not following links; a file that cannot be removed is left and the walk goes on.
  auto remove_one = [](const char* p, const struct stat*, int, struct FTW*) {
    std::remove(p);
    return 0;
  };
  nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

std::string read_file_prefix(const std::string& path, size_t max_bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out(max_bytes, '\0');
  size_t got = 0;
  while (got < max_bytes) {
    ssize_t n = read(fd, out.data() + got, max_bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  out.resize(got);
  return out;
}

namespace {

// 0 when path is an executable regular file, else an errno value.
int executable_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return errno;
  if (!S_ISREG(st.st_mode)) return S_ISDIR(st.st_mode) ? EISDIR : EACCES;
  return access(path.c_str(), X_OK) == 0 ? 0 : errno;
}

}  // namespace

Result<std::string> find_program(const std::string& program, const char* path_env) {
  if (program.empty()) return make_error("an empty program name");
  if (program.find('/') != std::string::npos) {
    if (int err = executable_file(program)) return make_error(program + ": " + std::strerror(err));
    return program;
  }
  const std::string path = path_env ? path_env : "/bin:/usr/bin";
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + program;  // an empty entry is the current directory
    if (executable_file(candidate) == 0) return candidate;
    start = end + 1;
  }
  return make_error(program + ": not found on PATH (" + path + ")");
}

}  // namespace kubedist::launcher
