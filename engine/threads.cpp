#include "engine/threads.h"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "engine/error.h"

namespace hkt {

int num_threads() { return omp_get_max_threads(); }

int64_t parallel_min_work_from(const char* forced, const char* spin_count, const char* wait_policy) {
  if (forced && *forced) return std::max<int64_t>(0, std::strtoll(forced, nullptr, 10));
  // libgomp's rule: an explicit GOMP_SPINCOUNT wins; otherwise passive means no spinning.
  bool sleep = false;
  if (spin_count && *spin_count) {
    sleep = std::strtoll(spin_count, nullptr, 10) == 0;
  } else if (wait_policy) {
    std::string value(wait_policy);
    for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    sleep = value == "passive";
  }
  return sleep ? 524288 : 32768;
}

int64_t parallel_min_work() {
  static const int64_t work = parallel_min_work_from(std::getenv("HKT_PARALLEL_MIN_WORK"),
                                                     std::getenv("GOMP_SPINCOUNT"), std::getenv("OMP_WAIT_POLICY"));
  return work;
}

void set_num_threads(int threads) {
  check(threads >= 1, "set_num_threads: need at least 1 thread, got ", threads);
  omp_set_num_threads(threads);
}

}  // namespace hkt
