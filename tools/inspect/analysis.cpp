#include "tools/inspect/analysis.h"

#include <cmath>
#include <limits>

#include "models/hkt_attention.h"

namespace hkt::inspect {
namespace {

// Solves A x = b in place for a symmetric positive definite A (p × p, row-major)
// by Cholesky; false when A is not positive definite (to rounding).
bool cholesky(std::vector<double>& a, int64_t p) {
  for (int64_t j = 0; j < p; ++j) {
    double diagonal = a[j * p + j];
    for (int64_t k = 0; k < j; ++k) diagonal -= a[j * p + k] * a[j * p + k];
    if (!(diagonal > 1e-12 * std::max(1.0, std::abs(a[j * p + j])))) return false;
    a[j * p + j] = std::sqrt(diagonal);
    for (int64_t i = j + 1; i < p; ++i) {
      double value = a[i * p + j];
      for (int64_t k = 0; k < j; ++k) value -= a[i * p + k] * a[j * p + k];
      a[i * p + j] = value / a[j * p + j];
    }
  }
  return true;
}

// ‖L⁻¹ d‖² = dᵀ S⁻¹ d for S = L Lᵀ (forward substitution).
double mahalanobis_squared(const std::vector<double>& lower, const double* d, int64_t p, std::vector<double>& y) {
  double total = 0;
  for (int64_t i = 0; i < p; ++i) {
    double value = d[i];
    for (int64_t k = 0; k < i; ++k) value -= lower[i * p + k] * y[k];
    y[i] = value / lower[i * p + i];
    total += y[i] * y[i];
  }
  return total;
}

}  // namespace

Kurtosis mardia_kurtosis(const std::vector<double>& samples, int64_t dims) {
  check(dims >= 1 && samples.size() % static_cast<size_t>(dims) == 0, "mardia_kurtosis: ", samples.size(),
        " values are not rows of ", dims);
  Kurtosis result;
  result.dims = dims;
  result.samples = static_cast<int64_t>(samples.size()) / dims;
  const int64_t n = result.samples, p = dims;
  check(n > p, "mardia_kurtosis: need more samples than dimensions, got ", n, " of ", p);
  std::vector<double> mean(static_cast<size_t>(p), 0.0), covariance(static_cast<size_t>(p * p), 0.0);
  for (int64_t s = 0; s < n; ++s)
    for (int64_t i = 0; i < p; ++i) mean[i] += samples[s * p + i] / static_cast<double>(n);
  std::vector<double> centred(samples.size());
  for (int64_t s = 0; s < n; ++s)
    for (int64_t i = 0; i < p; ++i) centred[s * p + i] = samples[s * p + i] - mean[i];
  for (int64_t s = 0; s < n; ++s)
    for (int64_t i = 0; i < p; ++i)
      for (int64_t j = 0; j <= i; ++j) covariance[i * p + j] += centred[s * p + i] * centred[s * p + j];
  for (int64_t i = 0; i < p; ++i)
    for (int64_t j = 0; j <= i; ++j) covariance[j * p + i] = covariance[i * p + j] /= static_cast<double>(n);
  if (!cholesky(covariance, p)) {
    result.b2p = result.normalised = std::numeric_limits<double>::quiet_NaN();
    return result;
  }
  std::vector<double> scratch(static_cast<size_t>(p));
  for (int64_t s = 0; s < n; ++s) {
    const double distance = mahalanobis_squared(covariance, &centred[s * p], p, scratch);
    result.b2p += distance * distance / static_cast<double>(n);
  }
  result.normalised = result.b2p / static_cast<double>(p * (p + 2));
  return result;
}

namespace {

// The Frobenius norms of M = Wq_hᵀ Wk_h for head h (weights [d, d], rows = outputs).
BilinearSplit split_head(const std::vector<double>& wq, const std::vector<double>& wk, int64_t d, int64_t head,
                         int64_t head_dim) {
  std::vector<double> m(static_cast<size_t>(d * d), 0.0);
  for (int64_t r = head * head_dim; r < (head + 1) * head_dim; ++r)
    for (int64_t a = 0; a < d; ++a)
      for (int64_t c = 0; c < d; ++c) m[a * d + c] += wq[r * d + a] * wk[r * d + c];
  BilinearSplit split;
  split.head = head;
  for (int64_t a = 0; a < d; ++a)
    for (int64_t c = 0; c < d; ++c) {
      const double sym = (m[a * d + c] + m[c * d + a]) / 2, anti = (m[a * d + c] - m[c * d + a]) / 2;
      split.norm += m[a * d + c] * m[a * d + c];
      split.symmetric += sym * sym;
      split.antisymmetric += anti * anti;
    }
  split.norm = std::sqrt(split.norm);
  split.symmetric = std::sqrt(split.symmetric);
  split.antisymmetric = std::sqrt(split.antisymmetric);
  return split;
}

}  // namespace

std::vector<BilinearSplit> bilinear_splits(const models::Classifier& model) {
  const models::ModelConfig& config = model.config();
  std::vector<BilinearSplit> splits;
  for (int64_t block = 0; block < config.n_layers; ++block) {
    const std::string prefix = "blocks." + std::to_string(block) + ".attn.";
    const int64_t levels = config.attention_levels();
    for (int64_t level = 0; level < levels; ++level) {
      const std::string at = config.attention == "hkt" ? prefix + "levels." + std::to_string(level) + "." : prefix;
      const auto wq = model.parameter(at + "q.weight").to_vector<double>();
      const auto wk = model.parameter(at + "k.weight").to_vector<double>();
      for (int64_t head = 0; head < config.n_heads; ++head) {
        BilinearSplit split = split_head(wq, wk, config.d_model, head, config.head_dim());
        split.block = block;
        split.level = level;
        splits.push_back(split);
      }
    }
  }
  return splits;
}

std::vector<ScoreKurtosis> score_kurtosis(const std::vector<BlockAttention>& blocks) {
  std::vector<ScoreKurtosis> rows;
  for (size_t block = 0; block < blocks.size(); ++block) {
    const BlockAttention& a = blocks[block];
    const int64_t batch = static_cast<int64_t>(a.lengths.size()), H = a.heads;
    for (int64_t level = -1; level < a.levels; ++level) {
      std::vector<double> samples;
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t n = level < 0 ? a.length : a.level_lengths[static_cast<size_t>(level)];
        const int64_t valid = level < 0 ? a.lengths[static_cast<size_t>(b)] : a.valid_level_length(b, level);
        const std::vector<double>& scores = level < 0 ? a.fused_scores : a.level_scores[static_cast<size_t>(level)];
        for (int64_t i = 0; i < valid; ++i)
          for (int64_t j = 0; j < valid; ++j) {
            if (level < 0 && !a.allowed(b, i, j)) continue;
            for (int64_t h = 0; h < H; ++h) samples.push_back(scores[static_cast<size_t>(((b * H + h) * n + i) * n + j)]);
          }
      }
      ScoreKurtosis row;
      row.block = static_cast<int64_t>(block);
      row.level = level;
      if (static_cast<int64_t>(samples.size()) > H * H) row.kurtosis = mardia_kurtosis(samples, H);
      else row.kurtosis = {static_cast<int64_t>(samples.size()) / H, H, NAN, NAN};  // too few pairs
      rows.push_back(row);
    }
  }
  return rows;
}

ScoreCost score_cost(int64_t length, int64_t stride, int64_t levels) {
  check(length >= 1 && stride >= 2 && levels >= 1, "score_cost: need T >= 1, s >= 2, L >= 1, got ", length, ", ",
        stride, ", ", levels);
  ScoreCost cost;
  int64_t n = length;
  for (int64_t l = 0; l < levels; ++l) {
    LevelCost level{l, n, n * n, static_cast<double>(n * n) / static_cast<double>(length * length),
                    std::pow(static_cast<double>(stride), -2.0 * static_cast<double>(l))};
    cost.ratio += level.relative;
    cost.bound += level.bound_term;
    cost.levels.push_back(level);
    n = (n + stride - 1) / stride;  // T_l = ceil(T_{l−1} / s)
  }
  cost.limit = 1.0 / (1.0 - std::pow(static_cast<double>(stride), -2.0));
  return cost;
}

}  // namespace hkt::inspect
