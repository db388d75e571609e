// hkt-plot: training loss and validation accuracy against the step, from the
// metrics.jsonl of one or more hkt-train run folders, as one PNG.
#include <cstdio>
#include <filesystem>

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
  cli::Flags flags("hkt-plot", "Plots training loss and validation accuracy of hkt-train runs into one PNG.");
  flags.add("runs", "", "comma-separated run folders (each with metrics.jsonl)");
  flags.require("runs");
  flags.add("labels", "", "comma-separated legend labels (default: the folder names)");
  flags.add("out", "plot.png", "output PNG (its folder is created)");
  return cli::run(flags, argc, argv, [&] {
    const std::vector<std::string> folders = split_commas(flags.get("runs"));
    const std::vector<std::string> labels = flags.was_given("labels") ? split_commas(flags.get("labels")) : folders;
    cli::usage_check(labels.size() == folders.size(), folders.size(), " runs but ", labels.size(), " labels");
    for (const std::string& folder : folders) cli::usage_check(!folder.empty(), "an empty run folder in --runs");
    std::vector<inspect::RunCurves> runs;
    for (size_t i = 0; i < folders.size(); ++i) runs.push_back(inspect::read_metrics(folders[i], labels[i]));
    inspect::Canvas canvas = inspect::plot_runs(runs);
    const std::filesystem::path out = flags.get("out");
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    canvas.write_png(out.string());
    std::printf("wrote %s (%d x %d):", out.c_str(), canvas.width(), canvas.height());
    for (const auto& run : runs)
      std::printf(" %s (%zu loss points, %zu eval points)", run.label.c_str(), run.loss.size(), run.val_accuracy.size());
    std::printf("\n");
    return 0;
  });
}
