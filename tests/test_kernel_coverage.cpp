// Every kernel registered with engine/dispatch is accounted for, as ggml's
// test-backend-ops shows its coverage:
//   - a CPU kernel has a CUDA twin (in builds with the CUDA backend), and a
//     CUDA kernel a CPU one, unless the lists below say otherwise and why;
//   - the op behind every CPU kernel has a float64 gradient check in its
//     family's test file, unless it has no gradient (and the table says why).
// A new kernel fails here until it is entered in the table.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/dispatch.h"
#include "hkt.h"

using namespace hkt;

namespace {

// Kernels with no twin on the other backend.
const std::set<std::string> kCpuOnly = {
    // on CUDA the op is its composition, depthwise_conv1d then lerp (their kernels; ops/hybrid_mix.h)
    "hybrid_mix",
    "hybrid_mix_backward",
    // on CUDA the op is its composition, multiscale_attention then hybrid_mix (their kernels; ops/hybrid_attention.h)
    "hybrid_multiscale_attention",
    "hybrid_multiscale_attention_backward",
    // on CUDA the op is its composition, layer_norm then masked_fill (ops/norm.h)
    "layer_norm_masked",
    "layer_norm_masked_backward",
    // on CUDA the op is its composition, gelu then masked_fill (ops/elementwise.h)
    "gelu_masked",
    "gelu_masked_backward",
    // on CUDA the op is its composition, depthwise_conv1d then masked_fill (ops/conv1d.h)
    "depthwise_conv1d_masked",
    "depthwise_conv1d_masked_backward",
};
const std::set<std::string> kCudaOnly = {
    "adamw_step_multi",  // every parameter in one launch; AdamW falls back to adamw_step per parameter elsewhere
};

struct GradientCheck {
  const char* kernel;
  const char* test_file;  // under tests/; nullptr: the kernel has no gradient
  const char* call;       // text found in a test case of test_file that runs gradcheck (by_hand: anywhere in it)
  bool by_hand = false;   // checked against a hand-derived gradient, not by finite differences
  const char* why_none = nullptr;
};

// A backward kernel is checked by the gradient check of its forward op.
const std::vector<GradientCheck> kGradientChecks = {
    {"add", "test_elementwise.cpp", "add("},
    {"sub", "test_elementwise.cpp", "sub("},
    {"mul", "test_elementwise.cpp", "mul("},
    {"div", "test_elementwise.cpp", "div("},
    {"broadcast_to", "test_elementwise.cpp", "broadcast_to("},
    {"neg", "test_elementwise.cpp", "neg("},
    {"neg_backward", "test_elementwise.cpp", "neg("},
    {"exp", "test_elementwise.cpp", "exp("},
    {"exp_backward", "test_elementwise.cpp", "exp("},
    {"log", "test_elementwise.cpp", "log("},
    {"log_backward", "test_elementwise.cpp", "log("},
    {"tanh", "test_elementwise.cpp", "tanh("},
    {"tanh_backward", "test_elementwise.cpp", "tanh("},
    {"sigmoid", "test_elementwise.cpp", "sigmoid("},
    {"sigmoid_backward", "test_elementwise.cpp", "sigmoid("},
    {"relu", "test_elementwise.cpp", "relu("},
    {"relu_backward", "test_elementwise.cpp", "relu("},
    {"gelu", "test_elementwise.cpp", "gelu("},
    {"gelu_masked", "test_elementwise.cpp", "gelu_masked("},
    {"gelu_masked_backward", "test_elementwise.cpp", "gelu_masked("},
    {"gelu_backward", "test_elementwise.cpp", "gelu("},
    {"sqrt", "test_elementwise.cpp", "sqrt("},
    {"sqrt_backward", "test_elementwise.cpp", "sqrt("},
    {"pow", "test_elementwise.cpp", "pow("},
    {"pow_backward", "test_elementwise.cpp", "pow("},
    {"lerp", "test_elementwise.cpp", "lerp("},
    {"lerp_backward", "test_elementwise.cpp", "lerp("},
    {"sum", "test_reduce.cpp", "sum("},
    {"max", "test_reduce.cpp", "max("},
    {"max_backward", "test_reduce.cpp", "max("},
    {"gemm", "test_matmul.cpp", "gemm("},
    {"softmax", "test_softmax.cpp", "softmax("},
    {"softmax_backward", "test_softmax.cpp", "softmax("},
    {"log_softmax", "test_softmax.cpp", "log_softmax("},
    {"log_softmax_backward", "test_softmax.cpp", "log_softmax("},
    {"layer_norm", "test_norm.cpp", "layer_norm("},
    {"layer_norm_backward", "test_norm.cpp", "layer_norm("},
    {"layer_norm_masked", "test_norm.cpp", "layer_norm_masked("},
    {"layer_norm_masked_backward", "test_norm.cpp", "layer_norm_masked("},
    {"cross_entropy", "test_loss.cpp", "cross_entropy("},
    {"cross_entropy_backward", "test_loss.cpp", "cross_entropy("},
    {"index_select", "test_index.cpp", "index_select("},
    {"index_add", "test_index.cpp", "index_select("},
    {"axis_copy", "test_shape.cpp", "slice("},
    {"permute", "test_shape.cpp", "permute("},
    {"masked_fill", "test_mask.cpp", "masked_fill("},
    {"depthwise_conv1d", "test_conv1d.cpp", "depthwise_conv1d("},
    {"depthwise_conv1d_backward", "test_conv1d.cpp", "depthwise_conv1d("},
    {"depthwise_conv1d_masked", "test_conv1d.cpp", "depthwise_conv1d_masked("},
    {"depthwise_conv1d_masked_backward", "test_conv1d.cpp", "depthwise_conv1d_masked("},
    {"hybrid_mix", "test_conv1d.cpp", "hybrid_mix("},
    {"hybrid_mix_backward", "test_conv1d.cpp", "hybrid_mix("},
    {"attention", "test_attention.cpp", "attention("},
    {"attention_backward", "test_attention.cpp", "attention("},
    {"multiscale_attention", "test_multiscale_attention.cpp", "multiscale_attention("},
    {"multiscale_attention_backward", "test_multiscale_attention.cpp", "multiscale_attention("},
    {"hybrid_multiscale_attention", "test_hybrid_attention.cpp", "hybrid_multiscale_attention("},
    {"hybrid_multiscale_attention_backward", "test_hybrid_attention.cpp", "hybrid_multiscale_attention("},
    // float64 → float32 → float64 cannot be checked by float64 differences:
    // the backward of a float32 cast is compared with the weights by hand.
    {"cast", "test_shape.cpp", "leaf64.to(DType::Float32)", true},
    {"sgd_step", nullptr, nullptr, false, "an optimizer update, not differentiated (test_optim.cpp: plain loops)"},
    {"adamw_step", nullptr, nullptr, false, "an optimizer update, not differentiated (test_optim.cpp: plain loops)"},
    {"scale_", nullptr, nullptr, false, "in-place gradient scaling of clip_grad_norm, not differentiated"},
};

std::string read_test_file(const std::string& name) {
  std::ifstream in(std::string(HKT_SOURCE_DIR) + "/tests/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The test cases of `source` (each from TEST_CASE to the next) that run a
// gradient check: gradcheck(...) or gradcheck_module(...).
std::vector<std::string> gradient_test_cases(const std::string& source) {
  std::vector<std::string> cases;
  const std::string marker = "TEST_CASE(";
  for (size_t at = source.find(marker); at != std::string::npos;) {
    const size_t next = source.find(marker, at + marker.size());
    const std::string body = source.substr(at, next == std::string::npos ? std::string::npos : next - at);
    if (body.find("gradcheck(") != std::string::npos || body.find("gradcheck_module(") != std::string::npos)
      cases.push_back(body);
    at = next;
  }
  return cases;
}

std::vector<std::string> kernels_on(DeviceType device) {
  std::vector<std::string> names;
  for (const auto& entry : dispatch::registered_kernels())
    if (entry.device == device) names.push_back(entry.op);
  return names;
}

}  // namespace

TEST_CASE("registered_kernels lists every (op, device) pair once, sorted") {
  const auto kernels = dispatch::registered_kernels();
  REQUIRE_FALSE(kernels.empty());
  for (size_t i = 1; i < kernels.size(); ++i)
    CHECK(std::pair(kernels[i - 1].op, kernels[i - 1].device) < std::pair(kernels[i].op, kernels[i].device));
  for (const auto& entry : kernels) CHECK(dispatch::has_kernel(entry.op, entry.device));
  CHECK(dispatch::has_kernel(kernels::add, DeviceType::CPU));
}

TEST_CASE("every CPU kernel has a CUDA twin and every CUDA kernel a CPU one, unless listed") {
  const std::vector<std::string> cpu = kernels_on(DeviceType::CPU), cuda = kernels_on(DeviceType::CUDA);
  if (cuda.empty()) {
    WARN("this build has no CUDA backend: the twins are checked in CUDA builds");
    return;
  }
  for (const std::string& op : cpu) {
    INFO("CPU kernel '" << op << "' (a CPU-only kernel goes into kCpuOnly with the reason)");
    CHECK((kCpuOnly.count(op) > 0 || std::find(cuda.begin(), cuda.end(), op) != cuda.end()));
  }
  for (const std::string& op : cuda) {
    INFO("CUDA kernel '" << op << "' (a CUDA-only kernel goes into kCudaOnly with the reason)");
    CHECK((kCudaOnly.count(op) > 0 || std::find(cpu.begin(), cpu.end(), op) != cpu.end()));
  }
}

TEST_CASE("the op behind every CPU kernel has a gradient check, or the table says why not") {
  std::map<std::string, const GradientCheck*> table;
  for (const GradientCheck& entry : kGradientChecks) table[entry.kernel] = &entry;
  for (const std::string& op : kernels_on(DeviceType::CPU)) {
    INFO("CPU kernel '" << op << "'");
    auto found = table.find(op);
    CHECK(found != table.end());  // a new kernel: add it to kGradientChecks
    if (found == table.end()) continue;
    const GradientCheck& entry = *found->second;
    if (entry.test_file == nullptr) {
      CHECK(entry.why_none != nullptr);
      continue;
    }
    const std::string source = read_test_file(entry.test_file);
    INFO("tests/" << entry.test_file << " must check the gradient of " << entry.call);
    REQUIRE_FALSE(source.empty());
    bool checked = false;
    if (entry.by_hand) {
      checked = source.find(entry.call) != std::string::npos;
    } else {
      for (const std::string& test_case : gradient_test_cases(source))
        checked = checked || test_case.find(entry.call) != std::string::npos;
    }
    CHECK(checked);
  }
  // and the table names no kernel that is gone
  const std::vector<std::string> cpu = kernels_on(DeviceType::CPU);
  for (const GradientCheck& entry : kGradientChecks) {
    INFO("kGradientChecks entry '" << entry.kernel << "'");
    CHECK(std::find(cpu.begin(), cpu.end(), entry.kernel) != cpu.end());
  }
}
