#pragma once
// What every CUDA kernel file needs from the runtime: one stream and one
// cuBLAS handle per device, and errors that name the op.
//
// All kernels of a device run on its stream, in issue order, so an op never
// has to synchronise with the one before it; copies to the host synchronise.
#include <cublas_v2.h>
#include <cuda_runtime.h>

namespace hkt::cuda {

// cuBLAS's entry points, resolved on first use (cuda/cublas_library.h):
// the backend calls cuBLAS only through these.
struct CublasLibrary {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
};
// Opens cuBLAS once; throws hkt::Error naming what is missing.
const CublasLibrary& cublas_library();

// Makes device_index current and returns its stream (created on first use).
cudaStream_t stream(int device_index);
// The device's cuBLAS handle, bound to stream(device_index).
cublasHandle_t cublas(int device_index);

// Throws hkt::Error "<op>: <what> failed: <CUDA's message>" unless status is success.
void check(cudaError_t status, const char* op, const char* what);
void check(cublasStatus_t status, const char* op, const char* what);
// After a kernel launch: reports a bad launch configuration under the op's name.
void check_launch(const char* op);

// Blocks of `threads` needed to cover n items, capped at what a grid allows.
inline unsigned blocks_for(long long n, unsigned threads = 256) {
  long long blocks = (n + threads - 1) / threads;
  if (blocks < 1) blocks = 1;
  if (blocks > 65535LL * 32) blocks = 65535LL * 32;  // kernels use grid-stride loops past this
  return static_cast<unsigned>(blocks);
}

}  // namespace hkt::cuda
