#pragma once
// Whole files in and out, for every reader and writer of the library: the
// data sets, safetensors files and checkpoints, a run's config and metrics.
// Every write is checked: a failure is an hkt::Error naming the file and
// the reason (errno), never a silently shorter file.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace hkt::io {

// A whole file, at most max_bytes (checked against its size before
// allocating). Messages start with the path, after `who` when not empty.
// Only regular files are read: a FIFO, a device or a folder is refused
// without opening it for long (a FIFO would block until a writer came).
std::string read_file_bytes(const std::string& path, const std::string& who, uint64_t max_bytes = uint64_t{1} << 32);

// Opens `path` for reading, refusing anything but a regular file (see
// read_file_bytes); returns the descriptor, which the caller closes.
int open_regular_file(const std::string& path, const std::string& who);

// A file written so that a crash leaves the old file at `path` or the new
// one, never a mix: the bytes go to a temporary file in the same folder
// (rename is atomic only within one file system); commit() fsyncs it, so the
// new name never points at unwritten blocks after a power loss, renames it
// over `path` and fsyncs the folder, so the rename itself lasts. A writer
// dropped before commit() (an error on the way) removes its temporary file.
// Only a regular file (or a new name) is replaced so: a character device
// such as /dev/null is written in place (renaming over it would replace the
// device with a file), a symbolic link's target is replaced (not the link),
// and anything else (a FIFO, a socket, a folder) is refused. Missing parent
// folders are created. Errors are hkt::Error naming the file (after `who`
// when not empty).
class AtomicFile {
 public:
  // `temporary`: the temporary file's name; "" means path + ".tmp.<pid>".
  AtomicFile(std::string path, std::string who, std::string temporary = "");
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  void commit();

 private:
  std::string path_, who_, temporary_;
  int fd_ = -1;
  bool in_place_ = false;  // a character device: no temporary file, no rename
  bool committed_ = false;
};

// An AtomicFile holding `content`.
void write_file_atomic(const std::string& path, const std::string& content, const std::string& who);

// A log that grows a line at a time (a run's metrics.jsonl): opened for
// appending (emptied first with `truncate`), each append() written in full
// or an hkt::Error naming the file and the reason; sync() puts what was
// written on the disk (fsync), so a delayed write error shows there.
class AppendFile {
 public:
  AppendFile(std::string path, std::string who, bool truncate);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void append(std::string_view bytes);
  void sync();
  const std::string& path() const { return path_; }

 private:
  std::string path_, who_;
  int fd_ = -1;
  bool regular_ = true;  // devices (/dev/null) are not synced
};

// Fault injection for tests: while set, every write of the library's
// writers asks `fault(path)` first, and a nonzero answer fails that write
// with that errno (ENOSPC, EIO) as the system call would. Empty: none.
using WriteFault = std::function<int(const std::string& path)>;
void set_write_fault(WriteFault fault);

}  // namespace hkt::io
