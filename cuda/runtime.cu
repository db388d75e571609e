// Streams and cuBLAS handles per device (see runtime.h).
#include "cuda/runtime.h"

#include <mutex>
#include <vector>

#include "engine/error.h"

namespace hkt::cuda {
namespace {

struct DeviceContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
};

std::mutex contexts_mutex;
std::vector<DeviceContext>& contexts() {
  static std::vector<DeviceContext> all;
  return all;
}

DeviceContext& context(int device_index) {
  check(cudaSetDevice(device_index), "cuda", "cudaSetDevice");
  std::lock_guard<std::mutex> lock(contexts_mutex);
  auto& all = contexts();
  if (static_cast<int>(all.size()) <= device_index) all.resize(device_index + 1);
  DeviceContext& ctx = all[device_index];
  if (!ctx.stream) check(cudaStreamCreateWithFlags(&ctx.stream, cudaStreamNonBlocking), "cuda", "cudaStreamCreate");
  return ctx;
}

}  // namespace

cudaStream_t stream(int device_index) { return context(device_index).stream; }

cublasHandle_t cublas(int device_index) {
  DeviceContext& ctx = context(device_index);
  std::lock_guard<std::mutex> lock(contexts_mutex);
  if (!ctx.cublas) {
    const CublasLibrary& api = cublas_library();
    check(api.create(&ctx.cublas), "cuda", "cublasCreate");
    check(api.set_stream(ctx.cublas, ctx.stream), "cuda", "cublasSetStream");
  }
  return ctx.cublas;
}

void check(cudaError_t status, const char* op, const char* what) {
  if (status != cudaSuccess) fail(op, ": ", what, " failed: ", cudaGetErrorString(status));
}

void check(cublasStatus_t status, const char* op, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)  // cuBLAS is open: only its calls return a status
    fail(op, ": ", what, " failed: ", cublas_library().status_string(status));
}

void check_launch(const char* op) { check(cudaGetLastError(), op, "kernel launch"); }

}  // namespace hkt::cuda
