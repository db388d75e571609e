#include "engine/random.h"

#include <cmath>
#include <vector>

namespace hkt {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

void Generator::manual_seed(uint64_t seed) {
  for (uint64_t& word : s_) word = splitmix64(seed);
  has_spare_ = false;
  spare_ = 0.0;
}

void Generator::set_state(const State& state) {
  for (int i = 0; i < 4; ++i) s_[i] = state.words[i];
  has_spare_ = state.has_spare;
  spare_ = state.spare;
}

uint64_t Generator::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Generator::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Generator::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = 0.0;
  while (u1 <= 0.0) u1 = uniform();  // log(0) is -inf
  double u2 = uniform();
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = 2.0 * M_PI * u2;
  spare_ = radius * std::sin(angle);
  has_spare_ = true;
  return radius * std::cos(angle);
}

Tensor randn(const Shape& shape, Generator& generator, DType dtype, Device device, double mean, double std) {
  check(is_floating(dtype), "randn: dtype must be floating, got ", dtype_name(dtype));
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = mean + std * generator.normal();
  return Tensor::from_doubles(values, shape, dtype, device);
}

Tensor rand_uniform(const Shape& shape, Generator& generator, double low, double high, DType dtype, Device device) {
  check(is_floating(dtype), "rand_uniform: dtype must be floating, got ", dtype_name(dtype));
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  for (double& v : values) v = low + (high - low) * generator.uniform();
  return Tensor::from_doubles(values, shape, dtype, device);
}

}  // namespace hkt
