#pragma once
// CPU thread count. OpenMP reads OMP_NUM_THREADS at start-up and defaults to
// the core count; OpenBLAS (its OpenMP build) follows the same setting.
#include <cstdint>

namespace hkt {

int num_threads();
void set_num_threads(int threads);  // threads ≥ 1

// The work (elements, or an op's own count) below which a CPU kernel stays on
// one thread: an OpenMP region costs the time to wake the other threads.
// libgomp spins between regions by default (or with GOMP_SPINCOUNT > 0), and
// a region then costs about 5 µs; with OMP_WAIT_POLICY=passive and no spin
// count they sleep, and a region costs 45–85 µs (a futex wake; measured on a
// 2-core VM, docs/PERFORMANCE.md), more than one thread takes for 300,000
// floats of an elementwise op. So: 32,768, or 524,288 when threads sleep;
// HKT_PARALLEL_MIN_WORK=N sets it (the tests run passive with 32,768, so that
// their small tensors still take the parallel paths). Read from the
// environment once.
int64_t parallel_min_work();
// The rule, from the three variables' values (null: unset).
int64_t parallel_min_work_from(const char* forced, const char* spin_count, const char* wait_policy);

}  // namespace hkt
