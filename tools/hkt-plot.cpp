// hkt-plot: training loss and validation accuracy against the step, from the
// metrics.jsonl of one or more hkt-train run folders, as one PNG or SVG.
#include <cctype>
#include <cstdio>
#include <filesystem>
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
  cli::Flags flags("hkt-plot", "Plots training loss and validation accuracy of hkt-train runs into one PNG or SVG.");
  flags.add("runs", "", "comma-separated run folders (each with metrics.jsonl)");
  flags.require("runs");
  flags.add("labels", "", "comma-separated legend labels (default: the folder names)");
  flags.add("out", "plot.png", "output image, .png or .svg by its extension (its folder is created)");
  flags.add_switch("log-y", "log-scale y axis for the training loss");
  flags.add_real("smooth", 0, "EMA weight in [0, 1) for the training loss, as TensorBoard's smoothing (0: none)", 0);
  return cli::run(flags, argc, argv, [&] {
    const std::vector<std::string> folders = split_commas(flags.get("runs"));
    const std::vector<std::string> labels = flags.was_given("labels") ? split_commas(flags.get("labels")) : folders;
    cli::usage_check(labels.size() == folders.size(), folders.size(), " runs but ", labels.size(), " labels");
    for (const std::string& folder : folders) cli::usage_check(!folder.empty(), "an empty run folder in --runs");
    inspect::PlotOptions options;
    options.log_loss = flags.get_bool("log-y");
    options.smoothing = flags.get_double("smooth");
    cli::usage_check(options.smoothing < 1, "--smooth must be in [0, 1), got ", flags.get("smooth"));
    const std::filesystem::path out = flags.get("out");
    std::string extension = out.extension().string();
    for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    cli::usage_check(extension == ".png" || extension == ".svg", "--out ", out.string(),
                     ": the image format comes from the extension, .png or .svg");
    std::vector<inspect::RunCurves> runs;
    for (size_t i = 0; i < folders.size(); ++i) runs.push_back(inspect::read_metrics(folders[i], labels[i]));
    const auto figure = inspect::plot_runs(runs, options, inspect::image_format(out.string(), ""));
    if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
    figure->save(out.string(), "");
    std::printf("wrote %s (%g x %g):", out.c_str(), figure->width(), figure->height());
    for (const auto& run : runs)
      std::printf(" %s (%zu loss points, %zu eval points)", run.label.c_str(), run.loss.size(), run.val_accuracy.size());
    std::printf("\n");
    return 0;
  });
}
