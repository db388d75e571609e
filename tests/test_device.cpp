// Choosing a device (engine/device_choice.h) and the errors of asking for a
// CUDA device that cannot be used. The CUDA kernels themselves are checked by
// tests/parity_*.cpp on machines with a GPU.
#include <catch2/catch.hpp>

#include "engine/device_choice.h"
#include "engine/dispatch.h"
#include "hkt.h"

using namespace hkt;

TEST_CASE("parse_device reads cpu, cuda and cuda:N and rejects anything else, quoting it") {
  CHECK(dispatch::parse_device("cpu") == Device::cpu());
  CHECK(dispatch::parse_device("cuda") == Device::cuda(0));
  CHECK(dispatch::parse_device("cuda:3") == Device::cuda(3));
  for (const char* bad : {"gpu", "cuda:", "cuda:-1", "cuda:x", "CPU", "cuda:12345", ""})
    REQUIRE_THROWS_WITH(dispatch::parse_device(bad),
                        Catch::Contains("expected cpu, cuda or cuda:N, got '" + std::string(bad) + "'"));
}

TEST_CASE("the CPU is always available; cuda:N past the devices present is an error naming it") {
  CHECK_NOTHROW(dispatch::require_device(Device::cpu()));
  REQUIRE_THROWS_WITH(dispatch::require_device(Device::cuda(9999)), Catch::Contains("cuda:9999"));
}

TEST_CASE("without a usable GPU, CUDA tensors are refused with a message naming the device") {
  if (dispatch::device_count(DeviceType::CUDA) > 0) return;  // a GPU machine: nothing to check here
  // Catch2 matchers combined with && and || hold references to their parts,
  // so each assertion builds its own.
#define HKT_NAMES_THE_PROBLEM                                  \
  Catch::Contains("cuda:0") && (Catch::Contains("no CUDA device is present") || \
                                Catch::Contains("this build has no cuda backend"))
  REQUIRE_THROWS_WITH(dispatch::require_device(Device::cuda(0)), HKT_NAMES_THE_PROBLEM);
  REQUIRE_THROWS_WITH(Tensor::zeros({2, 3}, DType::Float32, Device::cuda(0)), HKT_NAMES_THE_PROBLEM);
  REQUIRE_THROWS_WITH(Tensor::ones({2}).to(Device::cuda(0)), HKT_NAMES_THE_PROBLEM);
#undef HKT_NAMES_THE_PROBLEM
}

#ifdef HKT_WITH_CUDA
#include "cuda/cublas_library.h"

// Loading cuBLAS costs every process ~210 MiB and 0.1 s (cuda/cublas_library.h):
// a CPU program of a CUDA build must not pay it. Each test case runs in its own
// process (catch_discover_tests), so nothing before this one used a CUDA GEMM.
TEST_CASE("a CUDA build opens cuBLAS on its first CUDA GEMM, not at start, and finds every entry point") {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  CHECK(matmul(a, a).to_vector<float>() == std::vector<float>{7, 10, 15, 22});  // CPU ops do not open it
  CHECK_FALSE(cuda::cublas_loaded());
  REQUIRE_NOTHROW(cuda::open_cublas());  // every symbol the backend calls resolves
  CHECK(cuda::cublas_loaded());
}
#endif
