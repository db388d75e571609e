#pragma once
// The multi-tensor AdamW update: every parameter of one device in one call.
// A backend registers "adamw_step_multi" where one launch for all parameters
// pays (CUDA: a launch per parameter costs more than the update of a small
// one); AdamW::step falls back to "adamw_step" per parameter elsewhere.
#include <vector>

#include "engine/optim.h"

namespace hkt {

// Lists of equal length, entry i being one parameter, its gradient and state.
using AdamWMultiKernel = void(std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                              std::vector<Tensor>& exp_avg, std::vector<Tensor>& exp_avg_sq, const AdamWHyper& hyper);

}  // namespace hkt
