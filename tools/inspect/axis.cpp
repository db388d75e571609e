#include "tools/inspect/axis.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <set>

namespace hkt::inspect {
namespace {

// Smallest of 1, 2, 5, 10 × 10^k that is at least `rough` (> 0, finite).
double nice_step(double rough) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(rough)));
  for (double factor : {1.0, 2.0, 5.0})
    if (factor * magnitude >= rough) return factor * magnitude;
  return 10 * magnitude;
}

// The 1-2-5 step below `step`: 5 → 2, 2 → 1, 1 → 0.5 (× 10^k).
double smaller_nice_step(double step) {
  const double mantissa = std::round(step / std::pow(10.0, std::floor(std::log10(step))));
  return mantissa == 5 ? step * 0.4 : step * 0.5;
}

// Multiples of `step` inside [low, high]. The count is computed before the
// loop (a step below the values' precision would otherwise repeat a tick forever).
std::vector<double> multiples(double low, double high, double step) {
  std::vector<double> ticks;
  if (!(step > 0) || !std::isfinite(step)) return ticks;
  const double first = std::ceil(low / step), last = std::floor(high / step);
  if (!std::isfinite(first) || !std::isfinite(last) || last - first > Axis::kMaxTicks) return ticks;
  for (double k = first; k <= last; ++k) {
    const double tick = k * step == 0 ? 0.0 : k * step;  // no "-0"
    if (std::isfinite(tick) && tick >= low && tick <= high && (ticks.empty() || tick > ticks.back()))
      ticks.push_back(tick);
  }
  return ticks;
}

// Significant digits that tell tics `step` apart at the ticks' size
// (at least the integer digits below 10^6: 600, not 6e2).
int digits_needed(const std::vector<double>& ticks, double step) {
  double largest = 0;
  for (double tick : ticks) largest = std::max(largest, std::abs(tick));
  if (!(largest > 0) || !(step > 0)) return 1;
  const int magnitude = static_cast<int>(std::floor(std::log10(largest)));
  int digits = std::clamp(magnitude - static_cast<int>(std::floor(std::log10(step))) + 1, 1, 17);
  if (largest >= 1e-4 && largest < 1e6) digits = std::max(digits, magnitude + 1);
  return digits;
}

// Labels with the fewest digits that keep every label different.
std::vector<std::string> tick_labels(const std::vector<double>& ticks, int digits) {
  for (;; ++digits) {
    std::vector<std::string> labels;
    for (double tick : ticks) labels.push_back(format_number(tick, digits));
    if (std::set<std::string>(labels.begin(), labels.end()).size() == labels.size() || digits >= 17) return labels;
  }
}

constexpr int kMaxLabelDigits = 5;  // beyond this, label differences from an offset

void label_ticks(Axis& axis, double step) {
  const int digits = digits_needed(axis.ticks, step);
  if (digits <= kMaxLabelDigits || axis.ticks.size() < 2) {
    axis.labels = tick_labels(axis.ticks, digits);
    return;
  }
  const double offset = axis.ticks[axis.ticks.size() / 2];
  std::vector<double> differences;
  for (double tick : axis.ticks) differences.push_back(tick - offset);
  axis.labels = tick_labels(differences, digits_needed(differences, step));
  axis.offset = (offset < 0 ? "" : "+") + tick_labels({offset}, digits)[0];
}

Axis linear_axis(double low, double high, int target_ticks, double margin) {
  Axis axis;
  const double middle = low / 2 + high / 2;
  // Half the span: a single value, or values closer than a tick label can
  // tell apart, get a span of a millionth of their size (1e-300 around 0).
  const double half = std::max(high / 2 - low / 2, std::max(std::abs(middle) * 1e-6, 1e-300)) * (1 + margin);
  axis.low = std::max(middle - half, -DBL_MAX);
  axis.high = std::min(middle + half, DBL_MAX);
  double step = nice_step((axis.high / 2 - axis.low / 2) / target_ticks * 2);
  axis.ticks = multiples(axis.low, axis.high, step);
  // A step up to 2.5 times the rough one can leave a single tick: the next smaller 1-2-5 step.
  for (int finer = 0; finer < 3 && axis.ticks.size() < 2; ++finer) {
    step = smaller_nice_step(step);
    axis.ticks = multiples(axis.low, axis.high, step);
  }
  label_ticks(axis, step);
  return axis;
}

std::string power_of_ten(int exponent) { return "10" + superscript(exponent); }

