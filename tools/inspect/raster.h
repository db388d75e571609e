#pragma once
// A tiny RGB raster for the PNGs of hkt-inspect and hkt-plot: filled
// rectangles, lines, text in a built-in 5×7 bitmap font (digits, capitals —
// lower case is drawn as capitals — and . , - _ : = ( ) [ ] / % +), a
// perceptual colour map, and PNG output through stb_image_write.
#include <cstdint>
#include <string>
#include <vector>

namespace hkt::inspect {

struct Color {
  uint8_t r = 0, g = 0, b = 0;
};
constexpr Color kWhite{255, 255, 255}, kBlack{0, 0, 0}, kGrey{200, 200, 200};

// Viridis-like colour for t in [0, 1] (clamped); dark purple → yellow.
Color colormap(double t);

class Canvas {
 public:
  Canvas(int width, int height, Color background = kWhite);

  int width() const { return width_; }
  int height() const { return height_; }
  Color at(int x, int y) const;
  void set(int x, int y, Color color);  // ignores points outside the canvas
  void fill_rect(int x, int y, int w, int h, Color color);
  void line(double x0, double y0, double x1, double y1, Color color, int thickness = 1);
  // Text with its top-left corner at (x, y); each glyph is 6·scale px wide, 7·scale tall.
  void text(int x, int y, const std::string& text, Color color, int scale = 1);
  static int text_width(const std::string& text, int scale = 1) { return static_cast<int>(text.size()) * 6 * scale; }

  // Throws hkt::Error naming the path when it cannot be written.
  void write_png(const std::string& path) const;

 private:
  int width_, height_;
  std::vector<uint8_t> pixels_;  // RGB, row-major
};

}  // namespace hkt::inspect
