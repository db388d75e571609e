#include "tools/inspect/metrics_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <sstream>

#include "data/dataset.h"
#include "io/files.h"
#include "io/json.h"

namespace hkt::inspect {

RunCurves read_metrics(const std::string& folder, const std::string& label) {
  const std::string path = (std::filesystem::path(folder) / "metrics.jsonl").string();
  std::istringstream lines(io::read_file_bytes(path, ""));
  RunCurves curves;
  curves.label = label;
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.empty()) continue;
    try {
      Json record = parse_json(line);
      const std::string& type = record.at("type").as_string();
      if (type == "train")
        curves.loss.emplace_back(record.at("step").as_number(), record.at("loss").as_number());
      else if (type == "eval")
        curves.val_accuracy.emplace_back(record.at("step").as_number(), record.at("val_accuracy").as_number());
    } catch (const Error& error) {
      fail(path, ": line ", number, ": ", error.what());
    }
  }
  check(!curves.loss.empty() || !curves.val_accuracy.empty(), path, ": no train or eval lines");
  return curves;
}

std::vector<double> nice_ticks(double low, double high, int count) {
  if (!(high > low)) high = low + 1;
  const double rough = (high - low) / std::max(1, count);
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  double step = magnitude;
  for (double factor : {1.0, 2.0, 5.0, 10.0})
    if (factor * magnitude >= rough) {
      step = factor * magnitude;
      break;
    }
  std::vector<double> ticks;
  for (double k = std::ceil(low / step - 1e-9); k * step <= high + step * 1e-9; ++k) ticks.push_back(k * step);
  return ticks;
}

namespace {

constexpr Color kRunColors[] = {{31, 119, 180}, {214, 39, 40}, {44, 160, 44}, {148, 103, 189},
                                {255, 127, 14}, {23, 190, 207}, {140, 86, 75}, {227, 119, 194}};

std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

// One panel: axes with ticks and labels at (x, y, w, h), a line per run.
void draw_panel(Canvas& canvas, int x, int y, int w, int h, const std::string& title,
                const std::vector<const std::vector<std::pair<double, double>>*>& series) {
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low, y_low = x_low, y_high = -x_low;
  for (const auto* points : series)
    for (auto [step, value] : *points) {
      if (!std::isfinite(value)) continue;
      x_low = std::min(x_low, step), x_high = std::max(x_high, step);
      y_low = std::min(y_low, value), y_high = std::max(y_high, value);
    }
  canvas.text(x + (w - Canvas::text_width(title, 2)) / 2, y - 26, title, kBlack, 2);
  if (!std::isfinite(x_low)) {
    canvas.text(x + 10, y + h / 2, "NO DATA", kBlack);
    return;
  }
  const std::vector<double> x_ticks = nice_ticks(x_low, x_high), y_ticks = nice_ticks(y_low, y_high);
  x_low = std::min(x_low, x_ticks.front()), x_high = std::max(x_high, x_ticks.back());
  y_low = std::min(y_low, y_ticks.front()), y_high = std::max(y_high, y_ticks.back());
  if (x_high == x_low) x_high = x_low + 1;
  if (y_high == y_low) y_high = y_low + 1;
  auto px = [&](double v) { return x + (v - x_low) / (x_high - x_low) * w; };
  auto py = [&](double v) { return y + h - (v - y_low) / (y_high - y_low) * h; };
  for (double t : x_ticks) {
    canvas.line(px(t), y, px(t), y + h, Color{235, 235, 235});
    canvas.line(px(t), y + h, px(t), y + h + 4, kBlack);
    const std::string label = tick_label(t);
    canvas.text(static_cast<int>(px(t)) - Canvas::text_width(label) / 2, y + h + 8, label, kBlack);
  }
  for (double t : y_ticks) {
    canvas.line(x, py(t), x + w, py(t), Color{235, 235, 235});
    canvas.line(x - 4, py(t), x, py(t), kBlack);
    const std::string label = tick_label(t);
    canvas.text(x - 8 - Canvas::text_width(label), static_cast<int>(py(t)) - 3, label, kBlack);
  }
  canvas.line(x, y, x, y + h, kBlack);
  canvas.line(x, y + h, x + w, y + h, kBlack);
  canvas.text(x + w / 2 - Canvas::text_width("STEP") / 2, y + h + 22, "STEP", kBlack);
  for (size_t run = 0; run < series.size(); ++run) {
    const auto& points = *series[run];
    const Color color = kRunColors[run % std::size(kRunColors)];
    for (size_t i = 0; i < points.size(); ++i) {
      if (!std::isfinite(points[i].second)) continue;
      if (i > 0 && std::isfinite(points[i - 1].second))
        canvas.line(px(points[i - 1].first), py(points[i - 1].second), px(points[i].first), py(points[i].second), color, 2);
      if (points.size() == 1) canvas.fill_rect(static_cast<int>(px(points[i].first)) - 2,
                                               static_cast<int>(py(points[i].second)) - 2, 5, 5, color);
    }
  }
}

}  // namespace

Canvas plot_runs(const std::vector<RunCurves>& runs) {
  check(!runs.empty(), "no runs to plot");
  Canvas canvas(PlotLayout::kWidth, PlotLayout::kHeight);
  std::vector<const std::vector<std::pair<double, double>>*> losses, accuracies;
  for (const RunCurves& run : runs) losses.push_back(&run.loss), accuracies.push_back(&run.val_accuracy);
  draw_panel(canvas, 80, 50, 380, 290, "TRAINING LOSS", losses);
  draw_panel(canvas, 580, 50, 380, 290, "VALIDATION ACCURACY", accuracies);
  // Legend: a short line in the run's colour and its label, left to right.
  int x = 80;
  const int y = PlotLayout::kHeight - 30;
  for (size_t run = 0; run < runs.size(); ++run) {
    const Color color = kRunColors[run % std::size(kRunColors)];
    canvas.line(x, y + 7, x + 24, y + 7, color, 3);
    canvas.text(x + 30, y + 1, runs[run].label, kBlack, 2);
    x += 30 + Canvas::text_width(runs[run].label, 2) + 30;
  }
  return canvas;
}

}  // namespace hkt::inspect
