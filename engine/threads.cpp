#include "engine/threads.h"

#include <omp.h>

#include "engine/error.h"

namespace hkt {

int num_threads() { return omp_get_max_threads(); }

void set_num_threads(int threads) {
  check(threads >= 1, "set_num_threads: need at least 1 thread, got ", threads);
  omp_set_num_threads(threads);
}

}  // namespace hkt