// m × 10^k as "0.02" or "20" near 1, else "10⁻⁵" or "2×10⁻⁵".
std::string log_label(int mantissa, int exponent) {
  if (exponent >= -3 && exponent <= 4) return format_number(mantissa * std::pow(10.0, exponent), std::max(1, exponent + 1));
  return mantissa == 1 ? power_of_ten(exponent) : std::to_string(mantissa) + "×" + power_of_ten(exponent);
}

Axis log_axis(double low, double high, int target_ticks, double margin) {
  Axis axis;
  axis.log = true;
  const double kLowest = std::log10(DBL_TRUE_MIN), kHighest = std::log10(DBL_MAX);
  const double e_low = std::log10(low), e_high = std::log10(high);
  const double middle = (e_low + e_high) / 2;
  // At least a factor of two, at most every double.
  const double half = std::min(std::max((e_high - e_low) / 2, 0.15) * (1 + margin), (kHighest - kLowest) / 2);
  // At the ends of the doubles the range keeps its width, shifted inwards.
  const double lo = std::clamp(middle - half, kLowest, kHighest - 2 * half);
  const double hi = std::clamp(middle + half, kLowest + 2 * half, kHighest);
  axis.low = std::pow(10.0, lo);
  axis.high = std::pow(10.0, hi);
  if (!(axis.low > 0)) axis.low = std::nextafter(0.0, 1.0);
  if (!std::isfinite(axis.high) || hi >= kHighest) axis.high = DBL_MAX;
  // Powers of ten every `decades`; with fewer than two of them in the
  // range, the 1-2-5 multiples of each decade, and with fewer than three of
  // those, 1…9 of each.
  std::vector<double> exponents;
  for (double decades = std::max(1.0, std::round(nice_step((hi - lo) / target_ticks))); exponents.size() < 2;
       decades = std::round(smaller_nice_step(decades))) {
    exponents = multiples(lo, hi, decades);
    if (decades <= 1) break;
  }
  for (double k : exponents) {
    axis.ticks.push_back(std::pow(10.0, k));
    axis.labels.push_back(log_label(1, static_cast<int>(k)));
  }
  size_t enough = 2;
  for (const std::vector<int>& mantissas : {std::vector<int>{1, 2, 5}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
    if (axis.ticks.size() >= enough) break;
    enough = 3;
    axis.ticks.clear(), axis.labels.clear();
    for (double k = std::floor(lo); k <= std::ceil(hi); ++k)
      for (int m : mantissas) {
        const double tick = m * std::pow(10.0, k);
        if (tick >= axis.low && tick <= axis.high && std::isfinite(tick) && (axis.ticks.empty() || tick > axis.ticks.back())) {
          axis.ticks.push_back(tick);
          axis.labels.push_back(log_label(m, static_cast<int>(k)));
        }
      }
  }
  return axis;
}

}  // namespace

double Axis::fraction(double value) const {
  if (!std::isfinite(value)) return NAN;
  if (log) {
    if (!(value > 0)) return NAN;
    return (std::log10(value) - std::log10(low)) / (std::log10(high) - std::log10(low));
  }
  return (value / 2 - low / 2) / (high / 2 - low / 2);
}

Axis make_axis(double data_low, double data_high, bool log, int target_ticks, double margin) {
  target_ticks = std::clamp(target_ticks, 2, Axis::kMaxTicks / 2);
  margin = std::clamp(margin, 0.0, 1.0);
  if (data_low > data_high) std::swap(data_low, data_high);
  if (log) {
    if (!(data_low > 0) || !std::isfinite(data_high)) data_low = 1, data_high = 10;
    return log_axis(data_low, data_high, target_ticks, margin);
  }
  if (!std::isfinite(data_low) || !std::isfinite(data_high)) data_low = 0, data_high = 1;
  return linear_axis(data_low, data_high, target_ticks, margin);
}

std::string format_number(double value, int significant) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*g", std::clamp(significant, 1, 17), value);
  std::string out = text;
  const size_t e = out.find('e');
  if (e == std::string::npos) return out;
  // "1e-05" → "1e-5", "2.5e+300" → "2.5e300".
  std::string exponent = out.substr(e + 1);
  const bool negative = exponent[0] == '-';
  exponent.erase(0, exponent.find_first_not_of("+-0"));
  return out.substr(0, e) + "e" + (negative ? "-" : "") + (exponent.empty() ? "0" : exponent);
}

std::string superscript(long long number) {
  static const char* const kDigits[] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
  std::string text = number < 0 ? "⁻" : "";
  for (char digit : std::to_string(number < 0 ? -number : number)) text += kDigits[digit - '0'];
  return text;
}

}  // namespace hkt::inspect
