#pragma once
// Learning rate: linear warm-up from 0 over `warmup` steps, then cosine decay
// to `final_fraction` · peak at `total` steps. Step numbers start at 1.
#include <cstdint>

namespace hkt::models {

struct LearningRateSchedule {
  double peak = 1e-3;
  int64_t warmup = 0;
  int64_t total = 1;
  double final_fraction = 0.0;

  double at(int64_t step) const;
};

}  // namespace hkt::models
