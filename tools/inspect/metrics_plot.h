#pragma once
// hkt-plot's work: read the metrics.jsonl of runs (docs/TOOLS.md, hkt-train)
// and draw training loss and validation accuracy against the step, a
// labelled line per run, as one PNG or SVG.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tools/inspect/figure.h"

namespace hkt::inspect {

using Series = std::vector<std::pair<double, double>>;  // (step, value); values may be NaN or infinite

struct RunCurves {
  std::string label;
  Series loss;          // the train lines
  Series val_accuracy;  // the eval lines
};

// Parses metrics.jsonl text (`path` names it in errors): each line an object
// with "type"; "train" lines need "step" and "loss", "eval" lines "step" and
// "val_accuracy" (numbers; null reads as NaN). Other types are skipped, and
// so is a last line without its newline that does not parse (a run cut off
// mid-write). Throws naming the path and line of a bad line.
RunCurves parse_metrics(std::string_view text, const std::string& path, const std::string& label);
// FOLDER/metrics.jsonl.
RunCurves read_metrics(const std::string& folder, const std::string& label);

// TensorBoard's smoothing: an exponential moving average with weight
// `weight` in [0, 1), debiased at the start; non-finite values pass through
// and do not enter the average.
Series smooth(const Series& series, double weight);

struct PlotOptions {
  bool log_loss = false;  // log-scale y for the training loss
  double smoothing = 0;   // EMA weight for the training loss (0: none); the raw curve stays, faint
};

struct PlotLayout {
  static constexpr double kWidth = 1100, kHeight = 466;
};
std::unique_ptr<Figure> plot_runs(const std::vector<RunCurves>& runs, const PlotOptions& options = {},
                                  ImageFormat format = ImageFormat::Png);

}  // namespace hkt::inspect
