#include "tools/inspect/metrics_plot.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "io/files.h"
#include "io/json.h"
#include "tools/inspect/axis.h"

namespace hkt::inspect {

RunCurves parse_metrics(std::string_view text, const std::string& path, const std::string& label) {
  RunCurves curves;
  curves.label = label;
  auto number = [](const Json& record, const char* key) {
    const Json& value = record.at(key);
    return value.is_null() ? std::numeric_limits<double>::quiet_NaN() : value.as_number();
  };
  size_t start = 0;
  for (int line_number = 1; start < text.size(); ++line_number) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    const bool complete = end < text.size();
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      const Json record = parse_json(line);
      const std::string& type = record.at("type").as_string();
      if (type == "train") curves.loss.emplace_back(number(record, "step"), number(record, "loss"));
      else if (type == "eval") curves.val_accuracy.emplace_back(number(record, "step"), number(record, "val_accuracy"));
    } catch (const JsonParseError& error) {
      if (complete) fail(path, ": line ", line_number, ": ", error.what());
      // else: the run was cut off while writing its last line; what came before is drawn.
    } catch (const Error& error) {
      fail(path, ": line ", line_number, ": ", error.what());
    }
  }
  check(!curves.loss.empty() || !curves.val_accuracy.empty(), path, ": no train or eval lines");
  return curves;
}

RunCurves read_metrics(const std::string& folder, const std::string& label) {
  const std::string path = (std::filesystem::path(folder) / "metrics.jsonl").string();
  return parse_metrics(io::read_file_bytes(path, ""), path, label);
}

Series smooth(const Series& series, double weight) {
  check(weight >= 0 && weight < 1, "smooth: the weight must be in [0, 1), got ", weight);
  Series out;
  double average = 0, unbiased_share = 1;
  for (auto [step, value] : series) {
    if (!std::isfinite(value)) {
      out.emplace_back(step, value);
      continue;
    }
    average = average * weight + (1 - weight) * value;
    unbiased_share *= weight;
    out.emplace_back(step, average / (1 - unbiased_share));
  }
  return out;
}

