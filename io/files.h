#pragma once
// Whole files in and out, for every reader and writer of the library: the
// data sets, safetensors files and checkpoints, a run's config and metrics.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace hkt::io {

// A whole file, at most max_bytes (checked against its size before
// allocating). Messages start with the path, after `who` when not empty.
std::string read_file_bytes(const std::string& path, const std::string& who, uint64_t max_bytes = uint64_t{1} << 32);

// A file written so that a crash leaves the old file at `path` or the new
// one, never a mix: the bytes go to a temporary file in the same folder
// (rename is atomic only within one file system); commit() fsyncs it, so the
// new name never points at unwritten blocks after a power loss, renames it
// over `path` and fsyncs the folder, so the rename itself lasts. A writer
// dropped before commit() (an error on the way) removes its temporary file.
// Missing parent folders are created. Errors are hkt::Error naming the file
// (after `who` when not empty).
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
  bool committed_ = false;
};

// An AtomicFile holding `content`.
void write_file_atomic(const std::string& path, const std::string& content, const std::string& who);

}  // namespace hkt::io
