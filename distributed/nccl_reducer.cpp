#include "distributed/nccl_reducer.h"

#include <nccl.h>

#include "cuda/runtime.h"

namespace hkt::distributed {
namespace {

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess) fail("NCCL: ", what, " failed: ", ncclGetErrorString(status));
}

ncclDataType_t nccl_type(const Tensor& tensor) {
  if (tensor.dtype() == DType::Float32) return ncclFloat32;
  if (tensor.dtype() == DType::Float64) return ncclFloat64;
  fail("all_reduce_sum: ", tensor, " is not floating");
}

class Nccl final : public NcclReducer {
 public:
  Nccl(int rank, int size, int device_index, const std::function<void(void*, int64_t)>& broadcast_id)
      : device_index_(device_index) {
    ncclUniqueId id;
    if (rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    broadcast_id(&id, sizeof id);
    cuda::check(cudaSetDevice(device_index), "nccl", "cudaSetDevice");
    check_nccl(ncclCommInitRank(&comm_, size, id, rank), "ncclCommInitRank");
  }
  ~Nccl() override { ncclCommDestroy(comm_); }

  // Tensors are reduced in place on the device's stream, so the reduction
  // follows the backward kernels that wrote the gradients without a sync.
  // Each group of about `bucket_bytes` is one NCCL launch.
  void all_reduce_sum(const std::vector<Tensor>& tensors, int64_t bucket_bytes) override {
    cudaStream_t stream = cuda::stream(device_index_);
    int64_t in_group = 0;
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (const Tensor& tensor : tensors) {
      if (tensor.numel() == 0) continue;
      if (in_group > 0 && in_group + static_cast<int64_t>(tensor.nbytes()) > bucket_bytes) {
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        in_group = 0;
      }
      void* data = tensor.raw_data();
      check_nccl(ncclAllReduce(data, data, static_cast<size_t>(tensor.numel()), nccl_type(tensor), ncclSum, comm_,
                               stream),
                 "ncclAllReduce");
      in_group += static_cast<int64_t>(tensor.nbytes());
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    cuda::check(cudaStreamSynchronize(stream), "nccl all-reduce", "cudaStreamSynchronize");
  }

 private:
  int device_index_;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<NcclReducer> make_nccl_reducer(int rank, int size, int device_index,
                                               const std::function<void(void*, int64_t)>& broadcast_id) {
  return std::make_unique<Nccl>(rank, size, device_index, broadcast_id);
}

}  // namespace hkt::distributed
