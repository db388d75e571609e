#pragma once
// Broadcast indexing shared by the kernels of binary ops and broadcast_to.
#include <algorithm>
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
// spread over OpenMP threads in contiguous ranges; each row is written by one
// thread only. Within a range the coordinates advance like an odometer: one
// division per range, not one per row (rows are often only 16 elements).
template <class Fn>
void for_each_broadcast_row(const Shape& out, const std::vector<int64_t>& strides_a,
                            const std::vector<int64_t>& strides_b, Fn&& fn) {
  const int64_t rank = static_cast<int64_t>(out.size());
  const int64_t row_length = rank == 0 ? 1 : out.back();
  const int64_t numel = shape_numel(out);
  if (numel == 0) return;
  const int64_t rows = numel / row_length;
  constexpr int64_t kRowsPerRange = 256;
  const int64_t ranges = (rows + kRowsPerRange - 1) / kRowsPerRange;
#pragma omp parallel for if (numel > HKT_OMP_MIN_WORK)
  for (int64_t range = 0; range < ranges; ++range) {
    const int64_t first = range * kRowsPerRange, last = std::min(rows, first + kRowsPerRange);
    std::vector<int64_t> coordinate(static_cast<size_t>(rank > 1 ? rank - 1 : 0));
    int64_t rest = first, offset_a = 0, offset_b = 0;
    for (int64_t axis = rank - 2; axis >= 0; --axis) {
      coordinate[axis] = rest % out[axis];
      rest /= out[axis];
      offset_a += coordinate[axis] * strides_a[axis];
      offset_b += coordinate[axis] * strides_b[axis];
    }
    for (int64_t row = first; row < last; ++row) {
      fn(row, offset_a, offset_b);
      for (int64_t axis = rank - 2; axis >= 0; --axis) {  // next row: carry through the axes
        offset_a += strides_a[axis];
        offset_b += strides_b[axis];
        if (++coordinate[axis] < out[axis]) break;
        offset_a -= coordinate[axis] * strides_a[axis];
        offset_b -= coordinate[axis] * strides_b[axis];
        coordinate[axis] = 0;
      }
    }
  }
}

}  // namespace hkt
