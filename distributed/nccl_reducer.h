#pragma once
// Sums CUDA tensors in place over the ranks with NCCL (built with
// HKT_WITH_NCCL: CUDA builds with MPI). MPI only carries the ncclUniqueId
// from rank 0 to the others, once, when the first device reduction is asked.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "engine/tensor.h"

namespace hkt::distributed {

class NcclReducer {
 public:
  virtual ~NcclReducer() = default;
  // Launches the reductions on the device's stream (grouped, one group per
  // about `bucket_bytes`) and waits for the stream, so the caller can run the
  // whole call under its watchdog.
  virtual void all_reduce_sum(const std::vector<Tensor>& tensors, int64_t bucket_bytes) = 0;
};

#ifdef HKT_WITH_NCCL
// `broadcast_id(bytes, count)` hands rank 0's bytes to every rank (MPI_Bcast).
// `device_index`: the CUDA device this rank's tensors live on.
std::unique_ptr<NcclReducer> make_nccl_reducer(int rank, int size, int device_index,
                                               const std::function<void(void*, int64_t)>& broadcast_id);
#endif

}  // namespace hkt::distributed
