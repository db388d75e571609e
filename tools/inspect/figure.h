#pragma once
// The drawing surface of hkt-plot and hkt-inspect heatmap: cairo, drawing
// straight into a PNG image or an SVG document (chosen up front: replaying a
// cairo recording surface into SVG leaks it in cairo 1.16), with
// text in DejaVu Sans (Debian's fonts-dejavu-core; fontconfig picks another
// sans-serif face when it is missing). Every cairo error and every failed
// write is an hkt::Error naming the file.
#include <cairo.h>

#include <string>

namespace hkt::inspect {

enum class ImageFormat { Png, Svg };

// ".png" or ".svg" (any case); anything else throws naming `who` and the path.
ImageFormat image_format(const std::string& path, const std::string& who);

struct Rgb {
  double r = 0, g = 0, b = 0;
};
constexpr Rgb kBlack{0, 0, 0}, kDarkGrey{0.25, 0.25, 0.25}, kGridGrey{0.9, 0.9, 0.9}, kMaskGrey{0.8, 0.8, 0.8};

enum class Align { Left, Center, Right };

class Figure {
 public:
  // width × height pixels of the PNG (points of the SVG), on white.
  Figure(double width, double height, ImageFormat format = ImageFormat::Png);
  ~Figure();
  Figure(const Figure&) = delete;
  Figure& operator=(const Figure&) = delete;

  double width() const { return width_; }
  double height() const { return height_; }
  ImageFormat format() const { return format_; }
  cairo_t* cr() const { return cr_; }

  // UTF-8 text anchored at (x, y): horizontally by `align`, vertically centred
  // on y; `angle` in radians turns it about the anchor (−π/2: bottom to top).
  void text(double x, double y, const std::string& text, double size, Align align = Align::Left,
            Rgb colour = kBlack, double angle = 0, bool bold = false);
  double text_width(const std::string& text, double size, bool bold = false);

  void line(double x0, double y0, double x1, double y1, Rgb colour, double width = 1);
  void rectangle(double x, double y, double w, double h, Rgb colour, double line_width = 1);  // outline
  void fill_rectangle(double x, double y, double w, double h, Rgb colour);

  // The encoded file; the drawing ends here (later calls return the same
  // bytes). Throws on a cairo error.
  const std::string& encode();
  // Writes encode() atomically (io/files.h) to a path whose extension is
  // the figure's format; errors start with `who` and name the path and the reason.
  void save(const std::string& path, const std::string& who);

 private:
  void set_font(double size, bool bold);
  double width_, height_;
  ImageFormat format_;
  std::string bytes_;  // the SVG as cairo streams it; the PNG at encode()
  bool encoded_ = false;
  cairo_surface_t* surface_;
  cairo_t* cr_;
};

}  // namespace hkt::inspect
