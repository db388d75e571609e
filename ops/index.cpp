// Gathers along one axis and their scatter-add gradients: index_select,
// embedding and upsample share one forward kernel and one backward kernel.
#include "ops/index.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/shape.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

// Rows are copied as bytes, so any dtype can be gathered (token ids too).
void index_select_cpu(const Tensor& x, const Tensor& index, int64_t axis, Tensor& out) {
  visit_index("index_select", index.dtype(), [&](auto index_tag) {
    using I = decltype(index_tag);
    const I* pi = static_cast<const I*>(index.raw_data());
    const AxisSplit split = split_at_axis(x.shape(), axis);
    const int64_t count = index.numel();
    const size_t row_bytes = static_cast<size_t>(split.inner) * dtype_size(x.dtype());
    const char* px = static_cast<const char*>(x.raw_data());
    char* po = static_cast<char*>(out.raw_data());
    const int64_t rows = split.outer * count;
#pragma omp parallel for if (rows * split.inner > HKT_OMP_MIN_WORK)
    for (int64_t row = 0; row < rows; ++row) {
      const int64_t o = row / count, source = static_cast<int64_t>(pi[row % count]);
      char* destination = po + static_cast<size_t>(row) * row_bytes;
      if (source < 0) std::memset(destination, 0, row_bytes);
      else std::memcpy(destination, px + static_cast<size_t>(o * split.extent + source) * row_bytes, row_bytes);
    }
  });
}

// Each thread owns a tile of grad_in's (outer, inner) columns and walks the
// index positions in order, so every sum has a fixed order whatever the
// thread count (no atomics, no per-thread partial sums).
void index_add_cpu(const Tensor& grad_out, const Tensor& index, int64_t axis, Tensor& grad_in) {
  visit_floating("index_add", grad_in.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_index("index_add", index.dtype(), [&](auto index_tag) {
      using I = decltype(index_tag);
      const I* pi = static_cast<const I*>(index.raw_data());
      const T* pg = static_cast<const T*>(grad_out.raw_data());
      T* pd = static_cast<T*>(grad_in.raw_data());
      const AxisSplit split = split_at_axis(grad_in.shape(), axis);
      const int64_t count = index.numel();
      constexpr int64_t tile = 32;
      const int64_t tiles = (split.inner + tile - 1) / tile;
#pragma omp parallel for if (split.outer * count * split.inner > HKT_OMP_MIN_WORK)
      for (int64_t task = 0; task < split.outer * tiles; ++task) {
        const int64_t o = task / tiles, begin = (task % tiles) * tile, end = std::min(begin + tile, split.inner);
        for (int64_t p = 0; p < count; ++p) {
          const int64_t target = static_cast<int64_t>(pi[p]);
          if (target < 0) continue;
          const T* source = pg + (o * count + p) * split.inner;
          T* destination = pd + (o * split.extent + target) * split.inner;
          for (int64_t j = begin; j < end; ++j) destination[j] += source[j];
        }
      }
    });
  });
}

HKT_REGISTER_KERNEL(kernels::index_select, DeviceType::CPU, index_select_cpu);
HKT_REGISTER_KERNEL(kernels::index_add, DeviceType::CPU, index_add_cpu);

// ---- ops ------------------------------------------------------------------