namespace {

// matplotlib's tab10 cycle.
constexpr Rgb kRunColours[] = {{0.122, 0.467, 0.706}, {1.0, 0.498, 0.055}, {0.173, 0.627, 0.173},
                               {0.839, 0.153, 0.157}, {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294},
                               {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498}, {0.737, 0.741, 0.133},
                               {0.090, 0.745, 0.812}};
Rgb run_colour(size_t run) { return kRunColours[run % std::size(kRunColours)]; }

constexpr size_t kMarkersUpTo = 40;  // points per series; sparser series get a marker at each point
constexpr double kTickFont = 12, kLabelFont = 13, kTitleFont = 15;

struct Panel {
  double x, y, w, h;  // the frame
  std::string title, y_label;
  bool log_y = false;
};

struct Curve {
  const Series* points;
  Rgb colour;
  double alpha = 1, width = 1.8;
  bool markers = false;
  bool derived = false;  // computed from another curve (smoothed): its points are not counted again
};

void marker(cairo_t* cr, double x, double y, Rgb colour) {
  cairo_new_sub_path(cr);
  cairo_arc(cr, x, y, 3.5, 0, 2 * M_PI);
  cairo_set_source_rgb(cr, colour.r, colour.g, colour.b);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
}

// A position on the canvas for an axis fraction, kept near the frame (a value
// outside the axis never reaches cairo as a huge coordinate).
double clamp_fraction(double f) { return std::clamp(f, -0.5, 1.5); }

void draw_curve(Figure& figure, const Panel& panel, const Axis& x_axis, const Axis& y_axis, const Curve& curve) {
  cairo_t* cr = figure.cr();
  cairo_set_source_rgba(cr, curve.colour.r, curve.colour.g, curve.colour.b, curve.alpha);
  cairo_set_line_width(cr, curve.width);
  cairo_new_path(cr);
  bool pen_down = false;
  std::vector<std::pair<double, double>> dots;
  for (auto [step, value] : *curve.points) {
    const double fx = x_axis.fraction(step), fy = y_axis.fraction(value);
    if (std::isnan(fx) || std::isnan(fy)) {
      pen_down = false;  // a gap, as matplotlib leaves for NaN
      continue;
    }
    const double px = panel.x + clamp_fraction(fx) * panel.w, py = panel.y + panel.h - clamp_fraction(fy) * panel.h;
    if (pen_down) cairo_line_to(cr, px, py);
    else cairo_move_to(cr, px, py);
    pen_down = true;
    dots.emplace_back(px, py);
  }
  cairo_stroke(cr);
  if (curve.markers || dots.size() == 1)
    for (auto [px, py] : dots) marker(cr, px, py, curve.colour);
}

// Axes, grid, ticks and labels of a panel, then its curves clipped to the frame.
void draw_panel(Figure& figure, const Panel& panel, const std::vector<Curve>& curves) {
  double x_low = INFINITY, x_high = -INFINITY, y_low = INFINITY, y_high = -INFINITY;
  size_t hidden = 0;
  for (const Curve& curve : curves)
    for (auto [step, value] : *curve.points) {
      if (!std::isfinite(step) || !std::isfinite(value) || (panel.log_y && !(value > 0))) {
        hidden += curve.derived ? 0 : 1;
        continue;
      }
      x_low = std::min(x_low, step), x_high = std::max(x_high, step);
      y_low = std::min(y_low, value), y_high = std::max(y_high, value);
    }
  const Axis x_axis = make_axis(x_low, x_high, false, 6, 0.03), y_axis = make_axis(y_low, y_high, panel.log_y, 6);
  figure.text(panel.x + panel.w / 2, panel.y - 18, panel.title, kTitleFont, Align::Center, kBlack, 0, true);
  for (size_t i = 0; i < x_axis.ticks.size(); ++i) {
    const double px = panel.x + x_axis.fraction(x_axis.ticks[i]) * panel.w;
    figure.line(px, panel.y, px, panel.y + panel.h, kGridGrey);
    figure.line(px, panel.y + panel.h, px, panel.y + panel.h + 5, kDarkGrey);
    figure.text(px, panel.y + panel.h + 16, x_axis.labels[i], kTickFont, Align::Center, kDarkGrey);
  }
  double widest = 0;
  for (size_t i = 0; i < y_axis.ticks.size(); ++i) {
    const double py = panel.y + panel.h - y_axis.fraction(y_axis.ticks[i]) * panel.h;
    figure.line(panel.x, py, panel.x + panel.w, py, kGridGrey);
    figure.line(panel.x - 5, py, panel.x, py, kDarkGrey);
    figure.text(panel.x - 8, py, y_axis.labels[i], kTickFont, Align::Right, kDarkGrey);
    widest = std::max(widest, figure.text_width(y_axis.labels[i], kTickFont));
  }
  if (!x_axis.offset.empty())
    figure.text(panel.x + panel.w, panel.y + panel.h + 34, x_axis.offset, kTickFont, Align::Right, kDarkGrey);
  if (!y_axis.offset.empty()) figure.text(panel.x, panel.y - 6, y_axis.offset, kTickFont, Align::Left, kDarkGrey);
  figure.rectangle(panel.x, panel.y, panel.w, panel.h, kDarkGrey);
  figure.text(panel.x + panel.w / 2, panel.y + panel.h + 36, "step", kLabelFont, Align::Center);
  figure.text(panel.x - 16 - widest, panel.y + panel.h / 2, panel.y_label, kLabelFont, Align::Center, kBlack,
              -M_PI / 2);
  if (hidden > 0)
    figure.text(panel.x + panel.w / 2, panel.y + panel.h + 54,
                std::to_string(hidden) + (hidden == 1 ? " value" : " values") +
                    (panel.log_y ? " not shown (NaN, ±inf or ≤ 0)" : " not shown (NaN or ±inf)"),
                kTickFont - 1, Align::Center, kDarkGrey);
  cairo_t* cr = figure.cr();
  cairo_save(cr);
  cairo_rectangle(cr, panel.x, panel.y, panel.w, panel.h);
  cairo_clip(cr);
  for (const Curve& curve : curves) draw_curve(figure, panel, x_axis, y_axis, curve);
  cairo_restore(cr);
}

// A legend below the panels, centred, wrapped into rows that fit the figure.
double draw_legend(Figure& figure, const std::vector<RunCurves>& runs, double top, bool draw) {
  constexpr double kSample = 28, kSpacing = 26, kRow = 22;
  std::vector<std::vector<size_t>> rows(1);
  std::vector<double> row_widths(1, 0);
  for (size_t run = 0; run < runs.size(); ++run) {
    const double entry = kSample + 6 + figure.text_width(runs[run].label, kLabelFont) + kSpacing;
    if (!rows.back().empty() && row_widths.back() + entry > figure.width() - 40) rows.emplace_back(), row_widths.push_back(0);
    rows.back().push_back(run);
    row_widths.back() += entry;
  }
  if (!draw) return static_cast<double>(rows.size()) * kRow;
  for (size_t r = 0; r < rows.size(); ++r) {
    double x = (figure.width() - (row_widths[r] - kSpacing)) / 2;
    const double y = top + kRow * (static_cast<double>(r) + 0.5);
    for (size_t run : rows[r]) {
      figure.line(x, y, x + kSample, y, run_colour(run), 2.2);
      marker(figure.cr(), x + kSample / 2, y, run_colour(run));
      figure.text(x + kSample + 6, y, runs[run].label, kLabelFont);
      x += kSample + 6 + figure.text_width(runs[run].label, kLabelFont) + kSpacing;
    }
  }
  return static_cast<double>(rows.size()) * kRow;
}

}  // namespace

