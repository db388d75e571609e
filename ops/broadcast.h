#pragma once
// Broadcast indexing shared by the kernels of binary ops and broadcast_to.
#include <cstdint>
#include <vector>

#include "engine/error.h"
#include "ops/common.h"

namespace hkt {

// Element strides of a tensor of shape `in` read as shape `out` (aligned at
// the right): 0 on stretched and missing axes.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);

// Calls fn(row, offset_a, offset_b) for every row (run along the last axis) of
// `out`, where the offsets locate the row's first element in a and b. Rows are
// spread over OpenMP threads; each row is written by one thread only.
template <class Fn>
void for_each_broadcast_row(const Shape& out, const std::vector<int64_t>& strides_a,
                            const std::vector<int64_t>& strides_b, Fn&& fn) {
  const int64_t rank = static_cast<int64_t>(out.size());
  const int64_t row_length = rank == 0 ? 1 : out.back();
  const int64_t numel = shape_numel(out);
  if (numel == 0) return;
  const int64_t rows = numel / row_length;
#pragma omp parallel for if (numel > HKT_OMP_MIN_WORK)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rest = row, offset_a = 0, offset_b = 0;
    for (int64_t axis = rank - 2; axis >= 0; --axis) {
      int64_t coordinate = rest % out[axis];
      rest /= out[axis];
      offset_a += coordinate * strides_a[axis];
      offset_b += coordinate * strides_b[axis];
    }
    fn(row, offset_a, offset_b);
  }
}

}  // namespace hkt
