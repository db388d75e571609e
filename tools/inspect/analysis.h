#pragma once
// The paper's analysis quantities, measured on a trained model:
// - Mardia's multivariate kurtosis of the attention scores, normalised as
//   κ = b_{2,p} / (p (p + 2)) so that a Gaussian gives 1 (the paper reports
//   κ ≈ 33 for trained HKT scores);
// - the split of each level's and head's bilinear form M = Wq_hᵀ Wk_h into
//   its symmetric and antisymmetric parts (Frobenius norms);
// - the score cost of L levels relative to one full-resolution score matrix,
//   counted for the model's T, s and L, beside the bound Σ_l s^(-2l) (SPEC, claim 1).
#include <cstdint>
#include <vector>

#include "models/classifier.h"
#include "tools/inspect/attention_maps.h"

namespace hkt::inspect {

struct Kurtosis {
  int64_t samples = 0, dims = 0;
  double b2p = 0;         // Mardia's b_{2,p} = mean over samples of ((x − x̄)ᵀ S⁻¹ (x − x̄))², S the 1/n covariance
  double normalised = 0;  // b_{2,p} / (p (p + 2)); 1 for a Gaussian; NaN when S is singular
};
// samples: n rows of p values each, row-major.
Kurtosis mardia_kurtosis(const std::vector<double>& samples, int64_t dims);

// The kurtosis of a block's scores: the samples are the H-vectors
// (S[b, 0, i, j], …, S[b, H−1, i, j]) over every example and valid pair (i, j),
// for each level's S^(l) (level = l) and for the fused, masked S (level = −1).
struct ScoreKurtosis {
  int64_t block = 0, level = 0;
  Kurtosis kurtosis;
};
std::vector<ScoreKurtosis> score_kurtosis(const std::vector<BlockAttention>& blocks);

struct BilinearSplit {
  int64_t block = 0, level = 0, head = 0;
  double norm = 0, symmetric = 0, antisymmetric = 0;  // ‖M‖_F, ‖(M + Mᵀ)/2‖_F, ‖(M − Mᵀ)/2‖_F
};
// Every block, level and head; MHA models have level 0 only.
std::vector<BilinearSplit> bilinear_splits(const models::Classifier& model);

struct LevelCost {
  int64_t level = 0, length = 0;  // T_l
  int64_t entries = 0;            // T_l², score entries per head
  double relative = 0;            // entries / T²
  double bound_term = 0;          // s^(−2l)
};
struct ScoreCost {
  std::vector<LevelCost> levels;
  double ratio = 0;  // Σ_l T_l² / T²
  double bound = 0;  // Σ_l s^(−2l) (1.3125 for s = 2, L = 3)
  double limit = 0;  // 1 / (1 − s^−2), the bound for any L (4/3 for s = 2)
};
ScoreCost score_cost(int64_t length, int64_t stride, int64_t levels);

}  // namespace hkt::inspect
