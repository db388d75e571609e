#pragma once
// The drawing surface of hkt-plot and hkt-inspect heatmap: cairo, recorded
// as vectors and encoded as PNG or SVG by the output file's extension, with
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
  Figure(double width, double height);  // in pixels of the PNG (points of the SVG)
  ~Figure();
  Figure(const Figure&) = delete;
  Figure& operator=(const Figure&) = delete;

  double width() const { return width_; }
  double height() const { return height_; }
  cairo_t* cr() const { return cr_; }

  // UTF-8 text anchored at (x, y): horizontally by `align`, vertically centred
  // on y; `angle` in radians turns it about the anchor (−π/2: bottom to top).
  void text(double x, double y, const std::string& text, double size, Align align = Align::Left,
            Rgb colour = kBlack, double angle = 0, bool bold = false);
  double text_width(const std::string& text, double size, bool bold = false);

  void line(double x0, double y0, double x1, double y1, Rgb colour, double width = 1);
  void rectangle(double x, double y, double w, double h, Rgb colour, double line_width = 1);  // outline
  void fill_rectangle(double x, double y, double w, double h, Rgb colour);

  // The encoded image (white background). Throws on a cairo error.
  std::string encode(ImageFormat format) const;
  // Encodes by the path's extension and writes it atomically (io/files.h);
  // errors start with `who` and name the path and the reason.
  void save(const std::string& path, const std::string& who) const;

 private:
  void set_font(double size, bool bold);
  double width_, height_;
  cairo_surface_t* recording_;
  cairo_t* cr_;
};

}  // namespace hkt::inspect
