#pragma once
// The scale of one plot axis: the drawn range, "nice" tick values and their
// labels, chosen from the data's range alone. Every double goes in (±1e308,
// subnormals, two values one ulp apart, NaN and infinities, which are not
// drawn): the range is finite and non-empty, there are at most kMaxTicks
// ticks, and no arithmetic overflows (spans are computed as halves).
#include <string>
#include <vector>

namespace hkt::inspect {

struct Axis {
  static constexpr int kMaxTicks = 24;
  double low = 0, high = 1;  // the drawn range, low < high (values, also on a log axis)
  bool log = false;          // positions by log10 of the value
  std::vector<double> ticks;         // increasing, inside [low, high]
  std::vector<std::string> labels;   // one per tick, all different
  // Ticks too close for their size to label briefly (1e300 ± 1e294) are
  // labelled as differences from one value, which `offset` names ("+1e300"),
  // as matplotlib's offset text does; else empty.
  std::string offset;

  // Where `value` sits between low (0) and high (1); NaN for a value the axis
  // cannot show (non-finite; not positive on a log axis).
  double fraction(double value) const;
};

// An axis covering [data_low, data_high] (either order) with `margin` of the
// span added on each side (so lines do not touch the frame) and about
// `target_ticks` ticks at 1, 2 or 5 × 10^k (log: at powers of ten, or at
// 1-2-5 / 1…9 × 10^k when the range spans less than two decades).
// Non-finite bounds (no data) give [0, 1]; a log axis needs data_low > 0 and
// otherwise falls back to [1, 10].
Axis make_axis(double data_low, double data_high, bool log = false, int target_ticks = 6, double margin = 0.05);

// A tick label with `significant` digits, in %g style with a short exponent
// ("0.25", "1e-05" → "1e-5", "2.5e+300" → "2.5e300").
std::string format_number(double value, int significant);

// A whole number in Unicode superscript digits, "⁻¹²" for -12 (exponents, S⁽²⁾).
std::string superscript(long long number);

}  // namespace hkt::inspect
