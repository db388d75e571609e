#pragma once
// Aligned text tables for terminals: columns padded to their widest cell,
// numbers right-aligned, text left-aligned.
#include <string>
#include <vector>

namespace hkt::inspect {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// printf-style formatting into a std::string ("%.3e", "%.4f", ...).
std::string format(const char* pattern, double value);

}  // namespace hkt::inspect
