#include "install.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kubedist::launcher {
namespace {

constexpr const char* kFlag = "--install";
constexpr const char* kInstalledName = "kubedist-launcher";

std::string why(const std::string& what) { return what + ": " + std::strerror(errno); }

// Writes all of `in` to `out`; false with errno set on a failure.
bool copy_fd(int in, int out) {
  char buf[1 << 16];
  while (true) {
    ssize_t n = read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out, buf + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return false;
      done += w;
    }
  }
}

}  // namespace

std::optional<Result<std::string>> install_request(const std::vector<std::string>& args) {
  if (args.empty()) return std::nullopt;
  const std::string& first = args[0];
  std::string dir;
  size_t used = 1;
  if (first == kFlag) {
    if (args.size() < 2) return Result<std::string>(make_error("--install needs a directory"));
    dir = args[1];
    used = 2;
  } else if (first.rfind(std::string(kFlag) + "=", 0) == 0) {
    dir = first.substr(std::strlen(kFlag) + 1);
  } else {
    return std::nullopt;
  }
  if (dir.empty()) return Result<std::string>(make_error("--install needs a directory"));
  if (args.size() > used)
    return Result<std::string>(make_error("--install DIR takes nothing else, got '" + args[used] + "'"));
  return Result<std::string>(dir);
}

Result<std::string> install_self(const std::string& dir, const std::string& self) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return make_error(why("--install: cannot use " + dir));
  if (!S_ISDIR(st.st_mode)) return make_error("--install: " + dir + " is not a directory");

  int in = open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return make_error(why("--install: cannot read this executable (" + self + "; is /proc mounted?)"));
  const std::string target = dir + "/" + kInstalledName;
  std::string temp = dir + "/." + kInstalledName + ".XXXXXX";
  int out = mkostemp(temp.data(), O_CLOEXEC);
  if (out < 0) {
    std::string error = why("--install: cannot create a file in " + dir);
    close(in);
    return make_error(error);
  }
  // Every step must succeed before the rename; on any failure the temporary file goes and the old copy stays.
  std::string error;
  if (!copy_fd(in, out)) {
    error = why("--install: cannot copy " + self + " to " + temp);
  } else if (fchmod(out, 0755) != 0) {
    error = why("--install: cannot make " + temp + " executable");
  } else if (fsync(out) != 0) {
    error = why("--install: cannot flush " + temp);
  }
  close(in);
  if (close(out) != 0 && error.empty()) error = why("--install: cannot write " + temp);
  if (error.empty() && rename(temp.c_str(), target.c_str()) != 0)
    error = why("--install: cannot rename " + temp + " to " + target);
  if (!error.empty()) {
    unlink(temp.c_str());
    return make_error(error);
  }
  return target;
}

}  // namespace kubedist::launcher
