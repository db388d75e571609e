#pragma once
// A scratch folder for the data-set tests, removed at the end of the test;
// unique per process and per instance, so parallel ctest runs do not collide.
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <unistd.h>

namespace hkt::testing {

class TempDir {
 public:
  TempDir() {
    static int instances = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("hkt-data-test-" + std::to_string(::getpid()) + "-" + std::to_string(instances++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Writes `content` to `name` (folders created as needed); returns the full path.
  std::string write(const std::string& name, const std::string& content) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return file.string();
  }

 private:
  std::filesystem::path path_;
};

}  // namespace hkt::testing
