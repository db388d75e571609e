// hybrid_multiscale_attention (ops/hybrid_attention.h) is defined as a
// composition: multiscale_attention on [B, T, H, dh], then hybrid_mix of that
// and v, both viewed as [B, T, C], with β_h repeated over the head's channels.
// Its CPU kernels fuse the two (the mix is done per query tile, and the
// backward scales by β inside the attention's GEMMs), so each CPU path is
// checked in float32 against the float64 composition, forward and every
// gradient. Also covered: float64 finite differences, bitwise independence of
// the thread count, and the errors.
#include <functional>

#include "ops/attention_cpu.h"
#include "ops/hybrid_attention.h"
#include "tests/attention_test_util.h"
#include "tests/gradcheck.h"

using namespace hkt;
using hkt::testing::check_close;
using hkt::testing::lengths_tensor;
using hkt::testing::PathScope;
using hkt::testing::random_tensor;
using hkt::testing::ThreadScope;
using hkt::testing::TileScope;

namespace {

struct Case {
  int64_t batch, heads, length, head_dim, levels, stride, taps;
  bool bias;
  std::vector<int64_t> lengths;  // [batch]
  int64_t channels() const { return heads * head_dim; }
};

// q_0 … q_{L−1}, k_0 … k_{L−1}, v, level_logits, weight, gates, then bias if the case has one.
std::vector<Tensor> random_inputs(const Case& c) {
  std::vector<Tensor> q, k;
  uint64_t seed = 40;
  for (int64_t l = 0; l < c.levels; ++l) {
    const Shape shape{c.batch, level_length(c.length, l, c.stride), c.heads, c.head_dim};
    q.push_back(random_tensor(shape, ++seed));
    k.push_back(random_tensor(shape, ++seed));
  }
  std::vector<Tensor> all(q);
  all.insert(all.end(), k.begin(), k.end());
  all.push_back(random_tensor({c.batch, c.length, c.heads, c.head_dim}, ++seed));
  all.push_back(random_tensor({c.heads, c.levels}, ++seed));
  all.push_back(random_tensor({c.channels(), c.taps}, ++seed));
  all.push_back(sigmoid(random_tensor({c.heads}, ++seed)));
  if (c.bias) all.push_back(random_tensor({c.channels()}, ++seed));
  return all;
}

std::string input_name(const Case& c, size_t which) {
  const size_t levels = static_cast<size_t>(c.levels);
  if (which < levels) return "q_levels[" + std::to_string(which) + "]";
  if (which < 2 * levels) return "k_levels[" + std::to_string(which - levels) + "]";
  const char* rest[] = {"v", "level_logits", "weight", "gates", "bias"};
  return rest[which - 2 * levels];
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

// The fused op, or the composition it is defined as.
Op hybrid(const Case& c, bool causal, PaddedRows padded, bool composed) {
  const Tensor lengths = lengths_tensor(c.lengths);
  return [=](const std::vector<Tensor>& in) {
    const auto levels = static_cast<std::ptrdiff_t>(c.levels);
    const std::vector<Tensor> q(in.begin(), in.begin() + levels), k(in.begin() + levels, in.begin() + 2 * levels);
    const Tensor &v = in[2 * levels], &logits = in[2 * levels + 1], &weight = in[2 * levels + 2];
    const Tensor& gates = in[2 * levels + 3];
    const Tensor bias = c.bias ? in[2 * levels + 4] : Tensor();
    if (!composed)
      return hybrid_multiscale_attention(q, k, v, logits, lengths, c.stride, causal, weight, bias, gates, padded);
    const Shape rows{c.batch, c.length, c.channels()};
    const Tensor attended =
        multiscale_attention(q, k, v, logits, lengths, c.stride, causal, HeadLayout::BTHD, padded);
    // β_h repeated over the head's channels c = h · dh + d, as hybrid_mix takes one gate per channel.
    const Tensor channel_gates = reshape(broadcast_to(reshape(gates, {c.heads, 1}), {c.heads, c.head_dim}), {-1});
    const Tensor mixed = hybrid_mix(reshape(attended, rows), reshape(v, rows), weight, bias, channel_gates,
                                    padded == PaddedRows::Zero ? lengths : Tensor());
    return reshape(mixed, {c.batch, c.length, c.heads, c.head_dim});
  };
}

// The output, then the gradients of Σ out ⊙ upstream for fresh leaves (inputs' order).
std::vector<Tensor> run(const Op& f, const std::vector<Tensor>& inputs, const Tensor& upstream) {
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) leaves.push_back(t.detach().clone().requires_grad_(true));
  Tensor out = f(leaves);
  sum(mul(out, upstream)).backward();
  std::vector<Tensor> results{out.detach()};
  for (const Tensor& leaf : leaves) results.push_back(leaf.grad());
  return results;
}

std::vector<Tensor> to_float32(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(t.to(DType::Float32));
  return out;
}

// dY: random, but 0 on every row t ≡ 5 (mod 7) and on example 0's last 10 rows, all inside the valid
// range: the backward must still visit a zero row before a nonzero one, and may stop after a head's last.
Tensor upstream_gradient(const Case& c) {
  std::vector<double> g = random_tensor({c.batch, c.length, c.heads, c.head_dim}, 99).to_vector<double>();
  const int64_t row = c.channels();
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t t = 0; t < c.length; ++t)
      if (t % 7 == 5 || (b == 0 && t >= c.length - 10))
        std::fill_n(g.begin() + (b * c.length + t) * row, row, 0.0);
  return Tensor::from_doubles(g, {c.batch, c.length, c.heads, c.head_dim}, DType::Float64);
}

