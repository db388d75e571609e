#pragma once
// Communicator: the collectives data-parallel training needs (sum, broadcast,
// barrier) across the ranks of one run. Three implementations:
//   - SingleProcess (always): one rank, every collective is a no-op;
//   - MPI (HKT_WITH_MPI): host buffers through MPI_COMM_WORLD;
//   - NCCL (HKT_WITH_NCCL, CUDA builds with MPI): device tensors through NCCL,
//     MPI only to hand the ncclUniqueId from rank 0 to the others.
// Every blocking collective runs under a watchdog: past the timeout the process
// aborts the whole job with "rank R: <collective> did not complete within N s;
// another rank probably died" instead of hanging.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace hkt::distributed {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;  // "single", "mpi", "mpi+nccl"

  // In-place element-wise sums over the ranks, of host memory.
  virtual void all_reduce_sum(float* data, int64_t count) = 0;
  virtual void all_reduce_sum(double* data, int64_t count) = 0;
  // rank `root`'s bytes replace everyone's.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  virtual void barrier() = 0;

  // Sums floating tensors in place over the ranks, whatever their device. The
  // default copies them through the host; the NCCL communicator reduces CUDA
  // tensors where they are. `bucket_bytes` bounds one host collective.
  virtual void all_reduce_sum(const std::vector<Tensor>& tensors, int64_t bucket_bytes);

  // Seconds a collective may block before the watchdog aborts the job (> 0).
  virtual void set_timeout(double seconds) = 0;
  // Ends every rank of the job at once (after an error on this one); returns
  // only for a single process.
  virtual void abort(int exit_code) = 0;
};

// The process's communicator: MPI when this build has it and the process was
// started by an MPI launcher (mpirun sets OMPI_COMM_WORLD_SIZE, PMI_SIZE or
// PMIX_RANK), otherwise a single process. Created on first use; MPI is
// finalised at exit.
Communicator& world();

// True when the build can run several ranks (it has MPI).
bool built_with_mpi();

// A single-process communicator (tests, and the fallback of world()).
std::unique_ptr<Communicator> make_single_process();

}  // namespace hkt::distributed
