#include "io/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "engine/error.h"

namespace hkt::io {
namespace {

WriteFault& write_fault() {
  static WriteFault fault;
  return fault;
}

std::string errno_text(int error = errno) { return std::strerror(error); }

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

// Writes all `size` bytes to `fd`; returns 0, or the errno of the write that
// failed (a write of 0 bytes counts as ENOSPC, as a full disk reports it).
int write_fully(int fd, const void* data, size_t size, const std::string& path) {
  if (const WriteFault& fault = write_fault())
    if (const int error = fault(path)) return error;
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return errno;
    if (written == 0) return ENOSPC;
    bytes += written;
    size -= static_cast<size_t>(written);
  }
  return 0;
}

void sync_folder_of(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  const int directory = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {  // best effort: some file systems refuse to sync a folder
    ::fsync(directory);
    ::close(directory);
  }
}

// "<who>: <path>" or, without a who, the path alone: messages start with the
// user's path, not with the name of a function.
std::string about(const std::string& who, const std::string& path) { return who.empty() ? path : who + ": " + path; }

}  // namespace

void set_write_fault(WriteFault fault) { write_fault() = std::move(fault); }

int open_regular_file(const std::string& path, const std::string& who) {
  // O_NONBLOCK: opening a FIFO for reading would wait for a writer; for a
  // regular file it changes nothing.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) fail(about(who, path), ": no such file");
    fail(about(who, path), ": cannot open: ", errno_text());
  }
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int error = errno;
    ::close(fd);
    fail(about(who, path), ": cannot stat: ", errno_text(error));
  }
  if (!S_ISREG(status.st_mode)) {
    ::close(fd);
    fail(about(who, path), ": ", kind_of(status.st_mode), ", not a regular file");
  }
  return fd;
}

std::string read_file_bytes(const std::string& path, const std::string& who, uint64_t max_bytes) {
  const std::string where = about(who, path);
  const int fd = open_regular_file(path, who);
  struct stat status {};
  ::fstat(fd, &status);
  const uint64_t size = static_cast<uint64_t>(status.st_size);
  if (size > max_bytes) {
    ::close(fd);
    fail(where, ": ", size, " bytes, more than the limit of ", max_bytes);
  }
  std::string bytes(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = got < 0 ? errno : 0;
      ::close(fd);
      fail(where, ": read ", done, " of ", size, " bytes", error ? ": " + errno_text(error) : "");
    }
    done += static_cast<size_t>(got);
  }
  ::close(fd);
  return bytes;
}

AtomicFile::AtomicFile(std::string path, std::string who, std::string temporary)
    : path_(std::move(path)), who_(std::move(who)), temporary_(std::move(temporary)) {
  struct stat status {};
  if (::stat(path_.c_str(), &status) == 0) {
    if (S_ISCHR(status.st_mode)) {  // /dev/null, /dev/full: written in place
      in_place_ = true;
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd_ < 0) fail(about(who_, path_), ": cannot open for writing: ", errno_text());
      return;
    }
    check(S_ISREG(status.st_mode), about(who_, path_), ": ", kind_of(status.st_mode),
          ", not a regular file; refusing to replace it");
    struct stat link {};
    if (::lstat(path_.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {  // replace the target, keep the link
      const std::string target = std::filesystem::canonical(path_).string();
      if (!temporary_.empty() && temporary_.rfind(path_, 0) == 0) temporary_ = target + temporary_.substr(path_.size());
      path_ = target;
    }
  }
  if (temporary_.empty()) temporary_ = path_ + ".tmp." + std::to_string(::getpid());
  // Every --out of every tool creates its missing parent folders, as hkt-train's always did.
  const std::filesystem::path folder = std::filesystem::path(path_).parent_path();
  std::error_code error;
  if (!folder.empty()) std::filesystem::create_directories(folder, error);
  if (error) fail(about(who_, path_), ": cannot create the folder ", folder.string(), " (", error.message(), ")");
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(about(who_, path_), ": cannot open for writing (", errno_text(), ")");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && !in_place_) ::unlink(temporary_.c_str());
}

void AtomicFile::write(const void* data, size_t size) {
  check(fd_ >= 0 && !committed_, about(who_, path_), ": write after commit");
  if (const int error = write_fully(fd_, data, size, path_))
    fail(about(who_, path_), ": write failed: ", errno_text(error));
}

void AtomicFile::commit() {
  check(fd_ >= 0 && !committed_, about(who_, path_), ": committed twice");
  if (!in_place_ && ::fsync(fd_) != 0) fail(about(who_, path_), ": fsync failed: ", errno_text());
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(about(who_, path_), ": close failed: ", errno_text());
  if (in_place_) {
    committed_ = true;
    return;
  }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0)
    fail(about(who_, path_), ": cannot rename the temporary file ", temporary_, " over it (", errno_text(), ")");
  committed_ = true;
  sync_folder_of(path_);
}

void write_file_atomic(const std::string& path, const std::string& content, const std::string& who) {
  AtomicFile file(path, who);
  file.write(content);
  file.commit();
}

AppendFile::AppendFile(std::string path, std::string who, bool truncate)
    : path_(std::move(path)), who_(std::move(who)) {
  struct stat status {};
  if (::stat(path_.c_str(), &status) == 0) {
    check(S_ISREG(status.st_mode) || S_ISCHR(status.st_mode), about(who_, path_), ": ", kind_of(status.st_mode),
          ", not a regular file");
    regular_ = S_ISREG(status.st_mode);
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate && regular_ ? O_TRUNC : 0), 0644);
  if (fd_ < 0) fail(about(who_, path_), ": cannot open for writing: ", errno_text());
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append(std::string_view bytes) {
  if (const int error = write_fully(fd_, bytes.data(), bytes.size(), path_))
    fail(about(who_, path_), ": write failed: ", errno_text(error));
}

void AppendFile::sync() {
  if (regular_ && ::fsync(fd_) != 0) fail(about(who_, path_), ": fsync failed: ", errno_text());
}

}  // namespace hkt::io
