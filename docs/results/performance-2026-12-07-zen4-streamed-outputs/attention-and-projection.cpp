// Experiment: the attention ops alone in the step's layout, one config per run, or with the output
// projection that reads their output after them (WITH_O=1). Arguments: op (mha, ms, hy), layout (bhtd, bthd),
// lengths (full, spread), threads, levels.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <algorithm>
#include "hkt.h"
#include "ops/hybrid_attention.h"
#include "ops/multiscale_attention.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/shape.h"
#include "engine/threads.h"
using namespace hkt;
int main(int argc, char** argv) {
  std::string op = argv[1];
  bool bthd = std::string(argv[2]) == "bthd";
  bool spread = std::string(argv[3]) == "spread";
  int threads = std::atoi(argv[4]);
  int reps = 10;
  set_num_threads(threads);
  const int64_t B = 32, H = 4, T = 512, dh = 16; const int64_t L = (op == "mha") ? 1 : std::atoi(argv[5]);
  Generator g(42);
  auto leaf = [&](int64_t rows) {
    std::vector<int64_t> shape = bthd ? std::vector<int64_t>{B, rows, H, dh} : std::vector<int64_t>{B, H, rows, dh};
    return randn(shape, g, DType::Float32).requires_grad_(true);
  };
  std::vector<Tensor> q, k;
  int64_t rows = T;
  for (int64_t l = 0; l < L; ++l) { q.push_back(leaf(rows)); k.push_back(leaf(rows)); rows = (rows + 1) / 2; }
  Tensor v = leaf(T);
  Tensor logits = randn({H, L}, g, DType::Float32).requires_grad_(true);
  std::vector<int64_t> lens(B, T);
  if (spread) for (int64_t b = 0; b < B; ++b) lens[b] = T / 2 + (T / 2) * b / (B - 1);
  Tensor lengths = Tensor::from_vector<int64_t>(lens, {B});
  Tensor w = randn({H * dh, 4}, g, DType::Float32).requires_grad_(true);
  Tensor bias = randn({H * dh}, g, DType::Float32).requires_grad_(true);
  Tensor gates = Tensor::from_vector<float>(std::vector<float>(H, 0.5f), {H}).requires_grad_(true);
  HeadLayout layout = bthd ? HeadLayout::BTHD : HeadLayout::BHTD;
  PaddedRows padded = spread ? PaddedRows::Zero : PaddedRows::Attend;
  Tensor wo = randn({H * dh, H * dh}, g, DType::Float32).requires_grad_(true);
  Tensor bo = randn({H * dh}, g, DType::Float32).requires_grad_(true);
  const bool with_o = getenv("WITH_O") != nullptr;
  auto fwd0 = [&]() -> Tensor {
    if (op == "mha") return attention(q[0], k[0], v, lengths, false, layout, padded);
    if (op == "ms") return multiscale_attention(q, k, v, logits, lengths, 2, false, layout, padded);
    return hybrid_multiscale_attention(q, k, v, logits, lengths, 2, false, w, bias, gates, padded);
  };
  auto fwd = [&]() -> Tensor {
    Tensor y = fwd0();
    if (!with_o) return y;
    return reshape(linear(reshape(y, {B, T, H * dh}), wo, bo), y.shape());
  };
  Tensor grad = randn(v.shape(), g, DType::Float32);
  if (spread) { // zero padded rows' gradient as the model's pooling does
    float* p = grad.data<float>();
    for (int64_t b = 0; b < B; ++b) for (int64_t t = lens[b]; t < T; ++t)
      for (int64_t c = 0; c < H * dh; ++c) { if (bthd) p[(b * T + t) * H * dh + c] = 0; else p[((b * H + c / dh) * T + t) * dh + c % dh] = 0; }
  }
  fwd().backward(grad);
  std::vector<double> f, fb;
  for (int r = 0; r < reps; ++r) {
    auto s = std::chrono::steady_clock::now();
    Tensor out = fwd();
    auto m = std::chrono::steady_clock::now();
    out.backward(grad);
    auto e = std::chrono::steady_clock::now();
    f.push_back(std::chrono::duration<double, std::milli>(m - s).count());
    fb.push_back(std::chrono::duration<double, std::milli>(e - m).count());
    for (auto& t : q) t.zero_grad(); for (auto& t : k) t.zero_grad(); v.zero_grad();
  }
  std::sort(f.begin(), f.end()); std::sort(fb.begin(), fb.end());
  std::printf("%s %s %s t%d fwd min %.2f med %.2f  bwd min %.2f med %.2f\n", argv[1], argv[2], argv[3], threads, f[0], f[reps/2], fb[0], fb[reps/2]);
}
