#include "ops/common.h"

#include <algorithm>
#include <numeric>
#include <sstream>

namespace hkt {
namespace {

std::string describe(std::initializer_list<Tensor> tensors) {
  std::ostringstream out;
  bool first = true;
  for (const Tensor& t : tensors) {
    out << (first ? "" : ", ") << t.str() << " on " << t.device().str();
    first = false;
  }
  return out.str();
}

}  // namespace

void check_defined(const char* op, const Tensor& t, const char* what) {
  check(t.defined(), op, ": ", what, " is an undefined tensor");
}

void check_floating(const char* op, const Tensor& t) {
  check_defined(op, t);
  check(is_floating(t.dtype()), op, ": expected a float32 or float64 tensor, got ", t);
}

void check_index(const char* op, const Tensor& t) {
  check_defined(op, t, "index");
  check(t.dtype() == DType::Int32 || t.dtype() == DType::Int64, op,
        ": expected an int32 or int64 index tensor, got ", t);
}

void check_same_device(const char* op, std::initializer_list<Tensor> tensors) {
  for (const Tensor& t : tensors) check_defined(op, t);
  const Tensor& first = *tensors.begin();
  for (const Tensor& t : tensors)
    if (t.device() != first.device()) fail(op, ": tensors on different devices: ", describe(tensors));
}

void check_compatible(const char* op, std::initializer_list<Tensor> tensors) {
  check_same_device(op, tensors);
  const Tensor& first = *tensors.begin();
  for (const Tensor& t : tensors)
    if (t.dtype() != first.dtype()) fail(op, ": dtypes differ: ", describe(tensors));
}

void check_nonempty(const char* op, const Tensor& t) {
  check(t.numel() > 0, op, ": empty tensor of shape ", t.shape());
}

int64_t normalize_axis(const char* op, int64_t axis, const Shape& shape) {
  int64_t rank = static_cast<int64_t>(shape.size());
  check(axis >= -rank && axis < rank, op, ": axis ", axis, " out of range for shape ", shape);
  return axis < 0 ? axis + rank : axis;
}

AxisSplit split_at_axis(const Shape& shape, int64_t axis) {
  AxisSplit split;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < axis) split.outer *= shape[i];
    else if (i == axis) split.extent = shape[i];
    else split.inner *= shape[i];
  }
  return split;
}

Tensor checked_sequence_lengths(const char* op, const Tensor& lengths, int64_t batch, int64_t length,
                                int64_t min_length, Device device) {
  check_defined(op, lengths, "lengths");
  check(lengths.dim() == 1 && lengths.size(0) == batch, op, ": lengths ", lengths, " but batch ", batch,
        " (expected [", batch, "])");
  check(lengths.dtype() == DType::Int32 || lengths.dtype() == DType::Int64, op,
        ": lengths must be int32 or int64, got ", lengths);
  const std::vector<int64_t> values = lengths.to_vector<int64_t>();
  for (int64_t b = 0; b < batch; ++b)
    check(values[b] >= min_length && values[b] <= length, op, ": length ", values[b], " of example ", b,
          " is outside [", min_length, ", ", length, "]");
  return Tensor::from_vector(values, {batch}, device);
}

std::vector<int64_t> longest_first(const int64_t* lengths, int64_t batch) {
  std::vector<int64_t> order(static_cast<size_t>(batch));
  std::iota(order.begin(), order.end(), int64_t(0));
  if (lengths)
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return lengths[a] > lengths[b]; });
  return order;
}

}  // namespace hkt
