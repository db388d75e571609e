// The plain path of the CPU attention kernels (ops/attention_cpu_kernels.h):
// scalar C++ in float and double, for any head width and any CPU. It is the
// fallback and, in float64, what the gradient checks run.
#include "ops/attention_cpu_kernels.h"

namespace hkt::attention_cpu {

namespace {
constexpr Path kPlain = make_path<Scalar<float>>();
}  // namespace

const Path* plain_path() { return &kPlain; }

void forward_plain(const Problem& p, const ForwardArgs<double>& args) { forward<Scalar<double>>(p, args); }
void backward_plain(const Problem& p, const BackwardArgs<double>& args) { backward<Scalar<double>>(p, args); }

}  // namespace hkt::attention_cpu
