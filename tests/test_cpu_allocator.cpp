// The CPU caching allocator (engine/cpu_allocator.h): blocks come back from
// the cache by size class, the counters add up, and a steady-state training
// step of a small HKT classifier asks the system for no memory at all.
#include "engine/cpu_allocator.h"
#include "hkt.h"
#include "models/classifier.h"
#include "tests/gradcheck.h"

using namespace hkt;

namespace {

// Caching on for one test whatever the build's default (sanitizer builds keep it off).
struct CachingScope {
  CachingScope() : previous(set_cpu_allocator_caching(true)) {}
  ~CachingScope() { set_cpu_allocator_caching(previous); }
  bool previous;
};

}  // namespace

TEST_CASE("a freed CPU block is handed out again for a request of its size class") {
  CachingScope caching;
  cpu_empty_cache();
  const CpuAllocatorStats before = cpu_allocator_stats();
  { Tensor a = Tensor::empty({1000}, DType::Float32); }
  const CpuAllocatorStats freed = cpu_allocator_stats();
  CHECK(freed.system_allocations == before.system_allocations + 1);
  CHECK(freed.bytes_cached == before.bytes_cached + 4032);  // 4000 bytes → the 64-byte class 4032
  {
    Tensor b = Tensor::empty({1001}, DType::Float32);  // 4004 bytes: the same class
    const CpuAllocatorStats reused = cpu_allocator_stats();
    CHECK(reused.system_allocations == freed.system_allocations);
    CHECK(reused.cache_hits == freed.cache_hits + 1);
    CHECK(reused.bytes_in_use == freed.bytes_in_use + 4032);
  }
  { Tensor big = Tensor::empty({5000}, DType::Float32); }  // 20000 bytes → 20480 (eighths of 16384: 2048-byte steps)
  CHECK(cpu_allocator_stats().bytes_cached == freed.bytes_cached + 20480);
  cpu_empty_cache();
  CHECK(cpu_allocator_stats().bytes_cached == 0);
}

TEST_CASE("with caching off every free goes back to the system") {
  const bool previous = set_cpu_allocator_caching(false);
  const CpuAllocatorStats before = cpu_allocator_stats();
  { Tensor a = Tensor::empty({256}, DType::Float32); }
  const CpuAllocatorStats after = cpu_allocator_stats();
  CHECK(after.system_allocations == before.system_allocations + 1);
  CHECK(after.system_frees == before.system_frees + 1);
  CHECK(after.bytes_cached == 0);
  set_cpu_allocator_caching(previous);
}

TEST_CASE("a steady-state training step allocates no CPU memory from the system") {
  CachingScope caching;
  models::ModelConfig config;
  config.vocab = 18;
  config.max_len = 64;
  config.d_model = 32;
  config.n_heads = 4;
  config.d_ff = 64;
  config.classes = 10;
  config.levels = 3;
  models::HKTClassifier model(config, /*seed=*/0);
  AdamW optimizer(model.named_parameters(), {.lr = 1e-3});
  Generator gen(1);
  std::vector<int64_t> ids(4 * 64);
  for (int64_t& id : ids) id = 1 + static_cast<int64_t>(gen.next_u64() % 17);
  const Tensor tokens = Tensor::from_vector(ids, {4, 64});
  const Tensor lengths = Tensor::from_vector<int64_t>({64, 40, 9, 64}, {4});
  const Tensor classes = Tensor::from_vector<int64_t>({3, 1, 4, 1}, {4});
  auto step = [&] {
    Tensor loss = cross_entropy(model.forward(tokens, lengths), classes);
    loss.backward();
    clip_grad_norm(model.named_parameters(), 1.0);
    optimizer.step();
    optimizer.zero_grad();
  };
  step();
  step();  // the optimizer's state exists from the first step on
  const CpuAllocatorStats before = cpu_allocator_stats();
  step();
  const CpuAllocatorStats after = cpu_allocator_stats();
  INFO("system allocations in the third step: " << after.system_allocations - before.system_allocations
                                                << ", cache hits: " << after.cache_hits - before.cache_hits);
  CHECK(after.system_allocations == before.system_allocations);
  CHECK(after.cache_hits > before.cache_hits);
}
