#pragma once
// Copies: a differentiable clone, dtype casts, moves between devices.
#include "engine/tensor.h"

namespace hkt {

Tensor copy(const Tensor& x);                        // new storage, same values; gradient passes through
Tensor cast(const Tensor& x, DType dtype);           // any dtype to any; differentiable between floating types
Tensor copy_to_device(const Tensor& x, Device device);  // not recorded in the graph

// ---- kernel signatures (shared by the CPU and CUDA registrations) ----

using CastKernel = void(const Tensor& x, Tensor& out);

}  // namespace hkt
