#pragma once
// Seeded random numbers. A Generator is a xoshiro256** stream: the same seed
// gives the same numbers on every machine and for every thread count, because
// tensors are filled sequentially on the host and then copied to the device.
#include <cstdint>

#include "engine/tensor.h"

namespace hkt {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(uint64_t seed);

  uint64_t next_u64();
  double uniform();  // in [0, 1), 53 random bits
  double normal();   // standard normal (Box-Muller; the second value is kept)

  // The whole state, for checkpoints: 4 words of xoshiro, the cached normal.
  struct State {
    uint64_t words[4];
    bool has_spare;
    double spare;
  };
  State state() const { return {{s_[0], s_[1], s_[2], s_[3]}, has_spare_, spare_}; }
  void set_state(const State& state);

 private:
  uint64_t s_[4] = {};
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// Tensors of random values (floating dtypes).
Tensor randn(const Shape& shape, Generator& generator, DType dtype = DType::Float32, Device device = Device::cpu(),
             double mean = 0.0, double std = 1.0);
Tensor rand_uniform(const Shape& shape, Generator& generator, double low = 0.0, double high = 1.0,
                    DType dtype = DType::Float32, Device device = Device::cpu());

}  // namespace hkt
