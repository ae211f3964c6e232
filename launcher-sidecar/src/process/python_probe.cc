#include "process/python_probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/fs_util.h"

namespace kubedist::launcher {
namespace {

constexpr const char* kPrintSysPath = "import sys; sys.stdout.write('\\0'.join(sys.path))";
constexpr size_t kMaxAnswer = 1 << 20;

std::vector<std::string> split_nul(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('\0', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> python_sys_path(const PythonInvocation& python, const Env& env,
                                                 std::chrono::milliseconds timeout) {
  auto path_env = env.find("PATH");
  auto program = find_program(python.interpreter, path_env == env.end() ? nullptr : path_env->second.c_str());
  if (!program) return make_error(program.error());
  std::vector<std::string> args = {*program};
  args.insert(args.end(), python.options.begin(), python.options.end());
  args.insert(args.end(), {"-c", kPrintSysPath});
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return make_error(std::string("pipe: ") + std::strerror(errno));
  const pid_t pid = fork();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    return make_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    dup2(out[1], 1);
    const int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, 0);
      dup2(null, 2);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  std::string answer;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{out[0], POLLIN, 0};
    const int ready = left.count() > 0 ? poll(&p, 1, static_cast<int>(left.count())) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = true;
      break;
    }
    char buf[4096];
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
    if (answer.size() > kMaxAnswer) break;
  }
  close(out[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string what = args[0] + " -c 'import sys; print(sys.path)'";
  if (timed_out) return make_error(what + " gave no answer within " + std::to_string(timeout.count()) + " ms");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return make_error(what + " failed (" + (WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                                               : "signal " + std::to_string(WTERMSIG(status))) + ")");
  std::vector<std::string> sys_path = split_nul(answer);
  if (!sys_path.empty() && sys_path[0].empty()) {
    // `python -c` puts "" first where `python SCRIPT` puts the script's directory and `python -m` the current one.
    const auto slash = python.script.rfind('/');
    sys_path[0] = python.script.empty() || slash == std::string::npos ? "."
                  : slash == 0                                        ? "/"
                                                                      : python.script.substr(0, slash);
  }
  return sys_path;
}

}  // namespace kubedist::launcher
