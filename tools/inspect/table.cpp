#include "tools/inspect/table.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace hkt::inspect {
namespace {

bool looks_numeric(const std::string& cell) {
  return !cell.empty() && (std::isdigit(static_cast<unsigned char>(cell[0])) || cell[0] == '-' || cell[0] == '+' ||
                           cell == "nan" || cell == "inf");
}

}  // namespace

std::string Table::str() const {
  std::vector<size_t> widths(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) widths[c] = header_[c].size();
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  auto line = [&](const std::vector<std::string>& cells, bool is_header) {
    std::string out;
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const std::string pad(widths[c] - cell.size(), ' ');
      // Numbers right-aligned; a header sits over its column the same way.
      const bool numeric_column = c > 0 && !rows_.empty() && c < rows_[0].size() && looks_numeric(rows_[0][c]);
      const bool right = c > 0 && (is_header ? numeric_column : looks_numeric(cell));
      out += (c ? "  " : "") + (right ? pad + cell : cell + (c + 1 < widths.size() ? pad : ""));
    }
    out.erase(out.find_last_not_of(' ') + 1);  // an empty last cell leaves no trailing blanks
    return out + "\n";
  };
  std::string out = line(header_, true);
  for (const auto& row : rows_) out += line(row, false);
  return out;
}

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

}  // namespace hkt::inspect
