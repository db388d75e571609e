// The fused multi-scale attention op (ops/multiscale_attention.h) against its
// composed reference (ops/attention_reference.h, built as models/hkt_attention.cpp:
// per level gemm, upsample through the index maps, causal allowed-mask,
// λ-weighted sum, mask, softmax, matmul): forward and every gradient, float64
// and float32, levels 1-4, strides 2 and 3, edge lengths, padding, causality,
// thread count, errors.
#include <cmath>

#include "ops/attention_reference.h"
#include "tests/attention_test_util.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::gradcheck;
using hkt::testing::lengths_tensor;
using hkt::testing::random_tensor;
using hkt::testing::relative_diff;
using hkt::testing::ThreadScope;
using hkt::testing::TileScope;

namespace {

// Inputs of one case: q_levels, k_levels, v, level_logits, in this order.
struct Inputs {
  std::vector<Tensor> queries, keys;
  Tensor v, level_logits;

  std::vector<Tensor> all() const {
    std::vector<Tensor> list(queries);
    list.insert(list.end(), keys.begin(), keys.end());
    list.push_back(v);
    list.push_back(level_logits);
    return list;
  }
  static Inputs from(const std::vector<Tensor>& list) {
    const size_t levels = (list.size() - 2) / 2;
    Inputs in;
    in.queries.assign(list.begin(), list.begin() + levels);
    in.keys.assign(list.begin() + levels, list.begin() + 2 * levels);
    in.v = list[2 * levels];
    in.level_logits = list[2 * levels + 1];
    return in;
  }
};

Inputs random_inputs(int64_t length, int64_t levels, int64_t stride, int64_t head_dim, DType dtype) {
  Inputs in;
  uint64_t seed = 100;
  for (int64_t l = 0; l < levels; ++l) {
    const Shape shape{2, 2, level_length(length, l, stride), head_dim};
    in.queries.push_back(random_tensor(shape, ++seed, dtype));
    in.keys.push_back(random_tensor(shape, ++seed, dtype));
  }
  in.v = random_tensor({2, 2, length, head_dim}, ++seed, dtype);
  in.level_logits = random_tensor({2, levels}, ++seed, dtype);
  return in;
}

// The output, then the gradients of Σ out ⊙ weights for every input (Inputs::all order).
template <class F>
std::vector<Tensor> run(F&& f, const Inputs& inputs, const Tensor& weights) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs.all()) leaves.push_back(t.detach().clone().requires_grad_(true));
  Tensor out = f(Inputs::from(leaves));
  sum(mul(out, weights)).backward();
  std::vector<Tensor> results{out.detach()};
  for (const Tensor& leaf : leaves) results.push_back(leaf.grad());
  return results;
}

void compare_with_reference(int64_t length, int64_t levels, int64_t stride, bool causal,
                            const std::vector<int64_t>& lengths, DType dtype, double tolerance) {
  const int64_t head_dim = dtype == DType::Float64 ? 8 : 4;
  Inputs inputs = random_inputs(length, levels, stride, head_dim, dtype);
  Tensor weights = random_tensor(inputs.v.shape(), 7, dtype), lengths_t = lengths_tensor(lengths);
  auto fused = run(
      [&](const Inputs& in) {
        return multiscale_attention(in.queries, in.keys, in.v, in.level_logits, lengths_t, stride, causal);
      },
      inputs, weights);
  // The reference runs in float64 on the same values, so a float32 case
  // measures the fused kernel's rounding alone, not that plus the composed
  // float32 ops' (which changes with the CPU's BLAS kernels).
  std::vector<Tensor> wide;
  for (const Tensor& t : inputs.all()) wide.push_back(t.to(DType::Float64));
  auto expected = run(
      [&](const Inputs& in) {
        return multiscale_attention_reference(in.queries, in.keys, in.v, in.level_logits, lengths_t, stride, causal);
      },
      Inputs::from(wide), weights.to(DType::Float64));
  for (size_t which = 0; which < fused.size(); ++which) {
    INFO("T " << length << " L " << levels << " stride " << stride << (causal ? " causal" : " bidirectional")
              << " lengths " << lengths[0] << ", " << lengths[1] << " " << dtype_name(dtype) << " tile "
              << attention_cpu_tile() << ": "
              << (which == 0 ? "output" : "gradient of input " + std::to_string(which - 1)));
    CHECK(relative_diff(fused[which], expected[which]) <= tolerance);
  }
}


}  // namespace

