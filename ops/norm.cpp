// layer_norm: forward, fused backward and CPU kernels (llm.c's
// layernorm_forward / layernorm_backward, with a deterministic reduction of
// the parameter gradients).
#include "ops/norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/dispatch.h"
#include "ops/common.h"
#include "ops/mask.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {

// Rows per block: of the backward's parameter-gradient reduction, a constant
// so that the blocks and the order they are summed in do not depend on the
// thread count; the forward walks the same blocks. Runs of 8 blocks go to
// threads as they come free (schedule(dynamic, 8)): the masked form's padded
// rows are quick, and a batch sorted by length gave one thread's contiguous
// half 1.4× the other's valid rows. Blocks dealt round one at a time were
// slower still (the streams of rows broke up).
constexpr int64_t kLayerNormRowsPerBlock = 32;

// Which rows a kernel normalises: all, or with lengths (layer_norm_masked)
// row t of each run of `length` rows only while t < lengths[b]. The kernels
// walk (b, t) along with the row (Cursor): a division per row cost as much
// as a tenth of the row's normalisation.
struct ValidRows {
  const int64_t* lengths = nullptr;
  int64_t length = 1;
  struct Cursor {
    const ValidRows& rows;
    int64_t b, t;
    Cursor(const ValidRows& r, int64_t n) : rows(r), b(n / r.length), t(n % r.length) {}
    // Whether the current row is padded; then moves to the next row.
    bool padded_then_next() {
      const bool padded = rows.lengths && t >= rows.lengths[b];
      if (++t == rows.length) t = 0, ++b;
      return padded;
    }
  };
};

ValidRows valid_rows(const Tensor& lengths, const Tensor& x) {
  if (!lengths.defined()) return {};
  return {lengths.data<int64_t>(), x.size(1)};
}

}  // namespace

// mean = Σ x / D,  var = Σ (x − mean)² / D  (two passes: no cancellation),
// rstd = 1 / sqrt(var + eps),  y = (x − mean) · rstd ⊙ weight + bias.
// Saves mean and rstd per row (2 values a row) for the backward. A padded
// row (layer_norm_masked) is 0, with mean and rstd 0.
void layer_norm_rows_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, const ValidRows& rows_in,
                         Tensor& out, Tensor& mean, Tensor& rstd) {
  visit_floating("layer_norm", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    const T* w = static_cast<const T*>(weight.raw_data());
    const T* b = static_cast<const T*>(bias.raw_data());
    T* po = static_cast<T*>(out.raw_data());
    T* pm = static_cast<T*>(mean.raw_data());
    T* pr = static_cast<T*>(rstd.raw_data());
    const int64_t width = weight.numel(), rows = mean.numel();
    const int64_t blocks = (rows + kLayerNormRowsPerBlock - 1) / kLayerNormRowsPerBlock;
#pragma omp parallel for schedule(dynamic, 8) if (rows * width > HKT_OMP_MIN_WORK)
    for (int64_t block = 0; block < blocks; ++block) {
      const int64_t end = std::min(rows, (block + 1) * kLayerNormRowsPerBlock);
      ValidRows::Cursor cursor(rows_in, block * kLayerNormRowsPerBlock);
      for (int64_t n = block * kLayerNormRowsPerBlock; n < end; ++n) {
        const T* row = px + n * width;
        T* y = po + n * width;
        if (cursor.padded_then_next()) {
          std::fill(y, y + width, T(0));
          pm[n] = pr[n] = T(0);
          continue;
        }
        const T m = lane_sum<T>(width, [&](int64_t d) { return row[d]; }) / static_cast<T>(width);
        const T squares = lane_sum<T>(width, [&](int64_t d) { return (row[d] - m) * (row[d] - m); });
        const T s = T(1) / std::sqrt(squares / static_cast<T>(width) + static_cast<T>(eps));
        for (int64_t d = 0; d < width; ++d) y[d] = (row[d] - m) * s * w[d] + b[d];
        pm[n] = m;
        pr[n] = s;
      }
    }
  });
}