namespace {

// Index values are read on the host: a bad index is an Error on every device.
void check_index_values(const char* op, const Tensor& index, int64_t lowest, int64_t extent, const char* what,
                        const std::string& where) {
  for (int64_t value : index.to_vector<int64_t>())
    check(value >= lowest && value < extent, op, ": ", what, " ", value, " out of range for ", where);
}

std::string axis_str(int64_t axis, const Tensor& x) {
  return "axis " + std::to_string(axis) + " of extent " + std::to_string(x.size(axis)) + " in " +
         shape_str(x.shape());
}

// The gather shared by the ops; arguments are checked, axis normalised.
Tensor gather(const char* op, const Tensor& x, int64_t axis, const Tensor& index) {
  Shape out_shape = x.shape();
  out_shape[axis] = index.numel();
  Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
  dispatch::kernel<IndexSelectKernel>(kernels::index_select, x.device())(x, index, axis, out);
  record(op, {x}, out, [index = index.detach(), shape = x.shape(), axis](const Tensor& g) -> std::vector<Tensor> {
    Tensor grad_in = Tensor::zeros(shape, g.dtype(), g.device());
    dispatch::kernel<IndexAddKernel>(kernels::index_add, g.device())(g, index, axis, grad_in);
    return {grad_in};
  });
  return out;
}

void check_gather_args(const char* op, const Tensor& x, const Tensor& index) {
  check_defined(op, x);
  check_index(op, index);
  check_same_device(op, {x, index});
  check(index.dim() == 1, op, ": index ", index, " is not 1-D");
}

// s^level, saturated once it exceeds T: every longer block maps positions < T alike.
int64_t block_length(int64_t T, int64_t level, int64_t stride) {
  int64_t block = 1;
  for (int64_t l = 0; l < level && block <= T; ++l) block *= stride;
  return block;
}

void check_level_args(const char* op, int64_t T, int64_t level, int64_t stride) {
  check(T >= 0, op, ": sequence length ", T, " is negative");
  check(level >= 0, op, ": level ", level, " is negative");
  check(stride >= 1, op, ": stride ", stride, " must be at least 1");
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  check_gather_args("index_select", x, index);
  axis = normalize_axis("index_select", axis, x.shape());
  check_index_values("index_select", index, 0, x.size(axis), "index", axis_str(axis, x));
  return gather("index_select", x, axis, index);
}

Tensor embedding(const Tensor& weight, const Tensor& tokens) {
  check_defined("embedding", weight, "weight");
  check_floating("embedding", weight);
  check(weight.dim() == 2, "embedding: weight ", weight.shape(), " is not 2-D [vocab, d]");
  check_index("embedding", tokens);
  check_same_device("embedding", {weight, tokens});
  check_index_values("embedding", tokens, 0, weight.size(0), "token", "weight " + shape_str(weight.shape()));
  Shape out_shape = tokens.shape();
  out_shape.push_back(weight.size(1));
  return reshape(gather("embedding", weight, 0, reshape(tokens, {tokens.numel()})), out_shape);
}

Tensor upsample(const Tensor& x, int64_t axis, const Tensor& index_map) {
  check_gather_args("upsample", x, index_map);
  axis = normalize_axis("upsample", axis, x.shape());
  check_index_values("upsample", index_map, -1, x.size(axis), "index map value", axis_str(axis, x));
  return gather("upsample", x, axis, index_map);
}

int64_t level_length(int64_t T, int64_t level, int64_t stride) {
  check_level_args("level_length", T, level, stride);
  // Lengths 0 and 1 are fixed points of ceil(t / s), as is every t when s = 1.
  for (int64_t l = 0; l < level && T > 1 && stride > 1; ++l) T = (T + stride - 1) / stride;
  return T;
}

Tensor query_index_map(int64_t T, int64_t level, int64_t stride, bool causal, Device device) {
  check_level_args("query_index_map", T, level, stride);
  const int64_t block = block_length(T, level, stride);
  std::vector<int64_t> map(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) map[i] = causal ? (i + 1) / block - 1 : i / block;
  return Tensor::from_vector(map, {T}, device);
}

Tensor key_index_map(int64_t T, int64_t level, int64_t stride, Device device) {
  check_level_args("key_index_map", T, level, stride);
  const int64_t block = block_length(T, level, stride);
  std::vector<int64_t> map(static_cast<size_t>(T));
  for (int64_t j = 0; j < T; ++j) map[j] = j / block;
  return Tensor::from_vector(map, {T}, device);
}

}  // namespace hkt
