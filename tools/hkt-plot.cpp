// hkt-plot: training loss and validation accuracy against the step, from the
// metrics.jsonl of one or more hkt-train run folders, as one PNG or SVG.
#include <cstdio>

#include "engine/error.h"
#include "io/cli.h"
#include "tools/inspect/metrics_plot.h"

using namespace hkt;

namespace {

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find(',', start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return parts;
}

}  // namespace

int main(int argc, char** argv) {
  cli::Flags flags("hkt-plot", "Plots training loss and validation accuracy of hkt-train runs into one PNG or SVG.");
  flags.add("runs", "", "comma-separated run folders (each with metrics.jsonl)");
  flags.add("labels", "", "comma-separated legend labels (default: the folder names)");
  flags.add("out", "plot.png", "output image: .png or .svg");
  flags.add_switch("log-y", "log-scale y axis for the training loss");
  flags.add("smooth", "0", "EMA weight in [0, 1) for the training loss, as TensorBoard's smoothing (0: none)");
  std::vector<std::string> folders, labels;
  inspect::PlotOptions options;
  inspect::ImageFormat format = inspect::ImageFormat::Png;
  try {
    if (!flags.parse(argc, argv)) return 0;
    hkt::check(flags.was_given("runs"), "hkt-plot: --runs DIR[,DIR...] is required");
    folders = split_commas(flags.get("runs"));
    labels = flags.was_given("labels") ? split_commas(flags.get("labels")) : folders;
    hkt::check(labels.size() == folders.size(), "hkt-plot: ", folders.size(), " runs but ", labels.size(), " labels");
    for (const std::string& folder : folders) hkt::check(!folder.empty(), "hkt-plot: an empty run folder in --runs");
    options.log_loss = flags.get_bool("log-y");
    options.smoothing = flags.get_double("smooth");
    hkt::check(options.smoothing >= 0 && options.smoothing < 1, "hkt-plot: --smooth must be in [0, 1), got ",
               flags.get("smooth"));
    format = inspect::image_format(flags.get("out"), "hkt-plot");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 2;
  }
  try {
    std::vector<inspect::RunCurves> runs;
    for (size_t i = 0; i < folders.size(); ++i) runs.push_back(inspect::read_metrics(folders[i], labels[i]));
    const auto figure = inspect::plot_runs(runs, options, format);
    figure->save(flags.get("out"), "hkt-plot");
    std::printf("wrote %s (%g x %g):", flags.get("out").c_str(), figure->width(), figure->height());
    for (const auto& run : runs)
      std::printf(" %s (%zu loss points, %zu eval points)", run.label.c_str(), run.loss.size(), run.val_accuracy.size());
    std::printf("\n");
    return 0;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
