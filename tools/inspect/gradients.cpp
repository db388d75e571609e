#include "tools/inspect/gradients.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "hkt.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "tools/inspect/run.h"
#include "tools/inspect/test_faults.h"

namespace hkt::inspect {

double backward_loss(models::Classifier& model, const data::Batch& batch) {
  model.zero_grad();
  Tensor loss = classifier_loss(model, batch);
  loss.backward();
  return loss.item();
}

std::vector<GradientRow> gradient_rows(const Module& model) {
  std::vector<GradientRow> rows;
  for (const auto& [name, parameter] : model.named_parameters()) {
    GradientRow row{name, parameter.shape()};
    for (double value : parameter.to_vector<double>()) row.param_norm += value * value;
    row.param_norm = std::sqrt(row.param_norm);
    Tensor grad = parameter.grad();
    row.has_grad = grad.defined();
    if (row.has_grad) {
      for (double value : grad.to_vector<double>()) {
        if (!std::isfinite(value)) {
          ++row.nonfinite;
          continue;
        }
        row.grad_norm += value * value;
        row.grad_max_abs = std::max(row.grad_max_abs, std::abs(value));
      }
      row.grad_norm = std::sqrt(row.grad_norm);  // over the finite entries
    }
    rows.push_back(row);
  }
  return rows;
}

namespace {

// A float64 model with the same config and parameter values.
std::unique_ptr<models::Classifier> float64_copy(const models::Classifier& model) {
  auto copy = std::make_unique<models::Classifier>(model.config(), 0);
  copy->set_fused_attention(model.fused_attention());
  copy->to(DType::Float64);
  for (const auto& [name, target] : copy->named_parameters()) {
    std::vector<double> values = model.parameter(name).to_vector<double>();
    std::memcpy(target.data<double>(), values.data(), values.size() * sizeof(double));
  }
  return copy;
}

// Up to `count` distinct flat indices of [0, n), all of them when n ≤ count.
std::vector<int64_t> sample_coordinates(int64_t n, int64_t count, Generator& generator) {
  std::set<int64_t> chosen;
  if (n <= count) {
    for (int64_t i = 0; i < n; ++i) chosen.insert(i);
  } else {
    while (static_cast<int64_t>(chosen.size()) < count)
      chosen.insert(static_cast<int64_t>(generator.next_u64() % static_cast<uint64_t>(n)));
  }
  return {chosen.begin(), chosen.end()};
}

}  // namespace

std::vector<GradcheckRow> gradcheck_model(const models::Classifier& model, const data::Batch& batch,
                                          const GradcheckSettings& settings) {
  check(settings.per_parameter >= 1 && settings.eps > 0, "gradcheck: need per_parameter >= 1 and eps > 0, got ",
        settings.per_parameter, " and ", settings.eps);
  const TestFaults faults;  // HKT_TEST_BREAK_BACKWARD (tools/inspect/test_faults.h)
  std::unique_ptr<models::Classifier> copy = float64_copy(model);
  backward_loss(*copy, batch);
  Generator generator(settings.seed);
  std::vector<GradcheckRow> rows;
  NoGradGuard no_grad;
  for (const auto& [name, parameter] : copy->named_parameters()) {
    GradcheckRow row{name};
    double worst_score = 0;
    Tensor grad = parameter.grad();
    const std::vector<double> analytic =
        grad.defined() ? grad.to_vector<double>() : std::vector<double>(static_cast<size_t>(parameter.numel()), 0.0);
    double* values = parameter.data<double>();
    for (int64_t i : sample_coordinates(parameter.numel(), settings.per_parameter, generator)) {
      const double saved = values[i];
      values[i] = saved + settings.eps;
      const double plus = classifier_loss(*copy, batch).item();
      values[i] = saved - settings.eps;
      const double minus = classifier_loss(*copy, batch).item();
      values[i] = saved;
      const double numeric = (plus - minus) / (2 * settings.eps);
      const double error = std::abs(analytic[static_cast<size_t>(i)] - numeric);
      // error in units of the tolerance; > 1 fails, NaN counts as the worst
      double score = error / (settings.atol + settings.rtol * std::abs(numeric));
      if (std::isnan(score)) score = INFINITY;
      if (row.checked == 0 || score > worst_score) {
        worst_score = score;
        row.worst_error = error;
        row.worst_relative = error / std::max(std::abs(numeric), 1e-12);
        row.worst_index = i;
        row.analytic = analytic[static_cast<size_t>(i)];
        row.numeric = numeric;
      }
      row.passed = row.passed && score <= 1.0;
      ++row.checked;
    }
    rows.push_back(row);
  }
  return rows;
}

void write_gradient_dump(const std::string& path, models::Classifier& model, const data::Batch& batch) {
  model.zero_grad();
  Tensor logits = model.forward(batch.tokens, batch.lengths);
  Tensor loss = cross_entropy(logits, batch.labels);
  loss.backward();
  NamedTensors tensors = model.named_parameters();
  tensors.emplace_back("input.tokens", batch.tokens);
  tensors.emplace_back("input.lengths", batch.lengths);
  tensors.emplace_back("input.labels", batch.labels);
  tensors.emplace_back("output.logits", logits.detach());
  tensors.emplace_back("output.loss", reshape(loss.detach(), {1}));
  for (const auto& [name, parameter] : model.named_parameters()) {
    Tensor grad = parameter.grad();
    // A parameter backward never reached has a zero gradient, as PyTorch's
    // dumps write it (torch.zeros_like), so the file always holds every name.
    tensors.emplace_back("grad." + name, grad.defined() ? grad : Tensor::zeros(parameter.shape(), parameter.dtype()));
  }
  const std::map<std::string, std::string> metadata{{"format", "hkt-gradient-dump-1"},
                                                    {"config", to_json(models::config_to_json(model.config()))}};
  save_safetensors(path, tensors, metadata);
}

}  // namespace hkt::inspect
