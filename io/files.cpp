#include "io/files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "engine/error.h"

namespace hkt::io {
namespace {

std::string errno_text() { return std::strerror(errno); }

// "<who>: <path>" or, without a who, the path alone: messages start with the
// user's path, not with the name of a function.
std::string about(const std::string& who, const std::string& path) { return who.empty() ? path : who + ": " + path; }

}  // namespace

std::string read_file_bytes(const std::string& path, const std::string& who, uint64_t max_bytes) {
  std::error_code error;
  const std::string where = about(who, path);
  if (!std::filesystem::is_regular_file(path, error)) fail(where, ": no such file");
  const uintmax_t size = std::filesystem::file_size(path, error);
  if (error) fail(where, ": cannot read its size (", error.message(), ")");
  check(size <= max_bytes, where, ": ", size, " bytes, more than the limit of ", max_bytes);
  std::ifstream in(path, std::ios::binary);
  check(in.good(), where, ": cannot open");
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  check(static_cast<uintmax_t>(in.gcount()) == size, where, ": read ", in.gcount(), " of ", size, " bytes");
  return bytes;
}

AtomicFile::AtomicFile(std::string path, std::string who, std::string temporary)
    : path_(std::move(path)), who_(std::move(who)), temporary_(std::move(temporary)) {
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
  if (!committed_) ::unlink(temporary_.c_str());
}

void AtomicFile::write(const void* data, size_t size) {
  check(fd_ >= 0 && !committed_, about(who_, path_), ": write after commit");
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd_, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) fail(about(who_, path_), ": write failed (", errno_text(), ")");
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

void AtomicFile::commit() {
  check(fd_ >= 0 && !committed_, about(who_, path_), ": committed twice");
  if (::fsync(fd_) != 0) fail(about(who_, path_), ": fsync failed (", errno_text(), ")");
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) fail(about(who_, path_), ": close failed (", errno_text(), ")");
  if (::rename(temporary_.c_str(), path_.c_str()) != 0)
    fail(about(who_, path_), ": cannot rename the temporary file ", temporary_, " over it (", errno_text(), ")");
  committed_ = true;
  const std::string folder = std::filesystem::path(path_).parent_path().string();
  const int directory = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory >= 0) {  // best effort: some file systems refuse to sync a folder
    ::fsync(directory);
    ::close(directory);
  }
}

void write_file_atomic(const std::string& path, const std::string& content, const std::string& who) {
  AtomicFile file(path, who);
  file.write(content);
  file.commit();
}

}  // namespace hkt::io