TEST_CASE("multiscale_attention equals the composed HKT scores, forward and every gradient") {
  // Tile 8 crosses many tile and block boundaries; tiles 64 and 128 (the default) only matter past one tile.
  for (int64_t tile : {8, 64, 128}) {
    TileScope scope(tile);
    for (int64_t length : tile == 8 ? std::vector<int64_t>{1, 7, 37, 70, 130} : std::vector<int64_t>{37, 70, 130})
      for (int64_t levels : {1, 2, 3, 4})
        for (int64_t stride : {2, 3})
          for (bool causal : {false, true}) {
            // Full length, a single valid key, and a length that ends inside a tile.
            const std::vector<std::vector<int64_t>> cases = {
                {length, length}, {1, length}, {length, std::max<int64_t>(1, length - 5)}};
            for (const auto& lengths : cases)
              compare_with_reference(length, levels, stride, causal, lengths, DType::Float64, 1e-10);
            compare_with_reference(length, levels, stride, causal, cases[2], DType::Float32, 1e-4);
          }
  }
}

TEST_CASE("multiscale_attention passes a float64 finite-difference gradient check") {
  TileScope scope(8);
  Tensor lengths = lengths_tensor({13, 9});
  for (int64_t stride : {2, 3})
    for (bool causal : {false, true}) {
      Inputs inputs = random_inputs(13, 3, stride, 4, DType::Float64);
      gradcheck(
          [&](const std::vector<Tensor>& list) {
            Inputs in = Inputs::from(list);
            return multiscale_attention(in.queries, in.keys, in.v, in.level_logits, lengths, stride, causal);
          },
          inputs.all());
    }
}

TEST_CASE("multiscale_attention adds dV into the gradient V already has, through the model's head view") {
  // As in HKT: V [B, T, H·dh] is viewed as [B, T, H, dh] for the op and read by another op too
  // (the hybrid head). Whichever backward runs first, V's gradient must be the op's dV plus the
  // other's; padded keys (no dV) keep the other's alone. float32 runs a vector path, float64 plain.
  const int64_t B = 2, T = 150, H = 2, stride = 2, levels = 3;
  const Tensor lengths = lengths_tensor({150, 139});
  for (DType dtype : {DType::Float32, DType::Float64})
    for (bool causal : {false, true}) {
      const int64_t dh = dtype == DType::Float32 ? 16 : 4;
      std::vector<Tensor> queries, keys;
      uint64_t seed = 300;
      for (int64_t l = 0; l < levels; ++l) {
        queries.push_back(random_tensor({B, level_length(T, l, stride), H, dh}, ++seed, dtype));
        keys.push_back(random_tensor({B, level_length(T, l, stride), H, dh}, ++seed, dtype));
      }
      const Tensor logits = random_tensor({H, levels}, ++seed, dtype);
      const Tensor v_flat = random_tensor({B, T, H * dh}, ++seed, dtype);
      const Tensor weights = random_tensor({B, T, H, dh}, ++seed, dtype);
      auto attend = [&](const Tensor& v4) {
        return multiscale_attention(queries, keys, v4, logits, lengths, stride, causal, HeadLayout::BTHD);
      };
      // The op's dV alone.
      Tensor v4 = reshape(v_flat, {B, T, H, dh}).detach().requires_grad_(true);
      sum(mul(attend(v4), weights)).backward();
      const std::vector<double> dv = v4.grad().to_vector<double>(), values = v_flat.to_vector<double>();
      std::vector<double> expected(dv.size());
      for (size_t i = 0; i < dv.size(); ++i) expected[i] = 1.5 * (dv[i] + 2.0 * 1.5 * values[i]);
      for (bool attention_first : {true, false}) {
        INFO(dtype_name(dtype) << (causal ? " causal" : " bidirectional") << ", attention first " << attention_first);
        Tensor leaf = v_flat.detach().clone().requires_grad_(true);
        Tensor v = mul(leaf, 1.5);  // not a leaf: autograd sums its gradients
        Tensor attended = sum(mul(attend(reshape(v, {B, T, H, dh})), weights)), other = sum(mul(v, v));
        (attention_first ? add(attended, other) : add(other, attended)).backward();
        const double tolerance = dtype == DType::Float32 ? 1e-4 : 1e-12;
        CHECK(hkt::testing::max_abs_diff(leaf.grad(), expected) <= tolerance);
      }
    }
}