std::string describe(const Case& c, bool causal, PaddedRows padded) {
  return "B " + std::to_string(c.batch) + " H " + std::to_string(c.heads) + " T " + std::to_string(c.length) +
         " dh " + std::to_string(c.head_dim) + " L " + std::to_string(c.levels) + " stride " +
         std::to_string(c.stride) + " k " + std::to_string(c.taps) + (c.bias ? " bias" : " no bias") +
         (causal ? " causal" : " bidirectional") + (padded == PaddedRows::Zero ? " Zero" : " Attend");
}

// B · H < 8: the backward splits each head's keys into several chunks; B · H ≥ 8: one chunk per head,
// and T = 140 is two key tiles of 128 (three of 64, the causal default).
const std::vector<Case> kSmall = {
    {3, 2, 37, 16, 3, 2, 3, true, {37, 20, 1}},
    {3, 2, 37, 8, 1, 2, 1, false, {37, 20, 1}},
    {3, 2, 37, 16, 3, 3, 5, false, {37, 20, 1}},
    {3, 2, 37, 32, 3, 2, 25, true, {37, 20, 1}},  // more taps than examples 1 and 2 have rows
};
const std::vector<Case> kLarge = {
    {4, 4, 140, 16, 3, 2, 5, true, {140, 131, 1, 64}},
    {4, 4, 140, 8, 3, 3, 3, false, {140, 99, 140, 7}},
    {4, 4, 140, 16, 1, 2, 1, true, {77, 140, 129, 128}},
};

}  // namespace

