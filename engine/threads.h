#pragma once
// CPU thread count. OpenMP reads OMP_NUM_THREADS at start-up and defaults to
// the core count; OpenBLAS (its OpenMP build) follows the same setting.
namespace hkt {

int num_threads();
void set_num_threads(int threads);  // threads ≥ 1

}  // namespace hkt
