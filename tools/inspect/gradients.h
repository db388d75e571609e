#pragma once
// Gradients of a trained model: a per-parameter table (norms, non-finite
// entries), a float64 finite-difference check of backward on the real model,
// and the gradient dump of SPEC section 6 for external checkers.
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "models/classifier.h"

namespace hkt::inspect {

struct GradientRow {
  std::string name;
  Shape shape;
  double grad_norm = 0, grad_max_abs = 0, param_norm = 0;
  int64_t nonfinite = 0;  // NaN or infinite gradient entries
  bool has_grad = false;  // false: backward never reached the parameter
};

// Zeroes the gradients, runs the batch's loss backward and returns the loss.
double backward_loss(models::Classifier& model, const data::Batch& batch);
// One row per parameter, from the gradients backward left (in SPEC order).
std::vector<GradientRow> gradient_rows(const Module& model);

struct GradcheckSettings {
  int64_t per_parameter = 4;  // coordinates sampled from each parameter
  double eps = 1e-6;          // central-difference step (float64)
  double atol = 1e-8, rtol = 1e-4;  // pass: |analytic − numeric| ≤ atol + rtol·|numeric|
  uint64_t seed = 1;
};

struct GradcheckRow {
  std::string name;
  int64_t checked = 0;
  double worst_error = 0;       // max |analytic − numeric| over the coordinates
  double worst_relative = 0;    // that error / max(|numeric|, 1e-12)
  int64_t worst_index = 0;      // flat index of the worst coordinate
  double analytic = 0, numeric = 0;  // at the worst coordinate
  bool passed = true;
};

// Checks backward on a float64 copy of `model` (the model itself is left
// unchanged): analytic gradients of the batch loss against central differences
// at `per_parameter` random coordinates of every parameter.
std::vector<GradcheckRow> gradcheck_model(const models::Classifier& model, const data::Batch& batch,
                                          const GradcheckSettings& settings = {});

// SPEC section 6 "Gradient dumps": every parameter, input.{tokens,lengths,labels},
// output.{logits,loss}, grad.<parameter>; the config in __metadata__.
// Runs forward and backward on `model` (its gradients are left set).
void write_gradient_dump(const std::string& path, models::Classifier& model, const data::Batch& batch);

}  // namespace hkt::inspect
