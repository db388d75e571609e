#include "tools/inspect/heatmap.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>

namespace hkt::inspect {
namespace {

// Paints an n × n matrix, value(i, j), into a kCell square at (x, y): rows are
// queries (top to bottom), columns keys; masked entries (NaN) are grey.
void paint_matrix(Canvas& canvas, int x, int y, int64_t n, const std::function<double(int64_t, int64_t)>& value) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double v = value(i, j);
      if (v == v) low = std::min(low, v), high = std::max(high, v);
    }
  const double span = high > low ? high - low : 1.0;
  const int cell = HeatmapLayout::kCell;
  for (int py = 0; py < cell; ++py)
    for (int px = 0; px < cell; ++px) {
      const int64_t i = py * n / cell, j = px * n / cell;
      const double v = value(i, j);
      canvas.set(x + px, y + py, v == v ? colormap((v - low) / span) : kGrey);
    }
}

std::string two_decimals(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

}  // namespace

Canvas attention_heatmap(const BlockAttention& a, int64_t block, int64_t example) {
  check(example >= 0 && example < static_cast<int64_t>(a.lengths.size()), "heatmap: example ", example,
        " is outside the batch of ", a.lengths.size());
  Canvas canvas(HeatmapLayout::width(a.levels), HeatmapLayout::height(a.heads));
  const int cell = HeatmapLayout::kCell, gap = HeatmapLayout::kGap, left = HeatmapLayout::kLeft;
  const int64_t valid = a.lengths[static_cast<size_t>(example)];
  canvas.text(8, 8,
              "BLOCK " + std::to_string(block) + "  EXAMPLE " + std::to_string(example) + "  LENGTH " +
                  std::to_string(valid) + "  LEVELS " + std::to_string(a.levels) + (a.causal ? "  CAUSAL" : ""),
              kBlack, 2);
  canvas.text(left, HeatmapLayout::kTop - 12, "ATTENTION A", kBlack);
  for (int64_t l = 0; l < a.levels; ++l)
    canvas.text(left + static_cast<int>(l + 1) * (cell + gap), HeatmapLayout::kTop - 12,
                "LEVEL " + std::to_string(l) + " SCORES", kBlack);
  for (int64_t h = 0; h < a.heads; ++h) {
    const int y = HeatmapLayout::kTop + static_cast<int>(h) * (cell + gap);
    canvas.text(8, y + 4, "HEAD " + std::to_string(h), kBlack, 2);
    canvas.text(8, y + 26, "BETA " + two_decimals(a.gates[static_cast<size_t>(h)]), kBlack);
    for (int64_t l = 0; l < a.levels && a.levels > 1; ++l)
      canvas.text(8, y + 40 + 12 * static_cast<int>(l),
                  "LAMBDA" + std::to_string(l) + " " +
                      two_decimals(a.level_weights[static_cast<size_t>(h * a.levels + l)]),
                  kBlack);
    paint_matrix(canvas, left, y, valid, [&](int64_t i, int64_t j) {
      return a.allowed(example, i, j) ? a.weight(example, h, i, j) : std::numeric_limits<double>::quiet_NaN();
    });
    for (int64_t l = 0; l < a.levels; ++l) {
      const int64_t n = a.level_lengths[static_cast<size_t>(l)], shown = a.valid_level_length(example, l);
      const std::vector<double>& scores = a.level_scores[static_cast<size_t>(l)];
      const int64_t base = (example * a.heads + h) * n * n;
      paint_matrix(canvas, left + static_cast<int>(l + 1) * (cell + gap), y, shown,
                   [&](int64_t i, int64_t j) { return scores[static_cast<size_t>(base + i * n + j)]; });
    }
  }
  canvas.text(8, canvas.height() - 16, "EACH CELL: ITS MIN (DARK) TO MAX (YELLOW); GREY: MASKED", kBlack);
  return canvas;
}

}  // namespace hkt::inspect