TEST_CASE("hybrid_multiscale_attention on every CPU path equals multiscale_attention then hybrid_mix, every gradient") {
  std::vector<Case> cases(kSmall);
  cases.insert(cases.end(), kLarge.begin(), kLarge.end());
  for (const Case& c : cases)
    for (bool causal : {false, true})
      for (PaddedRows padded : {PaddedRows::Attend, PaddedRows::Zero}) {
        const std::vector<Tensor> inputs = random_inputs(c);
        const Tensor upstream = upstream_gradient(c);
        // The reference in float64, so that the float32 results measure the fused kernels' rounding alone.
        const auto expected = run(hybrid(c, causal, padded, true), inputs, upstream);
        for (const auto* path : attention_cpu::available_paths()) {
          if (c.head_dim % path->width != 0) continue;  // the path cannot serve this head width
          PathScope scope(path->name);
          for (int64_t tile : {8, 0}) {  // many tiles, and the default (128, or 64 causally)
            TileScope tiles(tile);
            const auto actual =
                run(hybrid(c, causal, padded, false), to_float32(inputs), upstream.to(DType::Float32));
            const std::string what = std::string(path->name) + " tile " + std::to_string(tile) + " " +
                                     describe(c, causal, padded);
            for (size_t which = 0; which < actual.size(); ++which) {
              INFO(what << ": " << (which == 0 ? "output" : "gradient of " + input_name(c, which - 1)));
              REQUIRE(actual[which].defined());
              // check_close's floor of 0.1 on the denominator: level_logits' gradient at L = 1, and a level
              // whose block spans every key, are 0 in theory and float32 rounding noise here.
              check_close(what, actual[which], expected[which], 2e-5);
            }
            if (padded != PaddedRows::Zero) continue;
            const std::vector<float> out = actual[0].to_vector<float>();
            bool padded_rows_zero = true;  // exactly, not merely close
            for (int64_t b = 0; b < c.batch; ++b)
              for (int64_t i = c.lengths[b] * c.channels(); i < c.length * c.channels(); ++i)
                padded_rows_zero = padded_rows_zero && out[b * c.length * c.channels() + i] == 0.0f;
            INFO(what);
            CHECK(padded_rows_zero);
          }
        }
      }
}

TEST_CASE("hybrid_multiscale_attention adds dV into the gradient V already has, through the model's [B, T, C] view") {
  // As in HKT: V [B, T, C] comes from a linear layer and is read by another op too. Whichever backward
  // runs first, V's gradient must be the composition's, the other consumer's included.
  const Case c = kLarge[0];
  const std::vector<Tensor> inputs = random_inputs(c);
  const Tensor upstream = upstream_gradient(c);
  const auto levels = static_cast<std::ptrdiff_t>(c.levels);
  for (bool causal : {false, true})
    for (bool hybrid_first : {true, false}) {
      auto v_gradient = [&](bool composed, DType dtype) {
        std::vector<Tensor> in;
        for (const Tensor& t : inputs) in.push_back(t.to(dtype));
        Tensor v_flat = reshape(in[2 * levels], {c.batch, c.length, c.channels()}).detach().requires_grad_(true);
        const Tensor v = mul(v_flat, 1.5);  // not a leaf: autograd sums its two gradients
        in[2 * levels] = reshape(v, {c.batch, c.length, c.heads, c.head_dim});
        const Tensor mixed = sum(mul(hybrid(c, causal, PaddedRows::Zero, composed)(in), upstream.to(dtype)));
        const Tensor other = sum(mul(v, v));
        (hybrid_first ? add(mixed, other) : add(other, mixed)).backward();
        return v_flat.grad();
      };
      INFO((causal ? "causal" : "bidirectional") << ", hybrid first " << hybrid_first);
      check_close("gradient of V", v_gradient(false, DType::Float32), v_gradient(true, DType::Float64), 2e-5);
    }
}

TEST_CASE("hybrid_multiscale_attention passes a float64 finite-difference gradient check") {
  // float64 runs the plain path. Tile 8 splits T = 9 into two tiles; 0 is the default (one).
  for (int64_t tile : {8, 0}) {
    TileScope tiles(tile);
    for (bool causal : {false, true})
      for (bool bias : {true, false})
        for (PaddedRows padded : {PaddedRows::Zero, PaddedRows::Attend}) {
          const Case c{2, 2, 9, 4, 2, 2, 3, bias, {9, 5}};
          const Tensor lengths = lengths_tensor(c.lengths);
          INFO("tile " << tile << " " << describe(c, causal, padded));
          hkt::testing::gradcheck(
              [&](const std::vector<Tensor>& in) {
                return hybrid_multiscale_attention({in[0], in[1]}, {in[2], in[3]}, in[4], in[5], lengths, c.stride,
                                                   causal, in[6], bias ? in[8] : Tensor(), in[7], padded);
              },
              random_inputs(c));
        }
  }
}

