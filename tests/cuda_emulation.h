#pragma once
// Runs CUDA kernel source on the CPU, for tests on machines without a GPU
// (tests/test_cuda_attention_emulated.cpp). Include it before the kernel
// headers (cuda/*_kernels.cuh), which then compile as plain C++:
//   - a block's threads are std::threads, __syncthreads() a std::barrier
//     (a barrier some thread of a block misses is undefined on a GPU and
//     hangs or fails here);
//   - blocks run one after another, so __shared__ (function-static storage)
//     is the running block's shared memory;
//   - dynamic shared memory is filled with NaN before each block, so a read
//     of anything not staged shows up in the results.
// Not emulated: warps, memory ordering beyond the barrier, launch limits,
// register and shared-memory capacity, float rounding of CUDA's expf/logf.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#define HKT_CUDA_EMULATION 1
#define __global__
#define __device__
#define __host__
#define __shared__ static

#define HKT_UNROLL

namespace hkt::emulation {

struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};

inline thread_local Dim3 thread_index;
inline Dim3 block_index, block_dim, grid_dim;
inline std::barrier<>* block_barrier = nullptr;
inline std::vector<float> dynamic_shared;

// kernel() for every thread of every block, blocks in order; `shared_bytes` of
// dynamic shared memory. One team of threads serves every block of a launch.
template <class Kernel>
void launch(unsigned blocks, unsigned threads, size_t shared_bytes, Kernel&& kernel) {
  grid_dim = {blocks, 1, 1};
  block_dim = {threads, 1, 1};
  std::barrier<> barrier(threads);
  block_barrier = &barrier;
  std::vector<std::thread> team;
  for (unsigned t = 0; t < threads; ++t)
    team.emplace_back([&, t] {
      thread_index = {t, 0, 0};
      for (unsigned b = 0; b < blocks; ++b) {
        if (t == 0) {
          block_index = {b, 0, 0};
          dynamic_shared.assign(shared_bytes / sizeof(float) + 1, std::numeric_limits<float>::quiet_NaN());
        }
        barrier.arrive_and_wait();  // the block starts with its index set and fresh shared memory
        kernel();
        barrier.arrive_and_wait();  // every thread has left the block before the next begins
      }
    });
  for (std::thread& thread : team) thread.join();
  block_barrier = nullptr;
}

}  // namespace hkt::emulation

#define threadIdx (::hkt::emulation::thread_index)
#define blockIdx (::hkt::emulation::block_index)
#define blockDim (::hkt::emulation::block_dim)
#define gridDim (::hkt::emulation::grid_dim)
#define __syncthreads() (::hkt::emulation::block_barrier->arrive_and_wait())
#define HKT_DYNAMIC_SHARED(name) float* name = ::hkt::emulation::dynamic_shared.data()
