#pragma once
// Attention heat maps: one PNG per block for one example of the batch. A grid
// with a row per head; column 0 is the attention weights A (SPEC section 3),
// columns 1 … L the level scores S^(l) over the example's valid positions.
// Each cell is coloured from its own minimum (dark) to its maximum (yellow).
#include <string>

#include "tools/inspect/attention_maps.h"
#include "tools/inspect/raster.h"

namespace hkt::inspect {

struct HeatmapLayout {
  static constexpr int kCell = 160, kGap = 12, kLeft = 150, kTop = 44, kBottom = 24;
  static int width(int64_t levels) { return kLeft + static_cast<int>(levels + 1) * (kCell + kGap); }
  static int height(int64_t heads) { return kTop + static_cast<int>(heads) * (kCell + kGap) + kBottom; }
};

// Draws block `block`'s maps of example `example` (HeatmapLayout's size).
Canvas attention_heatmap(const BlockAttention& attention, int64_t block, int64_t example);

}  // namespace hkt::inspect
