#pragma once
// Attention heat maps: one image per block for one example of the batch. A
// grid with a row per head; column 0 is the attention weights A (SPEC
// section 3), columns 1 … L the level scores S^(l) over the example's valid
// positions. Each panel is coloured over its own range, shown by its colour
// bar; for short examples the tokens label both axes of A and S^(0).
#include <memory>
#include <string>
#include <vector>

#include "tools/inspect/attention_maps.h"
#include "tools/inspect/figure.h"

namespace hkt::inspect {

// Viridis (matplotlib's default colour map) at t in [0, 1] (clamped; NaN → 0).
Rgb viridis(double t);

// Token labels are drawn when the example has at most this many valid positions.
constexpr int64_t kMaxTokenLabels = 48;

// Draws block `block`'s maps of example `example`; `tokens` names the
// example's tokens (empty, or fewer than its length: positions are numbered).
std::unique_ptr<Figure> attention_heatmap(const BlockAttention& attention, int64_t block, int64_t example,
                                          const std::vector<std::string>& tokens = {},
                                          ImageFormat format = ImageFormat::Png);

}  // namespace hkt::inspect
