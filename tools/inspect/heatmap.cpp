#include "tools/inspect/heatmap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "tools/inspect/axis.h"

namespace hkt::inspect {

Rgb viridis(double t) {
  static constexpr Rgb kStops[] = {{0.267, 0.005, 0.329}, {0.283, 0.141, 0.458}, {0.254, 0.265, 0.530},
                                   {0.207, 0.372, 0.553}, {0.164, 0.471, 0.558}, {0.128, 0.567, 0.551},
                                   {0.135, 0.659, 0.518}, {0.267, 0.749, 0.441}, {0.478, 0.821, 0.318},
                                   {0.741, 0.873, 0.150}, {0.993, 0.906, 0.144}};
  if (!(t > 0)) t = 0;
  if (t > 1) t = 1;
  const double position = t * (std::size(kStops) - 1);
  const size_t i = std::min(std::size(kStops) - 2, static_cast<size_t>(position));
  const double f = position - static_cast<double>(i);
  const Rgb a = kStops[i], b = kStops[i + 1];
  return {a.r + (b.r - a.r) * f, a.g + (b.g - a.g) * f, a.b + (b.b - a.b) * f};
}

namespace {

using Matrix = std::function<double(int64_t, int64_t)>;  // NaN: masked

constexpr double kHeadColumn = 120, kTitle = 26, kTokenSpace = 46, kBar = 12, kBarLabels = 52, kGap = 18;
constexpr double kHeader = 44, kFooter = 30;

struct Layout {
  int64_t length = 0;
  bool tokens = false;
  double side = 240;  // of each matrix
  double panel_width() const { return kTokenSpace + side + 8 + kBar + kBarLabels; }
  double panel_height() const { return kTitle + side + kTokenSpace; }
};

std::string two_decimals(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

std::string subscript(int64_t n) {
  static const char* const kDigits[] = {"₀", "₁", "₂", "₃", "₄", "₅", "₆", "₇", "₈", "₉"};
  std::string text;
  for (char digit : std::to_string(n)) text += kDigits[digit - '0'];
  return text;
}

// The n × n matrix as nearest-neighbour pixels in a side × side square at (x, y),
// coloured over [low, high] by the bar's axis; masked entries grey.
void paint_matrix(Figure& figure, double x, double y, double side, int64_t n, const Matrix& value, const Axis& scale) {
  cairo_surface_t* image = cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(n), static_cast<int>(n));
  cairo_surface_flush(image);
  unsigned char* pixels = cairo_image_surface_get_data(image);
  const int stride = cairo_image_surface_get_stride(image);
  for (int64_t i = 0; pixels != nullptr && i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double v = value(i, j);
      const Rgb c = std::isnan(v) ? kMaskGrey : viridis(scale.fraction(v));
      auto* pixel = reinterpret_cast<uint32_t*>(pixels + i * stride) + j;
      *pixel = static_cast<uint32_t>(std::lround(c.r * 255)) << 16 | static_cast<uint32_t>(std::lround(c.g * 255)) << 8 |
               static_cast<uint32_t>(std::lround(c.b * 255));
    }
  cairo_surface_mark_dirty(image);
  cairo_t* cr = figure.cr();
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_scale(cr, side / static_cast<double>(n), side / static_cast<double>(n));
  cairo_set_source_surface(cr, image, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
  cairo_rectangle(cr, 0, 0, static_cast<double>(n), static_cast<double>(n));
  cairo_fill(cr);
  cairo_restore(cr);
  cairo_surface_destroy(image);
}

// The vertical colour bar right of a matrix, with its values.
void colour_bar(Figure& figure, double x, double y, double side, const Axis& scale) {
  constexpr int kSteps = 64;
  for (int s = 0; s < kSteps; ++s)
    figure.fill_rectangle(x, y + side * (1 - (s + 1.0) / kSteps), kBar, side / kSteps + 0.5, viridis((s + 0.5) / kSteps));
  figure.rectangle(x, y, kBar, side, kDarkGrey, 0.8);
  for (size_t t = 0; t < scale.ticks.size(); ++t) {
    const double py = y + side * (1 - scale.fraction(scale.ticks[t]));
    figure.line(x + kBar, py, x + kBar + 3, py, kDarkGrey, 0.8);
    figure.text(x + kBar + 5, py, scale.labels[t], 9, Align::Left, kDarkGrey);
  }
}

// Position labels along both axes: the tokens, or every k-th index.
void axis_labels(Figure& figure, double x, double y, const Layout& layout, int64_t n,
                 const std::vector<std::string>* tokens) {
  const double cell = layout.side / static_cast<double>(n);
  const double size = tokens != nullptr ? std::min(10.0, cell * 0.85) : 9;
  int64_t every = 1;  // 1, 2, 5, 10, 20, … positions apart, at least 22 px
  for (int64_t decade = 1; tokens == nullptr && cell * static_cast<double>(every) < 22; decade *= 10)
    for (int64_t multiple : {1, 2, 5})
      if (cell * static_cast<double>(every = multiple * decade) >= 22) break;
  for (int64_t i = 0; i < n; i += every) {
    const std::string label = tokens != nullptr ? (*tokens)[static_cast<size_t>(i)] : std::to_string(i);
    const double centre = (static_cast<double>(i) + 0.5) * cell;
    figure.text(x - 4, y + centre, label, size, Align::Right, kDarkGrey);
    figure.text(x + centre, y + layout.side + 4, label, size, Align::Right, kDarkGrey, -M_PI / 2);
  }
}

void draw_panel(Figure& figure, double x, double y, const Layout& layout, const std::string& title, int64_t n,
                const Matrix& value, const std::vector<std::string>* tokens) {
  double low = std::numeric_limits<double>::infinity(), high = -low;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const double v = value(i, j);
      if (std::isfinite(v)) low = std::min(low, v), high = std::max(high, v);
    }
  const Axis scale = make_axis(low, high, false, 5, 0);
  const double left = x + kTokenSpace, top = y + kTitle;
  figure.text(left + layout.side / 2, y + kTitle / 2, title, 12, Align::Center);
  paint_matrix(figure, left, top, layout.side, n, value, scale);
  figure.rectangle(left, top, layout.side, layout.side, kDarkGrey, 0.8);
  axis_labels(figure, left, top, layout, n, tokens);
  colour_bar(figure, left + layout.side + 8, top, layout.side, scale);
}

}  // namespace

std::unique_ptr<Figure> attention_heatmap(const BlockAttention& a, int64_t block, int64_t example,
                                          const std::vector<std::string>& tokens, ImageFormat format) {
  check(example >= 0 && example < static_cast<int64_t>(a.lengths.size()), "heatmap: example ", example,
        " is outside the batch of ", a.lengths.size());
  Layout layout;
  layout.length = a.lengths[static_cast<size_t>(example)];
  layout.tokens = layout.length <= kMaxTokenLabels && static_cast<int64_t>(tokens.size()) >= layout.length;
  layout.side = layout.tokens ? std::clamp(static_cast<double>(layout.length) * 11, 240.0, 440.0) : 240;
  const double width = kHeadColumn + static_cast<double>(a.levels + 1) * (layout.panel_width() + kGap);
  const double height = kHeader + static_cast<double>(a.heads) * layout.panel_height() + kFooter;
  auto figure = std::make_unique<Figure>(width, height, format);
  figure->text(12, 22,
               "Block " + std::to_string(block) + " · example " + std::to_string(example) + " · length " +
                   std::to_string(layout.length) + " · " + std::to_string(a.levels) +
                   (a.levels == 1 ? " level" : " levels") + (a.causal ? " · causal" : ""),
               16, Align::Left, kBlack, 0, true);
  const std::vector<std::string>* labels = layout.tokens ? &tokens : nullptr;
  for (int64_t h = 0; h < a.heads; ++h) {
    const double y = kHeader + static_cast<double>(h) * layout.panel_height();
    const double middle = y + kTitle + layout.side / 2;
    figure->text(12, middle - 30, "head " + std::to_string(h), 14, Align::Left, kBlack, 0, true);
    figure->text(12, middle - 8, "β = " + two_decimals(a.gates[static_cast<size_t>(h)]), 12);
    for (int64_t l = 0; l < a.levels && a.levels > 1; ++l)
      figure->text(12, middle + 10 + 17 * static_cast<double>(l),
                   "λ" + subscript(l) + " = " + two_decimals(a.level_weights[static_cast<size_t>(h * a.levels + l)]), 12);
    double x = kHeadColumn;
    draw_panel(*figure, x, y, layout, "attention A", layout.length,
               [&](int64_t i, int64_t j) {
                 return a.allowed(example, i, j) ? a.weight(example, h, i, j) : std::numeric_limits<double>::quiet_NaN();
               },
               labels);
    for (int64_t l = 0; l < a.levels; ++l) {
      x += layout.panel_width() + kGap;
      const int64_t n = a.level_lengths[static_cast<size_t>(l)], shown = a.valid_level_length(example, l);
      const std::vector<double>& scores = a.level_scores[static_cast<size_t>(l)];
      const int64_t base = (example * a.heads + h) * n * n;
      draw_panel(*figure, x, y, layout, "level " + std::to_string(l) + " scores S⁽" + superscript(l) + "⁾", shown,
                 [&](int64_t i, int64_t j) { return scores[static_cast<size_t>(base + i * n + j)]; },
                 l == 0 ? labels : nullptr);
    }
  }
  figure->text(12, height - kFooter / 2,
               "Rows: queries, columns: keys. Each panel has its own colour scale (its bar); grey: masked.", 11,
               Align::Left, kDarkGrey);
  return figure;
}

}  // namespace hkt::inspect
