#pragma once
// The few ops the engine itself calls live one floor up, in ops/:
// Tensor::clone(), to(DType) and to(Device) are ops/copy.h's copy, cast and
// copy_to_device, and backward() sums the gradients of a tensor used more
// than once with ops/elementwise.h's add. ops/ hands them down when the
// library loads (static initialisers in ops/copy.cpp and ops/elementwise.cpp),
// the way kernels register with engine/dispatch, so that engine/ includes
// nothing from ops/.
#include "engine/tensor.h"

namespace hkt {

struct TensorOps {
  Tensor (*copy)(const Tensor& x) = nullptr;
  Tensor (*cast)(const Tensor& x, DType dtype) = nullptr;
  Tensor (*copy_to_device)(const Tensor& x, Device device) = nullptr;
  Tensor (*add)(const Tensor& a, const Tensor& b) = nullptr;
};

// The table ops/ fills in; engine code reads it through the checked getters.
TensorOps& tensor_ops();

}  // namespace hkt
