#include "install.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

#include "contract/pod_env.h"
#include "contract/signed_line.h"
#include "rendezvous/auth.h"
#include "util/sha256.h"

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

// Reads a flag's value as "--flag VALUE" or "--flag=VALUE" at args[i]; advances i past it. nullopt: not this flag.
std::optional<std::string> flag_value(const std::vector<std::string>& args, size_t& i, const std::string& flag) {
  if (args[i] == flag) {
    if (i + 1 >= args.size()) return std::string();
    i += 2;
    return args[i - 1];
  }
  if (args[i].rfind(flag + "=", 0) == 0) {
    return args[i++].substr(flag.size() + 1);
  }
  return std::nullopt;
}

// Writes DIR/NAME atomically: `fill` writes a temporary file in DIR (false, errno set, on failure), which gets
// `mode`, is flushed and renamed over any old NAME. On any failure the temporary file goes and the old NAME stays.
// Why DIR cannot take the files ("": it can).
std::string unusable(const std::string& dir) {
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) return why("--install: cannot use " + dir);
  if (!S_ISDIR(st.st_mode)) return "--install: " + dir + " is not a directory";
  return "";
}

Result<std::string> write_atomically(const std::string& dir, const std::string& name, mode_t mode,
                                     const std::string& what, const std::function<bool(int)>& fill) {
  if (const std::string e = unusable(dir); !e.empty()) return make_error(e);
  const std::string target = dir + "/" + name;
  std::string temp = dir + "/." + name + ".XXXXXX";
  int out = mkostemp(temp.data(), O_CLOEXEC);
  if (out < 0) return make_error(why("--install: cannot create a file in " + dir));
  std::string error;
  if (!fill(out)) {
    error = why("--install: cannot write " + what + " to " + temp);
  } else if (fchmod(out, mode) != 0) {
    error = why("--install: cannot set the mode of " + temp);
  } else if (fsync(out) != 0) {
    error = why("--install: cannot flush " + temp);
  }
  if (close(out) != 0 && error.empty()) error = why("--install: cannot write " + temp);
  if (error.empty() && rename(temp.c_str(), target.c_str()) != 0)
    error = why("--install: cannot rename " + temp + " to " + target);
  if (!error.empty()) {
    unlink(temp.c_str());
    return make_error(error);
  }
  return target;
}

}  // namespace

std::optional<Result<InstallRequest>> install_request(const std::vector<std::string>& args) {
  using R = Result<InstallRequest>;
  if (args.empty()) return std::nullopt;
  InstallRequest req;
  size_t i = 0;
  auto dir = flag_value(args, i, kFlag);
  if (!dir) return std::nullopt;
  if (dir->empty()) return R(make_error("--install needs a directory"));
  req.dir = *dir;
  while (i < args.size()) {
    const size_t at = i;
    if (auto from = flag_value(args, i, "--rdzv-secret-from")) {
      if (from->empty()) return R(make_error("--rdzv-secret-from needs a file"));
      req.rdzv_secret_from = *from;
    } else if (auto job = flag_value(args, i, "--rdzv-job")) {
      if (job->empty()) return R(make_error("--rdzv-job needs the job's uid"));
      req.rdzv_job = *job;
    } else {
      return R(make_error("--install DIR takes nothing else but --rdzv-secret-from FILE --rdzv-job UID, got '" +
                          args[at] + "'"));
    }
  }
  if (req.rdzv_secret_from.empty() != req.rdzv_job.empty())
    return R(make_error("--install: --rdzv-secret-from FILE and --rdzv-job UID go together"));
  return R(req);
}

Result<std::string> install_self(const std::string& dir, const std::string& self) {
  if (const std::string e = unusable(dir); !e.empty()) return make_error(e);
  int in = open(self.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return make_error(why("--install: cannot read this executable (" + self + "; is /proc mounted?)"));
  auto r = write_atomically(dir, kInstalledName, 0755, self, [in](int out) { return copy_fd(in, out); });
  close(in);
  return r;
}

Result<std::string> install_job_secret(const std::string& dir, const std::string& from, const std::string& job_uid) {
  auto ns_secret = read_rdzv_secret(from, "--rdzv-secret-from");
  if (!ns_secret) return make_error(ns_secret.error());
  const std::string secret = to_hex(hmac_sha256(*ns_secret, contract::job_secret_input(job_uid)));
  return write_atomically(dir, contract::kJobSecretFileName, 0444, "the job's rendezvous secret", [&](int out) {
    for (size_t done = 0; done < secret.size();) {
      ssize_t w = write(out, secret.data() + done, secret.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return false;
      done += static_cast<size_t>(w);
    }
    return true;
  });
}

}  // namespace kubedist::launcher
