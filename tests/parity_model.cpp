// MHA and HKT classifiers on CUDA against the CPU: logits and every parameter
// gradient after one step, and the loss curve of a 20-step AdamW run. The
// composed attention path needs only the non-attention ops; the fused path
// also runs once the fused attention kernels are registered for CUDA.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "hkt.h"
#include "models/classifier.h"
#include "tests/parity_check.h"

#ifdef HKT_WITH_CUDA
#include "cuda/allocator.h"
#endif

using namespace hkt;
using namespace hkt::models;
using namespace hkt::testing;

namespace {

ModelConfig small_config(const std::string& attention, bool causal, bool down_pointwise = false) {
  ModelConfig config;
  config.attention = attention;
  config.vocab = 13;
  config.max_len = 16;
  config.d_model = 16;
  config.n_layers = 2;
  config.n_heads = 2;
  config.d_ff = 24;
  config.classes = 4;
  config.levels = attention == "hkt" ? 3 : 1;
  config.stride = 2;
  config.causal = causal;
  config.down_pointwise = down_pointwise;
  return config;
}

struct HostBatch {
  Tensor tokens, lengths, labels;
};

HostBatch random_batch(const ModelConfig& config, int64_t batch, uint64_t seed) {
  Generator generator(seed);
  const int64_t T = config.max_len;
  std::vector<double> tokens, lengths, labels;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t t = 0; t < T; ++t) tokens.push_back(std::floor(generator.uniform() * config.vocab));
    lengths.push_back(b == 0 ? T : 1 + std::floor(generator.uniform() * T));  // one full row, others padded
    labels.push_back(std::floor(generator.uniform() * config.classes));
  }
  return {Tensor::from_doubles(tokens, {batch, T}, DType::Int64), Tensor::from_doubles(lengths, {batch}, DType::Int64),
          Tensor::from_doubles(labels, {batch}, DType::Int64)};
}

bool fused_attention_on_cuda() {
  if (parity_dry_run()) return true;  // the CPU stands in for CUDA and has them
  return dispatch::has_kernel("attention", DeviceType::CUDA) &&
         dispatch::has_kernel("multiscale_attention", DeviceType::CUDA);
}

void check_one_step(const std::string& attention, bool causal, bool fused, bool down_pointwise = false) {
  INFO(attention << (causal ? " causal" : " bidirectional") << (fused ? ", fused attention" : ", composed attention")
                 << (down_pointwise ? ", pointwise downsampling" : ""));
  const ModelConfig config = small_config(attention, causal, down_pointwise);
  Classifier cpu_model(config, 7), gpu_model(config, 7);
  cpu_model.set_fused_attention(fused);
  gpu_model.set_fused_attention(fused);
  gpu_model.to(gpu());
  const HostBatch batch = random_batch(config, 5, 11);
  Tensor cpu_logits = cpu_model.forward(batch.tokens, batch.lengths);
  Tensor gpu_logits = gpu_model.forward(batch.tokens.to(gpu()), batch.lengths.to(gpu()));
  require_close("logits", cpu_logits, gpu_logits, 1e-4);
  cross_entropy(cpu_logits, batch.labels).backward();
  cross_entropy(gpu_logits, batch.labels.to(gpu())).backward();
  const NamedTensors cpu_parameters = cpu_model.named_parameters(), gpu_parameters = gpu_model.named_parameters();
  REQUIRE(cpu_parameters.size() == gpu_parameters.size());
  for (size_t i = 0; i < cpu_parameters.size(); ++i) {
    REQUIRE(cpu_parameters[i].first == gpu_parameters[i].first);
    REQUIRE(cpu_parameters[i].second.grad().defined());
    REQUIRE(gpu_parameters[i].second.grad().defined());
    require_close("gradient of " + cpu_parameters[i].first, cpu_parameters[i].second.grad(),
                  gpu_parameters[i].second.grad(), 1e-4);
  }
}

