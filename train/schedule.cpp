#include "train/schedule.h"

#include <algorithm>
#include <cmath>

namespace hkt::models {

double LearningRateSchedule::at(int64_t step) const {
  if (warmup > 0 && step <= warmup) return peak * static_cast<double>(step) / static_cast<double>(warmup);
  const int64_t decay_steps = std::max<int64_t>(1, total - warmup);
  const double progress = std::clamp(static_cast<double>(step - warmup) / static_cast<double>(decay_steps), 0.0, 1.0);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return peak * (final_fraction + (1.0 - final_fraction) * cosine);
}

}  // namespace hkt::models