// With x̂ = (x − mean) · rstd and dx̂ = g ⊙ weight, per row:
//   dx = rstd · (dx̂ − mean(dx̂) − x̂ · mean(dx̂ ⊙ x̂))
//   dweight = Σ_rows g ⊙ x̂,  dbias = Σ_rows g
// Each block of rows sums its own partial dweight/dbias; the blocks are then
// added in block order.
// A padded row (layer_norm_masked) passes no gradient: its dx is 0, and it adds nothing to dweight or dbias.
void layer_norm_rows_backward_cpu(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                  const ValidRows& rows_in, const Tensor& grad_out, Tensor& grad_x,
                                  Tensor& grad_weight, Tensor& grad_bias, bool accumulate) {
  visit_floating("layer_norm_backward", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = static_cast<const T*>(x.raw_data());
    const T* w = static_cast<const T*>(weight.raw_data());
    const T* pm = static_cast<const T*>(mean.raw_data());
    const T* pr = static_cast<const T*>(rstd.raw_data());
    const T* pg = static_cast<const T*>(grad_out.raw_data());
    T* pdx = static_cast<T*>(grad_x.raw_data());
    T* pdw = static_cast<T*>(grad_weight.raw_data());
    T* pdb = static_cast<T*>(grad_bias.raw_data());
    const int64_t width = weight.numel(), rows = mean.numel();
    const int64_t blocks = (rows + kLayerNormRowsPerBlock - 1) / kLayerNormRowsPerBlock;
    // Per block, the partial sums of dweight, then of dbias.
    const PartialSums<T> partials(blocks, 2 * width);
#pragma omp parallel for schedule(dynamic, 8) if (rows * width > HKT_OMP_MIN_WORK)
    for (int64_t block = 0; block < blocks; ++block) {
      T* block_weight = partials[block];
      T* block_bias = block_weight + width;
      const int64_t end = std::min(rows, (block + 1) * kLayerNormRowsPerBlock);
      ValidRows::Cursor cursor(rows_in, block * kLayerNormRowsPerBlock);
      for (int64_t n = block * kLayerNormRowsPerBlock; n < end; ++n) {
        const T* row = px + n * width;
        const T* g = pg + n * width;
        T* dx = pdx + n * width;
        if (cursor.padded_then_next() || row_is_zero(g, width)) {  // dx = 0, nothing for dweight or dbias (ops/common.h)
          if (!accumulate) std::fill(dx, dx + width, T(0));
          continue;
        }
        const T m = pm[n], s = pr[n];
        for (int64_t d = 0; d < width; ++d) {
          block_weight[d] += g[d] * ((row[d] - m) * s);
          block_bias[d] += g[d];
        }
        const T dnorm_mean = lane_sum<T>(width, [&](int64_t d) { return g[d] * w[d]; }) / static_cast<T>(width);
        const T dnorm_xhat_mean =
            lane_sum<T>(width, [&](int64_t d) { return g[d] * w[d] * ((row[d] - m) * s); }) / static_cast<T>(width);
        for (int64_t d = 0; d < width; ++d) {
          const T xhat = (row[d] - m) * s;
          const T term = s * (g[d] * w[d] - dnorm_mean - xhat * dnorm_xhat_mean);
          dx[d] = accumulate ? dx[d] + term : term;
        }
      }
    }
    const T* total = partials.sum();
    std::copy(total, total + width, pdw);
    std::copy(total + width, total + 2 * width, pdb);
  });
}

void layer_norm_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, Tensor& out,
                    Tensor& mean, Tensor& rstd) {
  layer_norm_rows_cpu(x, weight, bias, eps, {}, out, mean, rstd);
}
void layer_norm_backward_cpu(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                             const Tensor& grad_out, Tensor& grad_x, Tensor& grad_weight, Tensor& grad_bias,
                             bool accumulate) {
  layer_norm_rows_backward_cpu(x, weight, mean, rstd, {}, grad_out, grad_x, grad_weight, grad_bias, accumulate);
}
void layer_norm_masked_cpu(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                           const Tensor& lengths, Tensor& out, Tensor& mean, Tensor& rstd) {
  layer_norm_rows_cpu(x, weight, bias, eps, valid_rows(lengths, x), out, mean, rstd);
}
void layer_norm_masked_backward_cpu(const Tensor& x, const Tensor& weight, const Tensor& mean, const Tensor& rstd,
                                    const Tensor& lengths, const Tensor& grad_out, Tensor& grad_x,
                                    Tensor& grad_weight, Tensor& grad_bias, bool accumulate) {
  layer_norm_rows_backward_cpu(x, weight, mean, rstd, valid_rows(lengths, x), grad_out, grad_x, grad_weight,
                               grad_bias, accumulate);
}