TEST_CASE("hybrid_multiscale_attention on every CPU path is bitwise the same for 1, 2 and 4 threads") {
  for (const auto* path : attention_cpu::available_paths()) {
    PathScope scope(path->name);
    for (const Case& c : {kSmall[0], kLarge[0]})
      for (bool causal : {false, true})
        for (PaddedRows padded : {PaddedRows::Attend, PaddedRows::Zero}) {
          const std::vector<Tensor> inputs = to_float32(random_inputs(c));
          const Tensor upstream = upstream_gradient(c).to(DType::Float32);
          std::vector<Tensor> one;
          {
            ThreadScope threads(1);
            one = run(hybrid(c, causal, padded, false), inputs, upstream);
          }
          for (int threads_used : {2, 4}) {
            ThreadScope threads(threads_used);
            const auto many = run(hybrid(c, causal, padded, false), inputs, upstream);
            for (size_t which = 0; which < one.size(); ++which) {
              INFO(path->name << " " << describe(c, causal, padded) << ", " << threads_used << " threads: "
                              << (which == 0 ? "output" : "gradient of " + input_name(c, which - 1)));
              CHECK(one[which].to_vector<float>() == many[which].to_vector<float>());
            }
          }
        }
  }
}

TEST_CASE("hybrid_multiscale_attention errors name the op and the argument") {
  const Case c{2, 2, 7, 4, 2, 2, 3, true, {7, 3}};
  const std::vector<Tensor> in = random_inputs(c);  // q0 q1 k0 k1 v logits weight gates bias
  const Tensor lengths = lengths_tensor(c.lengths);
  auto call = [&](std::vector<Tensor> q, std::vector<Tensor> k, const Tensor& v, const Tensor& logits,
                  const Tensor& weight, const Tensor& bias, const Tensor& gates) {
    return hybrid_multiscale_attention(q, k, v, logits, lengths, 2, false, weight, bias, gates, PaddedRows::Zero);
  };
  const std::vector<Tensor> q{in[0], in[1]}, k{in[2], in[3]};
  const Tensor &v = in[4], &logits = in[5], &weight = in[6], &gates = in[7], &bias = in[8];
  CHECK_NOTHROW(call(q, k, v, logits, weight, bias, gates));
  CHECK_NOTHROW(call(q, k, v, logits, weight, Tensor(), gates));
  // One gate per channel, as hybrid_mix takes them, is not one per head.
  CHECK_THROWS_WITH(call(q, k, v, logits, weight, bias, random_tensor({8}, 1)),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("gates [8]"));
  CHECK_THROWS_WITH(call(q, k, v, logits, weight, bias, random_tensor({1, 2}, 1)),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("gates [1, 2]"));
  CHECK_THROWS_WITH(call(q, k, v, logits, random_tensor({6, 3}, 1), bias, gates),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("weight [6, 3]"));
  CHECK_THROWS_WITH(call(q, k, v, logits, random_tensor({8}, 1), bias, gates),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("weight [8]"));
  CHECK_THROWS_WITH(call(q, k, v, logits, weight, random_tensor({5}, 1), gates),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("bias [5]"));
  CHECK_THROWS_WITH(call(q, k, v, logits, weight, random_tensor({2, 4}, 1), gates),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("bias [2, 4]"));
  CHECK_THROWS_WITH(call(q, k, random_tensor({2, 7, 8}, 1), logits, weight, bias, gates),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("v [2, 7, 8]"));
  CHECK_THROWS_WITH(call(q, {k[0]}, v, logits, weight, bias, gates),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("levels"));
  CHECK_THROWS_WITH(call(q, k, v, random_tensor({2, 3}, 1), weight, bias, gates),
                    Catch::Contains("hybrid_multiscale_attention") && Catch::Contains("level_logits [2, 3]"));
}
