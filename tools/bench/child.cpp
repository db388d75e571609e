#include "tools/bench/child.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

namespace hkt::bench {

ChildOutput run_self(const std::vector<std::string>& args) {
  ChildOutput result;
  int fds[2];
  if (pipe(fds) != 0) return result.error = "pipe failed", result;
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) return result.error = "fork failed", result;
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) result.output.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!result.ok)
    result.error = WIFSIGNALED(status) ? "child killed by signal " + std::to_string(WTERMSIG(status)) : "child failed";
  return result;
}

}  // namespace hkt::bench