TEST_CASE("causal multiscale_attention: output i has exactly zero gradient from every later input") {
  // Coarse row m of level l summarises fine positions ≤ (m + 1)·s^l − 1 (SPEC
  // section 2), so output i may depend on it only where m ≤ q_l(i) = (i + 1)/s^l − 1.
  TileScope scope(8);
  const int64_t length = 29, levels = 3, stride = 2, head_dim = 4;
  Tensor lengths = lengths_tensor({length, 23});
  for (int64_t i : {0, 3, 8, 15, 16, 28}) {
    Inputs inputs = random_inputs(length, levels, stride, head_dim, DType::Float64);
    std::vector<Tensor> leaves;
    for (Tensor t : inputs.all()) leaves.push_back(t.requires_grad_(true));
    Inputs in = Inputs::from(leaves);
    Tensor row =
        slice(multiscale_attention(in.queries, in.keys, in.v, in.level_logits, lengths, stride, true), 2, i, i + 1);
    sum(mul(row, random_tensor(row.shape(), 9))).backward();
    for (size_t which = 0; which + 1 < leaves.size(); ++which) {  // every input but level_logits
      const int64_t level = which == 2 * levels ? 0 : static_cast<int64_t>(which) % levels;
      int64_t block = 1;
      for (int64_t l = 0; l < level; ++l) block *= stride;
      const int64_t last_allowed = (i + 1) / block - 1;
      const Tensor& leaf = leaves[which];
      const int64_t rows = leaf.size(2);
      auto grad = leaf.grad().to_vector<double>();
      bool later_zero = true;
      for (int64_t bh = 0; bh < 4; ++bh)
        for (int64_t m = last_allowed + 1; m < rows; ++m)
          for (int64_t d = 0; d < head_dim; ++d)
            later_zero = later_zero && grad[static_cast<size_t>((bh * rows + m) * head_dim + d)] == 0.0;
      INFO("output row " << i << ", input " << which << " (level " << level << ", rows after " << last_allowed << ")");
      CHECK(later_zero);
    }
  }
}

TEST_CASE("multiscale_attention does not depend on the thread count (bitwise)") {
  Inputs inputs = random_inputs(130, 3, 2, 8, DType::Float32);
  Tensor weights = random_tensor(inputs.v.shape(), 4, DType::Float32), lengths = lengths_tensor({130, 77});
  for (bool causal : {false, true}) {
    auto f = [&](const Inputs& in) {
      return multiscale_attention(in.queries, in.keys, in.v, in.level_logits, lengths, 2, causal);
    };
    std::vector<Tensor> one, two;
    {
      ThreadScope threads(1);
      one = run(f, inputs, weights);
    }
    {
      ThreadScope threads(2);
      two = run(f, inputs, weights);
    }
    for (size_t which = 0; which < one.size(); ++which) {
      INFO((causal ? "causal" : "bidirectional") << ", result " << which);
      CHECK(one[which].to_vector<double>() == two[which].to_vector<double>());
    }
  }
}

TEST_CASE("multiscale_attention errors name the op and the shapes") {
  Inputs in = random_inputs(7, 2, 2, 4, DType::Float64);
  Tensor lengths = lengths_tensor({7, 3});
  auto call = [&](const Inputs& x, const Tensor& lens, int64_t stride) {
    return multiscale_attention(x.queries, x.keys, x.v, x.level_logits, lens, stride, false);
  };
  CHECK_NOTHROW(call(in, lengths, 2));
  Inputs bad = in;
  bad.queries[1] = random_tensor({2, 2, 3, 4}, 1);
  CHECK_THROWS_WITH(call(bad, lengths, 2), Catch::Contains("multiscale_attention: q_levels[1] [2, 2, 3, 4] but "
                                                           "expected [2, 2, 4, 4]"));
  bad = in;
  bad.keys.pop_back();
  CHECK_THROWS_WITH(call(bad, lengths, 2), Catch::Contains("multiscale_attention: 2 query levels but 1 key levels"));
  bad = in;
  bad.level_logits = random_tensor({2, 3}, 1);
  CHECK_THROWS_WITH(call(bad, lengths, 2), Catch::Contains("multiscale_attention: level_logits [2, 3] but expected "
                                                           "[H, L] = [2, 2]"));
  bad = in;
  bad.keys[0] = bad.keys[0].to(DType::Float32);
  CHECK_THROWS_WITH(call(bad, lengths, 2), Catch::Contains("multiscale_attention") && Catch::Contains("dtypes differ"));
  bad = in;
  bad.v = random_tensor({2, 7, 4}, 1);
  CHECK_THROWS_WITH(call(bad, lengths, 2), Catch::Contains("multiscale_attention: v [2, 7, 4]"));
  CHECK_THROWS_WITH(call(in, lengths, 1), Catch::Contains("multiscale_attention: stride 1 must be at least 2"));
  CHECK_THROWS_WITH(call(in, lengths_tensor({8, 3}), 2),
                    Catch::Contains("multiscale_attention: length 8 of example 0 is outside [1, 7]"));
  CHECK_THROWS_WITH(call(in, lengths_tensor({7, 0}), 2),
                    Catch::Contains("multiscale_attention: length 0 of example 1 is outside [1, 7]"));
  CHECK_THROWS_WITH(multiscale_attention({}, {}, in.v, in.level_logits, lengths, 2, false),
                    Catch::Contains("multiscale_attention: no levels"));
}
