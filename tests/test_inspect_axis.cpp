// The plot axes of hkt-plot and the heat maps' colour bars (tools/inspect/axis.h)
// on random and extreme values: every double, the pairs that once crashed or
// hung hkt-plot (1e16, ±1e308, subnormals, two nearly equal huge values,
// NaN and infinities), and the smoothing of tools/inspect/metrics_plot.h.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <set>

#include "tools/inspect/axis.h"
#include "tools/inspect/metrics_plot.h"

using namespace hkt::inspect;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN(), kInf = std::numeric_limits<double>::infinity();

std::vector<double> extreme_values() {
  std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 0.5, 2.31, 1e16, -1e16, 1e308, -1e308, DBL_MAX, -DBL_MAX,
                                DBL_MIN, -DBL_MIN, DBL_TRUE_MIN, -DBL_TRUE_MIN, 1e-320, 1e300, 4.9e-324,
                                std::nextafter(1e300, kInf), std::nextafter(DBL_MAX, 0.0), 1e-5, 123456789.0,
                                9.5, 1.5, kNaN, kInf, -kInf};
  return values;
}

// Any bit pattern, half the time; else a value of a random size and sign.
double random_double(std::mt19937_64& generator) {
  if (generator() % 2 == 0) {
    const uint64_t bits = generator();
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  std::uniform_real_distribution<double> exponent(-320, 308), mantissa(1, 10);
  return (generator() % 2 ? -1 : 1) * mantissa(generator) * std::pow(10.0, exponent(generator));
}

// The properties every axis has, whatever the data.
void check_axis(double a, double b, bool log, int target, double margin) {
  INFO("data " << a << " .. " << b << (log ? " log" : " linear") << ", " << target << " ticks, margin " << margin);
  const Axis axis = make_axis(a, b, log, target, margin);
  REQUIRE(std::isfinite(axis.low));
  REQUIRE(std::isfinite(axis.high));
  REQUIRE(axis.low < axis.high);
  if (log) REQUIRE(axis.low > 0);
  REQUIRE(axis.ticks.size() <= static_cast<size_t>(Axis::kMaxTicks));
  REQUIRE(axis.ticks.size() >= (log ? 1u : 2u));
  REQUIRE(axis.labels.size() == axis.ticks.size());
  for (size_t i = 0; i < axis.ticks.size(); ++i) {
    REQUIRE(axis.ticks[i] >= axis.low);
    REQUIRE(axis.ticks[i] <= axis.high);
    if (i > 0) REQUIRE(axis.ticks[i] > axis.ticks[i - 1]);
    const double f = axis.fraction(axis.ticks[i]);
    REQUIRE(f >= -1e-9);
    REQUIRE(f <= 1 + 1e-9);
    REQUIRE(!axis.labels[i].empty());
    REQUIRE(axis.labels[i].size() <= 16);  // fits beside a plot
  }
  REQUIRE(std::set<std::string>(axis.labels.begin(), axis.labels.end()).size() == axis.labels.size());
  // The data lies inside the drawn range.
  for (double v : {a, b})
    if (std::isfinite(v) && (!log || v > 0) && std::isfinite(a) && std::isfinite(b) && (!log || (a > 0 && b > 0))) {
      const double f = axis.fraction(v);
      REQUIRE(f >= -1e-9);
      REQUIRE(f <= 1 + 1e-9);
    }
  REQUIRE(std::isnan(axis.fraction(kNaN)));
  REQUIRE(std::isnan(axis.fraction(kInf)));
}

}  // namespace

TEST_CASE("axes hold their properties on every pair of extreme values") {
  const std::vector<double> values = extreme_values();
  for (double a : values)
    for (double b : values)
      for (bool log : {false, true}) check_axis(a, b, log, 6, 0.05);
}

TEST_CASE("axes hold their properties on random doubles, tick counts and margins") {
  std::mt19937_64 generator(20261203);
  for (int trial = 0; trial < 20000; ++trial) {
    const double a = random_double(generator);
    // Half the time b is close to a (a few ulps to a few percent away).
    const double b = trial % 2 ? random_double(generator)
                               : a * (1 + std::ldexp(1.0, -static_cast<int>(generator() % 60)));
    check_axis(a, b, trial % 3 == 0, 2 + static_cast<int>(generator() % 11), (generator() % 3) * 0.05);
  }
}

TEST_CASE("ticks are 1, 2 or 5 times a power of ten, labelled briefly") {
  Axis axis = make_axis(0, 600, false, 6, 0);
  CHECK(axis.ticks == std::vector<double>{0, 100, 200, 300, 400, 500, 600});
  CHECK(axis.labels == std::vector<std::string>{"0", "100", "200", "300", "400", "500", "600"});
  axis = make_axis(0.11, 0.29, false, 4, 0);
  CHECK(axis.labels == std::vector<std::string>{"0.15", "0.2", "0.25"});
  axis = make_axis(1e300, std::nextafter(1e300, kInf), false, 6, 0.05);
  CHECK(axis.offset == "+1e300");  // differences from 1e300, as matplotlib's offset text
  CHECK(axis.labels[axis.labels.size() / 2] == "0");
  axis = make_axis(1e-3, 10, true, 6, 0);
  CHECK(axis.labels == std::vector<std::string>{"0.001", "0.01", "0.1", "1", "10"});
  axis = make_axis(1e-30, 1e30, true, 6, 0);
  CHECK(axis.labels.front() == "10⁻³⁰");
  axis = make_axis(0.7, 2.8, true, 6, 0);  // under a decade: 1…9 multiples
  CHECK(axis.labels == std::vector<std::string>{"0.7", "0.8", "0.9", "1", "2"});
  CHECK(format_number(1e-5, 3) == "1e-5");
  CHECK(format_number(2.5e300, 3) == "2.5e300");
  CHECK(format_number(-0.25, 3) == "-0.25");
}

TEST_CASE("smoothing is TensorBoard's debiased EMA and passes non-finite values through") {
  const Series constant = {{1, 3.0}, {2, 3.0}, {3, 3.0}};
  for (auto [step, value] : smooth(constant, 0.9)) CHECK(value == Approx(3.0));
  const Series raw = {{1, 1.0}, {2, kNaN}, {3, 2.0}, {4, 1e308}, {5, -1e308}};
  const Series unsmoothed = smooth(raw, 0);
  CHECK(unsmoothed[0].second == 1.0);
  CHECK(std::isnan(unsmoothed[1].second));
  CHECK(unsmoothed[4].second == -1e308);
  const Series ema = smooth(raw, 0.5);
  CHECK(ema[0].second == 1.0);                        // debiased: the first value itself
  CHECK(ema[2].second == Approx((0.25 + 1.0) / 0.75));  // (0.5·0.5·1 + 0.5·2) / (1 − 0.5²)
  CHECK(std::isfinite(ema[3].second));
  CHECK(std::isfinite(ema[4].second));
  CHECK_THROWS_WITH(smooth(raw, 1), Catch::Contains("[0, 1)"));
  CHECK_THROWS_WITH(smooth(raw, kNaN), Catch::Contains("[0, 1)"));
}
