#include "models/attention.h"

#include "ops/shape.h"

namespace hkt::models {

SequenceMask SequenceMask::build(const Tensor& lengths_tensor, int64_t length, bool causal, DType dtype,
                                 Device device, bool fused) {
  check(lengths_tensor.defined() && lengths_tensor.dim() == 1, "attention: lengths must be a 1-D tensor, got ",
        lengths_tensor);
  check(!is_floating(lengths_tensor.dtype()), "attention: lengths must be integers, got ", lengths_tensor);
  SequenceMask mask;
  const std::vector<int64_t> lengths = lengths_tensor.to_vector<int64_t>();
  mask.causal = causal;
  mask.fused = fused;
  const int64_t batch = static_cast<int64_t>(lengths.size());
  std::vector<double> valid(static_cast<size_t>(batch * length));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t n = lengths[b];
    check(n >= 1 && n <= length, "attention: length ", n, " of example ", b, " is outside [1, ", length, "]");
    for (int64_t j = 0; j < length; ++j) valid[b * length + j] = j < n ? 1.0 : 0.0;
  }
  mask.lengths_tensor = Tensor::from_vector(lengths, {batch}, device);
  mask.valid_rows = Tensor::from_doubles(valid, {batch, length, 1}, dtype, device);
  return mask;
}

Tensor split_heads(const Tensor& x, int64_t heads) {
  const int64_t batch = x.size(0), length = x.size(1), width = x.size(2);
  return permute(reshape(x, {batch, length, heads, width / heads}), {0, 2, 1, 3});
}

Tensor view_heads(const Tensor& x, int64_t heads) {
  return reshape(x, {x.size(0), x.size(1), heads, x.size(2) / heads});
}

Tensor unview_heads(const Tensor& x) { return reshape(x, {x.size(0), x.size(1), x.size(2) * x.size(3)}); }

Tensor merge_heads(const Tensor& x) {
  const int64_t batch = x.size(0), heads = x.size(1), length = x.size(2), head_dim = x.size(3);
  return reshape(permute(x, {0, 2, 1, 3}), {batch, length, heads * head_dim});
}

}  // namespace hkt::models
