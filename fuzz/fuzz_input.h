#pragma once
// Shared by the libFuzzer targets: the readers under test take file paths, so
// each input is written to a file of this process's own scratch folder first
// (tmpfs-backed where /dev/shm exists). Every target calls the reader and
// catches hkt::Error: a crash, a sanitizer report, a hang (-timeout) or an
// allocation over -rss_limit_mb / -malloc_limit_mb is a finding; a clean
// error message is the expected outcome for bad input.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace hkt::fuzz {

inline const std::filesystem::path& scratch_folder() {
  static const std::filesystem::path folder = [] {
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    auto path = base / ("hkt-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    std::atexit([] {  // libFuzzer leaves through exit()
      std::error_code ignored;
      std::filesystem::remove_all(scratch_folder(), ignored);
    });
    return path;
  }();
  return folder;
}

inline void write_file(const std::filesystem::path& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

inline std::string input_file(const uint8_t* data, size_t size, const std::string& name = "input") {
  const auto path = scratch_folder() / name;
  write_file(path, data, size);
  return path.string();
}

}  // namespace hkt::fuzz
