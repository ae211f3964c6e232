#include "progress/python_helper.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "io/log_mux.h"
#include "progress/python_sources.h"
#include "util/fs_util.h"

namespace kubedist::launcher {

Result<std::string> install_python_helper(const std::string& dir) {
  for (const auto& [name, text] : python_sources()) {
    const std::string path = dir + "/" + std::string(name);
    const std::string parent = path.substr(0, path.rfind('/'));
    if (!make_dirs(parent)) return make_error("cannot create " + parent + ": " + std::strerror(errno));
    const std::string tmp = path + ".tmp";
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return make_error("cannot write " + tmp + ": " + std::strerror(errno));
    const bool ok = write_all(fd, text);
    close(fd);
    if (!ok || rename(tmp.c_str(), path.c_str()) != 0) return make_error("cannot write " + path);
  }
  return dir;
}

void add_progress_env(Env& env, const std::string& address, const std::string& stack_file,
                      const std::string& python_dir, const std::string& request_file) {
  if (address.empty()) return;
  auto set = [&](const char* name, const std::string& value) { env[name] = value; };
  set("KUBEDIST_PROGRESS", address);
  if (!stack_file.empty()) set("KUBEDIST_STACK_FILE", stack_file);
  if (!request_file.empty()) set("KUBEDIST_CHECKPOINT_REQUEST", request_file);
  if (!python_dir.empty()) {
    // Last: the program's own modules (and a package of the same name it installed) come first.
    auto it = env.find("PYTHONPATH");
    env["PYTHONPATH"] = it == env.end() || it->second.empty() ? python_dir : it->second + ":" + python_dir;
  }
}

}  // namespace kubedist::launcher