std::unique_ptr<Figure> plot_runs(const std::vector<RunCurves>& runs, const PlotOptions& options, ImageFormat format) {
  check(!runs.empty(), "no runs to plot");
  double legend_height;
  {
    Figure measure(PlotLayout::kWidth, PlotLayout::kHeight);
    legend_height = draw_legend(measure, runs, 0, false);
  }
  auto figure = std::make_unique<Figure>(PlotLayout::kWidth, PlotLayout::kHeight - 22 + legend_height, format);
  std::vector<Series> smoothed;
  if (options.smoothing > 0)
    for (const RunCurves& run : runs) smoothed.push_back(smooth(run.loss, options.smoothing));
  std::vector<Curve> losses, accuracies;
  for (size_t run = 0; run < runs.size(); ++run) {
    if (smoothed.empty()) {
      losses.push_back({&runs[run].loss, run_colour(run), 1, 1.8, runs[run].loss.size() <= kMarkersUpTo});
    } else {
      losses.push_back({&runs[run].loss, run_colour(run), 0.25, 1.2, false});
      losses.push_back({&smoothed[run], run_colour(run), 1, 1.8, false, true});
    }
    accuracies.push_back({&runs[run].val_accuracy, run_colour(run), 1, 1.8, runs[run].val_accuracy.size() <= kMarkersUpTo});
  }
  std::string loss_title = "Training loss";
  if (options.smoothing > 0) loss_title += " (EMA " + format_number(options.smoothing, 6) + ")";
  constexpr double kTop = 44, kPanelWidth = 420, kPanelHeight = 320;
  draw_panel(*figure, {95, kTop, kPanelWidth, kPanelHeight, loss_title, "loss", options.log_loss}, losses);
  draw_panel(*figure, {95 + kPanelWidth + 150, kTop, kPanelWidth, kPanelHeight, "Validation accuracy", "accuracy"},
             accuracies);
  draw_legend(*figure, runs, kTop + kPanelHeight + 66, true);
  return figure;
}

}  // namespace hkt::inspect
