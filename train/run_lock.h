#pragma once
// One process at a time in a run folder: an exclusive flock on OUT/.lock,
// which holds the owner's process id. A second hkt-train on the same
// folder (a fresh run or a second --resume) is refused, naming the process
// that holds it. The kernel drops the lock when its holder ends, however it
// ends (SIGKILL included), so a crashed run never leaves a stale lock.
#include <string>

namespace hkt::models {

class RunLock {
 public:
  // Throws hkt::Error starting with `who` when another process holds it.
  RunLock(const std::string& folder, const std::string& who);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

// The run's files already in `folder` ("config.json, checkpoint.safetensors"),
// "" when it holds no run: a fresh run there would replace them.
std::string run_files_in(const std::string& folder);

}  // namespace hkt::models
