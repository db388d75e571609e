#include "train/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/error.h"

namespace hkt::models {
namespace {

namespace fs = std::filesystem;

// "process 1234 (hkt-train --resume runs/a)", from the lock file and /proc.
std::string describe_holder(int fd) {
  char text[32] = {};
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  const long pid = got > 0 ? std::strtol(text, nullptr, 10) : 0;
  if (pid <= 0) return "another process";
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string command, word;
  while (std::getline(in, word, '\0') && command.size() < 200)
    command += (command.empty() ? fs::path(word).filename().string() : " " + word);
  return "process " + std::to_string(pid) + (command.empty() ? "" : " (" + command + ")");
}

}  // namespace

RunLock::RunLock(const std::string& folder, const std::string& who) {
  const std::string path = (fs::path(folder) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) fail(who.empty() ? path : who + ": " + path, ": cannot open the run folder's lock: ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    const std::string holder = error == EWOULDBLOCK ? describe_holder(fd_) : "";
    ::close(fd_);
    fd_ = -1;
    if (error != EWOULDBLOCK) fail(who.empty() ? path : who + ": " + path, ": cannot lock the run folder: ", std::strerror(error));
    fail(who.empty() ? folder : who + ": " + folder, " is in use by ", holder, "; wait for it to end or stop it, or choose another --out");
  }
  // For the message of the next one to come; the lock itself is the flock.
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock; the file stays for the next run
}

std::string run_files_in(const std::string& folder) {
  std::string found;
  for (const char* name : {"config.json", "metrics.jsonl", "checkpoint.safetensors"}) {
    std::error_code error;
    if (fs::symlink_status(fs::path(folder) / name, error).type() != fs::file_type::not_found && !error)
      found += (found.empty() ? "" : ", ") + std::string(name);
  }
  return found;
}

}  // namespace hkt::models
