#pragma once
// hkt-plot's work: read the metrics.jsonl of runs (docs/TOOLS.md, hkt-train)
// and draw training loss and validation accuracy against the step, a
// labelled line per run, in one PNG.
#include <string>
#include <vector>

#include "tools/inspect/raster.h"

namespace hkt::inspect {

struct RunCurves {
  std::string label;
  std::vector<std::pair<double, double>> loss;          // (step, train loss)
  std::vector<std::pair<double, double>> val_accuracy;  // (step, validation accuracy)
};

// Parses FOLDER/metrics.jsonl; throws naming the file and line of a bad line.
RunCurves read_metrics(const std::string& folder, const std::string& label);

// "Nice" tick values (1, 2 or 5 × 10^k apart) covering [low, high], about `count` of them.
std::vector<double> nice_ticks(double low, double high, int count = 5);

struct PlotLayout {
  static constexpr int kWidth = 1000, kHeight = 440;
};
Canvas plot_runs(const std::vector<RunCurves>& runs);

}  // namespace hkt::inspect
