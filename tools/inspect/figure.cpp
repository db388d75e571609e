#include "tools/inspect/figure.h"

#include <cairo-svg.h>

#include <algorithm>
#include <cctype>

#include "engine/error.h"
#include "io/files.h"
#include "io/json.h"

namespace hkt::inspect {
namespace {

cairo_status_t append_bytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

// cairo refuses a string that is not UTF-8 (and then draws nothing more):
// each byte outside a well-formed sequence becomes U+FFFD, as a browser shows it.
std::string valid_utf8(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t length = json_detail::utf8_sequence_length(text, i);
    out += length == 0 ? std::string("\uFFFD") : text.substr(i, length);
    i += length == 0 ? 1 : length;
  }
  return out;
}

void check_cairo(cairo_status_t status, const char* what) {
  check(status == CAIRO_STATUS_SUCCESS, "figure: ", what, ": ", cairo_status_to_string(status));
}

}  // namespace

ImageFormat image_format(const std::string& path, const std::string& who) {
  std::string extension = path.size() >= 4 ? path.substr(path.size() - 4) : "";
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (extension == ".png") return ImageFormat::Png;
  if (extension == ".svg") return ImageFormat::Svg;
  fail(who.empty() ? path : who + ": " + path, ": the image format comes from the extension, .png or .svg");
}

Figure::Figure(double width, double height, ImageFormat format) : width_(width), height_(height), format_(format) {
  check(width >= 1 && height >= 1 && width <= 16384 && height <= 16384, "figure: size ", width, " x ", height,
        " is outside [1, 16384]");
  surface_ = format == ImageFormat::Svg
                 ? cairo_svg_surface_create_for_stream(append_bytes, &bytes_, width, height)
                 : cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(width), static_cast<int>(height));
  cr_ = cairo_create(surface_);
  cairo_set_source_rgb(cr_, 1, 1, 1);
  cairo_paint(cr_);
  cairo_set_line_cap(cr_, CAIRO_LINE_CAP_ROUND);
  cairo_set_line_join(cr_, CAIRO_LINE_JOIN_ROUND);
}

Figure::~Figure() {
  cairo_destroy(cr_);
  cairo_surface_destroy(surface_);
}

void Figure::set_font(double size, bool bold) {
  cairo_select_font_face(cr_, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
                         bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr_, size);
}

double Figure::text_width(const std::string& text, double size, bool bold) {
  set_font(size, bold);
  cairo_text_extents_t extents;
  cairo_text_extents(cr_, valid_utf8(text).c_str(), &extents);
  return extents.x_advance;
}

void Figure::text(double x, double y, const std::string& text, double size, Align align, Rgb colour, double angle,
                  bool bold) {
  const double width = text_width(text, size, bold);
  cairo_font_extents_t font;
  cairo_font_extents(cr_, &font);
  cairo_save(cr_);
  cairo_translate(cr_, x, y);
  cairo_rotate(cr_, angle);
  const double shift = align == Align::Left ? 0 : align == Align::Center ? width / 2 : width;
  cairo_move_to(cr_, -shift, (font.ascent - font.descent) / 2);
  cairo_set_source_rgb(cr_, colour.r, colour.g, colour.b);
  cairo_show_text(cr_, valid_utf8(text).c_str());
  cairo_restore(cr_);
}

void Figure::line(double x0, double y0, double x1, double y1, Rgb colour, double width) {
  cairo_set_source_rgb(cr_, colour.r, colour.g, colour.b);
  cairo_set_line_width(cr_, width);
  cairo_move_to(cr_, x0, y0);
  cairo_line_to(cr_, x1, y1);
  cairo_stroke(cr_);
}

void Figure::rectangle(double x, double y, double w, double h, Rgb colour, double line_width) {
  cairo_set_source_rgb(cr_, colour.r, colour.g, colour.b);
  cairo_set_line_width(cr_, line_width);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_stroke(cr_);
}

void Figure::fill_rectangle(double x, double y, double w, double h, Rgb colour) {
  cairo_set_source_rgb(cr_, colour.r, colour.g, colour.b);
  cairo_rectangle(cr_, x, y, w, h);
  cairo_fill(cr_);
}

const std::string& Figure::encode() {
  if (encoded_) return bytes_;
  check_cairo(cairo_status(cr_), "drawing");
  cairo_status_t status = CAIRO_STATUS_SUCCESS;
  if (format_ == ImageFormat::Png) status = cairo_surface_write_to_png_stream(surface_, append_bytes, &bytes_);
  cairo_surface_finish(surface_);  // the SVG's last bytes
  if (status == CAIRO_STATUS_SUCCESS) status = cairo_surface_status(surface_);
  check_cairo(status, format_ == ImageFormat::Svg ? "SVG" : "PNG");
  encoded_ = true;
  return bytes_;
}

void Figure::save(const std::string& path, const std::string& who) {
  check(image_format(path, who) == format_, who.empty() ? path : who + ": " + path, ": the figure was drawn as ",
        format_ == ImageFormat::Svg ? "SVG" : "PNG");
  io::write_file_atomic(path, encode(), who);
}

}  // namespace hkt::inspect
