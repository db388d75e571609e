#include "tools/inspect/test_faults.h"

#include <cstdlib>
#include <string>

#include "ops/elementwise.h"
#include "ops/optim.h"

namespace hkt::inspect {
namespace {

UnaryBackwardKernel* true_sigmoid_backward = nullptr;

// sigmoid's backward, then doubled in place.
void doubled_sigmoid_backward(const Tensor& x, const Tensor& y, const Tensor& grad_out, double param, Tensor& grad_in) {
  true_sigmoid_backward(x, y, grad_out, param, grad_in);
  dispatch::kernel<ScaleKernel>(kernels::scale_, grad_in.device())(grad_in, 2.0);
}

}  // namespace

TestFaults::TestFaults() {
  const char* fault = std::getenv("HKT_TEST_BREAK_BACKWARD");
  if (fault == nullptr || std::string(fault) != "hkt_gate") return;
  true_sigmoid_backward = dispatch::kernel<UnaryBackwardKernel>(kernels::sigmoid_backward, Device::cpu());
  broken_gate_backward_ = std::make_unique<dispatch::KernelOverride>(kernels::sigmoid_backward, DeviceType::CPU,
                                                                     &doubled_sigmoid_backward);
}

}  // namespace hkt::inspect
