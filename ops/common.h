#pragma once
// Shared by the op families: argument checks whose messages name the op and
// the shapes, dtype visitors for templated CPU kernels, axis helpers.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/autograd.h"
#include "engine/tensor.h"
#include "engine/threads.h"

// Small tensors stay on one thread: an OpenMP fork costs more than the work
// (engine/threads.h says how much).
#define HKT_OMP_MIN_WORK (::hkt::parallel_min_work())

namespace hkt {

// Calls fn(T{}) with T = float or double for the tensor's floating dtype.
template <class Fn>
void visit_floating(const char* op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: fn(float{}); return;
    case DType::Float64: fn(double{}); return;
    default: fail(op, ": expected a float32 or float64 tensor, got ", dtype_name(dtype));
  }
}

// Calls fn(T{}) with T the C++ type of any dtype (casts, masks that may be
// bool-like integers or floats).
template <class Fn>
void visit_any(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: fn(float{}); return;
    case DType::Float64: fn(double{}); return;
    case DType::Int32: fn(int32_t{}); return;
    case DType::Int64: fn(int64_t{}); return;
  }
}

// Calls fn(I{}) with I = int32_t or int64_t for an index tensor.
template <class Fn>
void visit_index(const char* op, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Int32: fn(int32_t{}); return;
    case DType::Int64: fn(int64_t{}); return;
    default: fail(op, ": expected an int32 or int64 index tensor, got ", dtype_name(dtype));
  }
}

// Σ term(i) for i < n, in a fixed order that vectorises: 16 partial sums
// (lane i mod 16), then added pairwise. A plain `total += term(i)` is one
// chain of dependent adds that the compiler may not reorder (no -ffast-math):
// for LayerNorm's 64-wide rows that chain was most of the op's time. The
// order depends on n alone, never on threads.
template <class T, class Term>
T lane_sum(int64_t n, Term&& term) {
  constexpr int kLanes = 16;
  T lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += term(i + j);
  for (int j = 0; i + j < n; ++j) lanes[j] += term(i + j);
  for (int half = kLanes / 2; half > 0; half /= 2)
    for (int j = 0; j < half; ++j) lanes[j] += lanes[j + half];
  return lanes[0];
}

// Whether a row of a gradient is all ±0 (NaN is not): the magnitude bits ORed
// over the row, a loop the compiler vectorises. The backward kernels of the
// position-wise ops skip such rows, and the CPU GEMMs blocks of them
// (ops/matmul.cpp): they add nothing (for finite inputs). In a training step
// they are the padded positions, whose gradient the pooling zeroes: a quarter
// of the rows at lengths spread over T/2 … T, nearly half in ListOps.
template <class T>
bool row_is_zero(const T* row, int64_t width) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  static_assert(sizeof(T) == sizeof(Bits));
  constexpr Bits kMagnitude = ~Bits(0) >> 1;
  Bits bits = 0;
  for (int64_t i = 0; i < width; ++i) {
    Bits value;
    std::memcpy(&value, row + i, sizeof value);  // not std::bit_cast: nvcc compiles this header as C++17
    bits |= value & kMagnitude;
  }
  return bits == 0;
}

void check_defined(const char* op, const Tensor& t, const char* what = "input");
void check_floating(const char* op, const Tensor& t);
void check_index(const char* op, const Tensor& t);
// Same dtype and device for every tensor; the message lists them all.
void check_compatible(const char* op, std::initializer_list<Tensor> tensors);
void check_same_device(const char* op, std::initializer_list<Tensor> tensors);
void check_nonempty(const char* op, const Tensor& t);
// The valid positions per sequence of a [B, T, …] input: lengths [B]
// (int32/int64, any device), each in [min_length, T], returned as an int64
// tensor on `device`. The attention ops take 1 as the least (every query
// needs a key), the ops that skip padded rows 0. Messages name `op`.
Tensor checked_sequence_lengths(const char* op, const Tensor& lengths, int64_t batch, int64_t length,
                                int64_t min_length = 0, Device device = Device::cpu());

// The sequences 0 … batch − 1 longest first (lengths[b] descending, ties in
// batch order; lengths null: batch order). Kernels that skip padded rows and
// deal sequences out as threads come free (schedule(dynamic)) take them in
// this order, so that the last ones are short: in batch order the
// benchmark's batch, sorted by length (T/2 … T), ended with its longest
// sequence on one thread while the other waited.
std::vector<int64_t> longest_first(const int64_t* lengths, int64_t batch);

// Maps axis in [-rank, rank) to [0, rank); throws naming the op and shape.
int64_t normalize_axis(const char* op, int64_t axis, const Shape& shape);

// Zeroed partial sums, one slice of `size` values per task, each slice on
// cache lines of its own (64-byte aligned, the stride rounded up to 64
// bytes), from the caching allocator. The backward kernels of the mix, the
// convolution and LayerNorm sum their parameters' gradients per task and add
// the slices in task order, so that results do not depend on the thread
// count. Packed side by side in a std::vector, neighbouring tasks, which
// run on different threads, could share a line that both write on every
// row, and each call paid a malloc and its zeroing (docs/PERFORMANCE.md).
template <class T>
class PartialSums {
 public:
  PartialSums(int64_t tasks, int64_t size)
      : tasks_(tasks),
        size_(size),
        stride_((size + kLine - 1) / kLine * kLine),
        storage_(Tensor::zeros({std::max<int64_t>(tasks, 1) * stride_}, dtype_of<T>())),  // no tasks: one zero slice
        data_(storage_.data<T>()) {}
  T* operator[](int64_t task) const { return data_ + task * stride_; }

  // Adds every slice into the first, in task order, and returns it (zeros without tasks: an empty sum).
  // A whole slice at a time, so the adds are vectors; element by element the
  // slices lay a stride apart. This pass is serial: the other threads wait.
  const T* sum() const {
    T* total = data_;
    for (int64_t task = 1; task < tasks_; ++task) {
      const T* slice = (*this)[task];
      for (int64_t e = 0; e < size_; ++e) total[e] += slice[e];
    }
    return total;
  }

 private:
  static constexpr int64_t kLine = 64 / sizeof(T);
  int64_t tasks_, size_, stride_;
  Tensor storage_;
  T* data_;
};

// A shape seen as [outer, extent, inner] around one axis.
struct AxisSplit {
  int64_t outer = 1, extent = 1, inner = 1;
};
AxisSplit split_at_axis(const Shape& shape, int64_t axis);

}  // namespace hkt