std::vector<double> loss_curve(const std::string& attention, bool fused, Device device, int steps) {
  const ModelConfig config = small_config(attention, false);
  Classifier model(config, 3);
  model.set_fused_attention(fused);
  model.to(device);
  AdamW optimizer(model.named_parameters(), {.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-8,
                                             .weight_decay = 0.01});
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step) {
    const HostBatch batch = random_batch(config, 8, 100 + step % 4);  // 4 batches, seen 5 times: the loss falls
    optimizer.zero_grad();
    Tensor loss = cross_entropy(model.forward(batch.tokens.to(device), batch.lengths.to(device)),
                                batch.labels.to(device));
    losses.push_back(loss.item());
    loss.backward();
    clip_grad_norm(model.named_parameters(), 1.0);
    optimizer.step();
  }
  return losses;
}

void check_loss_curve(const std::string& attention, bool fused) {
  INFO(attention << (fused ? ", fused attention" : ", composed attention"));
  const std::vector<double> cpu = loss_curve(attention, fused, Device::cpu(), 20);
  const std::vector<double> cuda = loss_curve(attention, fused, gpu(), 20);
  for (size_t step = 0; step < cpu.size(); ++step) {
    INFO("step " << step + 1 << ": cpu loss " << cpu[step] << ", cuda loss " << cuda[step]);
    CHECK(std::fabs(cpu[step] - cuda[step]) <= 1e-3 * std::fabs(cpu[step]));
  }
  CHECK(cpu.back() < cpu.front());  // the run learns something, so the curves are worth comparing
}

}  // namespace

TEST_CASE("parity model: logits and every parameter gradient after one step (composed attention)") {
  HKT_PARITY_OR_SKIP();
  for (const char* attention : {"mha", "hkt"})
    for (bool causal : {false, true}) check_one_step(attention, causal, false);
}

TEST_CASE("parity model: a 20-step AdamW run has the CPU's loss curve (composed attention)") {
  HKT_PARITY_OR_SKIP();
  check_loss_curve("mha", false);
  check_loss_curve("hkt", false);
}

TEST_CASE("parity model: the same checks with the fused attention kernels") {
  HKT_PARITY_OR_SKIP();
  if (!fused_attention_on_cuda()) {
    WARN("fused attention kernels are not registered for CUDA yet: fused model parity skipped");
    return;
  }
  for (const char* attention : {"mha", "hkt"})
    for (bool causal : {false, true}) check_one_step(attention, causal, true);
  check_loss_curve("mha", true);
  check_loss_curve("hkt", true);
}

TEST_CASE("parity model: HKT with the pointwise downsampling projection (SPEC section 2)") {
  HKT_PARITY_OR_SKIP();
  for (bool causal : {false, true}) check_one_step("hkt", causal, false, true);
  if (fused_attention_on_cuda())
    for (bool causal : {false, true}) check_one_step("hkt", causal, true, true);
}

#ifdef HKT_WITH_CUDA
TEST_CASE("parity model: training steps after the first call neither cudaMalloc nor cudaFree") {
  HKT_REQUIRE_CUDA_OR_SKIP();
  const ModelConfig config = small_config("hkt", false);
  Classifier model(config, 5);
  model.set_fused_attention(false);
  model.to(gpu());
  AdamW optimizer(model.named_parameters(), {});
  const HostBatch batch = random_batch(config, 8, 21);
  auto step = [&] {
    optimizer.zero_grad();
    Tensor loss = cross_entropy(model.forward(batch.tokens.to(gpu()), batch.lengths.to(gpu())),
                                batch.labels.to(gpu()));
    loss.backward();
    clip_grad_norm(model.named_parameters(), 1.0);
    optimizer.step();
    return loss.item();
  };
  step();
  step();
  const cuda::AllocatorStats before = cuda::allocator_stats(0);
  step();
  step();
  const cuda::AllocatorStats after = cuda::allocator_stats(0);
  INFO("cudaMalloc calls " << before.device_mallocs << " -> " << after.device_mallocs << ", cache hits "
                           << before.cache_hits << " -> " << after.cache_hits);
  CHECK(after.device_mallocs == before.device_mallocs);
  CHECK(after.device_frees == before.device_frees);
  CHECK(after.cache_hits > before.cache_hits);
}
#endif
