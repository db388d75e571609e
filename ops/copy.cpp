#include "ops/copy.h"

#include <vector>

#include "engine/dispatch.h"
#include "engine/tensor_ops.h"
#include "ops/common.h"

namespace hkt {

template <class From, class To>
void cast_loop(const Tensor& x, Tensor& out) {
  const From* px = static_cast<const From*>(x.raw_data());
  To* po = static_cast<To*>(out.raw_data());
  const int64_t n = x.numel();
#pragma omp parallel for if (n > HKT_OMP_MIN_WORK)
  for (int64_t i = 0; i < n; ++i) po[i] = static_cast<To>(px[i]);
}

void cast_cpu(const Tensor& x, Tensor& out) {
  visit_any(x.dtype(), [&](auto from_tag) {
    visit_any(out.dtype(), [&](auto to_tag) { cast_loop<decltype(from_tag), decltype(to_tag)>(x, out); });
  });
}

HKT_REGISTER_KERNEL(kernels::cast, DeviceType::CPU, cast_cpu);

Tensor copy(const Tensor& x) {
  check_defined("copy", x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  dispatch::allocator(x.device()).copy_on_device(out.raw_data(), x.raw_data(), x.nbytes(), x.device().index);
  record("copy", {x}, out, [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
  return out;
}

Tensor cast(const Tensor& x, DType dtype) {
  check_defined("cast", x);
  if (x.dtype() == dtype) return x;
  check(!x.requires_grad() || is_floating(dtype), "cast: ", x, " requires grad and cannot be cast to ",
        dtype_name(dtype), " (gradients flow only between floating types)");
  Tensor out = Tensor::empty(x.shape(), dtype, x.device());
  dispatch::kernel<CastKernel>(kernels::cast, x.device())(x, out);
  record("cast", {x}, out, [from = x.dtype()](const Tensor& g) -> std::vector<Tensor> { return {cast(g, from)}; });
  return out;
}

Tensor copy_to_device(const Tensor& x, Device device) {
  check_defined("to", x);
  if (x.device() == device) return x;
  std::vector<unsigned char> host(x.nbytes());
  const auto& source = dispatch::allocator(x.device());
  const auto& target = dispatch::allocator(device);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), device);
  source.copy_to_host(host.data(), x.raw_data(), host.size(), x.device().index);
  target.copy_from_host(out.raw_data(), host.data(), host.size(), device.index);
  return out;
}

// Tensor::clone() and to() call these from the engine (engine/tensor_ops.h).
const bool tensor_ops_registered = [] {
  tensor_ops().copy = copy;
  tensor_ops().cast = cast;
  tensor_ops().copy_to_device = copy_to_device;
  return true;
}();

}  // namespace hkt
