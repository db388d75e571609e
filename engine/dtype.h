#pragma once
// Element types. Floating types carry data and gradients (float64 on the CPU
// for gradient checks); integer types carry indices and labels.
#include <cstddef>
#include <cstdint>

namespace hkt {

enum class DType : uint8_t { Float32, Float64, Int32, Int64 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);  // "float32", as PyTorch prints it
bool is_floating(DType dtype);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }

}  // namespace hkt
