#pragma once
// Copies: a differentiable clone, dtype casts, moves between devices.
#include "engine/tensor.h"

namespace hkt {

Tensor copy(const Tensor& x);                        // new storage, same values; gradient passes through
Tensor cast(const Tensor& x, DType dtype);           // any dtype to any; differentiable between floating types
Tensor copy_to_device(const Tensor& x, Device device);  // not recorded in the graph

// ---- kernel names and signatures (shared by the CPU and CUDA registrations) ----

namespace kernels {  // the names they register under, declared once (ops/, cuda/ and the lookups use them)
inline constexpr const char* cast = "cast";
}  // namespace kernels

using CastKernel = void(const Tensor& x, Tensor& out);

}  // namespace hkt
