// masked_fill: forward and CPU kernel. The backward is masked_fill itself
// (fill the gradient with 0 where the forward filled), so the op needs one
// kernel only.
#include "ops/mask.h"

#include "engine/dispatch.h"
#include "ops/broadcast.h"
#include "ops/common.h"

namespace hkt {

// ---- CPU kernels ----------------------------------------------------------

namespace {


}  // namespace

// out[i] = mask[i] ≠ 0 ? value : x[i]   (a NaN mask entry counts as nonzero)
void masked_fill_cpu(const Tensor& x, const Tensor& mask, double value, Tensor& out) {
  visit_floating("masked_fill", x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    visit_any(mask.dtype(), [&](auto mask_tag) {
      using M = decltype(mask_tag);
      const T* px = static_cast<const T*>(x.raw_data());
      const M* pm = static_cast<const M*>(mask.raw_data());
      T* po = static_cast<T*>(out.raw_data());
      const T fill = static_cast<T>(value);
      const auto strides = broadcast_strides(mask.shape(), out.shape());
      const int64_t length = out.dim() == 0 ? 1 : out.shape().back();
      const int64_t step = out.dim() == 0 ? 0 : strides.back();
      for_each_broadcast_row(out.shape(), strides, strides, [&](int64_t row, int64_t offset, int64_t) {
        const T* in = px + row * length;
        T* o = po + row * length;
        for (int64_t j = 0; j < length; ++j) o[j] = pm[offset + j * step] != M(0) ? fill : in[j];
      });
    });
  });
}

HKT_REGISTER_KERNEL(kernels::masked_fill, DeviceType::CPU, masked_fill_cpu);

// ---- ops ------------------------------------------------------------------

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  check_floating("masked_fill", x);
  check_defined("masked_fill", mask, "mask");
  check_same_device("masked_fill", {x, mask});
  // Broadcasting one way only: x's shape is the output's.
  const Shape &shape = x.shape(), &mask_shape = mask.shape();
  bool broadcasts = mask_shape.size() <= shape.size();
  for (size_t k = 0; broadcasts && k < mask_shape.size(); ++k) {
    const int64_t extent = mask_shape[mask_shape.size() - 1 - k];
    broadcasts = extent == 1 || extent == shape[shape.size() - 1 - k];
  }
  check(broadcasts, "masked_fill: mask ", mask_shape, " does not broadcast to input ", shape);

  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  dispatch::kernel<MaskedFillKernel>(kernels::masked_fill, x.device())(x, mask, value, out);
  record(
      "masked_fill", {x}, out,
      [mask = mask.detach()](const Tensor& g) -> std::vector<Tensor> { return {masked_fill(g, mask, 0.0)}; },
      ForwardInf::Intended);  // -inf masks on purpose: not an anomaly
  return out;
}

Tensor padded_positions(const Tensor& lengths, int64_t length, const Shape& shape, DType dtype, Device device) {
  const std::vector<int64_t> valid = lengths.to_vector<int64_t>();
  const int64_t batch = static_cast<int64_t>(valid.size());
  std::vector<double> padded(static_cast<size_t>(batch * length), 0.0);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = valid[b]; t < length; ++t) padded[b * length + t] = 1.0;
  return Tensor::from_doubles(padded, shape, dtype, device);
}

Tensor zero_padded_rows(const Tensor& x, const Tensor& lengths) {
  Shape rows(x.shape().size(), 1);
  rows[0] = x.size(0);
  rows[1] = x.size(1);
  return masked_fill(x, padded_positions(lengths, x.size(1), rows, x.dtype(), x.device()), 0.0);
}

}  // namespace hkt