HKT_REGISTER_KERNEL(kernels::layer_norm, DeviceType::CPU, layer_norm_cpu);
HKT_REGISTER_KERNEL(kernels::layer_norm_backward, DeviceType::CPU, layer_norm_backward_cpu);
HKT_REGISTER_KERNEL(kernels::layer_norm_masked, DeviceType::CPU, layer_norm_masked_cpu);
HKT_REGISTER_KERNEL(kernels::layer_norm_masked_backward, DeviceType::CPU, layer_norm_masked_backward_cpu);

// ---- ops ------------------------------------------------------------------

namespace {

void check_layer_norm(const char* op, const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  check_floating(op, x);
  check_defined(op, weight, "weight");
  check_defined(op, bias, "bias");
  check_compatible(op, {x, weight, bias});
  check(x.dim() >= 1, op, ": input ", x.shape(), " has no last axis to normalise");
  const int64_t width = x.size(-1);
  check(weight.shape() == Shape{width}, op, ": input ", x.shape(), " but weight ",
        weight.shape());
  check(bias.shape() == Shape{width}, op, ": input ", x.shape(), " but bias ", bias.shape());
  check(width > 0, op, ": empty last axis in input ", x.shape());
  check(eps >= 0, op, ": eps must be >= 0, got ", eps);
}

// The forward and the graph node of both ops; lengths undefined: every row valid.
Tensor layer_norm_node(const char* op, const char* backward_op, const Tensor& x, const Tensor& weight,
                       const Tensor& bias, const Tensor& lengths, double eps) {
  const int64_t rows = x.numel() / x.size(-1);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = Tensor::empty({rows}, x.dtype(), x.device());
  Tensor rstd = Tensor::empty({rows}, x.dtype(), x.device());
  if (lengths.defined())
    dispatch::kernel<LayerNormMaskedKernel>(op, x.device())(x, weight, bias, eps, lengths, out, mean, rstd);
  else
    dispatch::kernel<LayerNormKernel>(op, x.device())(x, weight, bias, eps, out, mean, rstd);
  record(op, {x, weight, bias}, out,
         [backward_op, x = x.detach(), weight = weight.detach(), lengths, mean,
          rstd](const Tensor& g) -> std::vector<Tensor> {
           // dX adds into the gradient x already has (a residual branch's), where autograd hands it over.
           const Tensor sum = take_gradient_sum(0);
           Tensor grad_x = sum.defined() ? sum : Tensor::empty(x.shape(), x.dtype(), x.device());
           Tensor grad_weight = Tensor::empty(weight.shape(), weight.dtype(), weight.device());
           Tensor grad_bias = Tensor::empty(weight.shape(), weight.dtype(), weight.device());
           if (lengths.defined())
             dispatch::kernel<LayerNormMaskedBackwardKernel>(backward_op, x.device())(
                 x, weight, mean, rstd, lengths, g, grad_x, grad_weight, grad_bias, sum.defined());
           else
             dispatch::kernel<LayerNormBackwardKernel>(backward_op, x.device())(
                 x, weight, mean, rstd, g, grad_x, grad_weight, grad_bias, sum.defined());
           return {grad_x, grad_weight, grad_bias};
         });
  return out;
}

}  // namespace

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps) {
  check_layer_norm("layer_norm", x, weight, bias, eps);
  return layer_norm_node(kernels::layer_norm, kernels::layer_norm_backward, x, weight, bias, Tensor(), eps);
}

Tensor layer_norm_masked(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& lengths,
                         double eps) {
  const char* op = kernels::layer_norm_masked;
  check_layer_norm(op, x, weight, bias, eps);
  check(x.dim() == 3, op, ": input ", x.shape(), " is not 3-D [B, T, D]");
  const Tensor valid = checked_sequence_lengths(op, lengths, x.size(0), x.size(1));
  if (x.device().type != DeviceType::CPU) return zero_padded_rows(layer_norm(x, weight, bias, eps), valid);
  return layer_norm_node(op, kernels::layer_norm_masked_backward, x, weight, bias, valid, eps);
}

}  // namespace hkt
