#include "nn/optim.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/autograd.h"
#include "engine/dispatch.h"
#include "ops/elementwise.h"
#include "ops/optim.h"
#include "ops/reduce.h"

namespace hkt {

// ---- optimizers -----------------------------------------------------------

namespace {

std::vector<Tensor> zeros_like_all(const NamedTensors& parameters) {
  std::vector<Tensor> out;
  for (const auto& [_, p] : parameters) out.push_back(Tensor::zeros(p.shape(), p.dtype(), p.device()));
  return out;
}

const Tensor& find_state(const NamedTensors& state, const std::string& name, const Tensor& like) {
  for (const auto& [key, value] : state)
    if (key == name) {
      check(value.shape() == like.shape(), "optimizer state '", name, "' has shape ", value.shape(),
            ", expected ", like.shape());
      return value;
    }
  fail("optimizer state '", name, "' is missing");
}

// Copies saved values into the live buffer, keeping its dtype and device.
void assign(Tensor& target, const Tensor& source) {
  Tensor converted = source.detach().to(target.dtype()).to(target.device());
  target = converted.clone();
}

Tensor step_tensor(int64_t step) { return Tensor::from_vector<int64_t>({step}, {1}); }

}  // namespace

Optimizer::Optimizer(NamedTensors parameters) : parameters_(std::move(parameters)) {
  for (const auto& [name, p] : parameters_)
    check(p.defined() && p.is_leaf() && p.requires_grad(), "optimizer: parameter '", name,
          "' must be a leaf tensor that requires grad");
}

void Optimizer::zero_grad() {
  for (auto& [_, p] : parameters_) p.zero_grad();
}

SGD::SGD(NamedTensors parameters, SGDOptions options) : Optimizer(std::move(parameters)), options_(options) {
  lr_ = options.lr;
  if (options_.momentum != 0.0) velocity_ = zeros_like_all(parameters_);
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& p = parameters_[i].second;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    Tensor none;
    Tensor& velocity = velocity_.empty() ? none : velocity_[i];
    dispatch::kernel<SGDKernel>(kernels::sgd_step, p.device())(
        p, g, velocity, {lr_, options_.momentum, options_.weight_decay, step_count_ == 0});
  }
  ++step_count_;
}

NamedTensors SGD::state() const {
  NamedTensors out{{"optim.step", step_tensor(step_count_)}};
  for (size_t i = 0; i < velocity_.size(); ++i) out.emplace_back("optim.momentum." + parameters_[i].first, velocity_[i]);
  return out;
}

void SGD::load_state(const NamedTensors& state) {
  step_count_ = static_cast<int64_t>(find_state(state, "optim.step", step_tensor(0)).item());
  for (size_t i = 0; i < velocity_.size(); ++i)
    assign(velocity_[i], find_state(state, "optim.momentum." + parameters_[i].first, velocity_[i]));
}

AdamW::AdamW(NamedTensors parameters, AdamWOptions options) : Optimizer(std::move(parameters)), options_(options) {
  check(options.beta1 >= 0 && options.beta1 < 1 && options.beta2 >= 0 && options.beta2 < 1,
        "AdamW: betas must lie in [0, 1), got ", options.beta1, " and ", options.beta2);
  lr_ = options.lr;
  exp_avg_ = zeros_like_all(parameters_);
  exp_avg_sq_ = zeros_like_all(parameters_);
}

void AdamW::step() {
  NoGradGuard no_grad;
  ++step_count_;
  const double t = static_cast<double>(step_count_);
  AdamWHyper hyper{lr_, options_.beta1, options_.beta2, options_.eps, options_.weight_decay,
                   1 - std::pow(options_.beta1, t), 1 - std::pow(options_.beta2, t)};
  // Parameters with a gradient, as the lists of the multi-tensor kernel.
  std::vector<Tensor> params, grads, exp_avg, exp_avg_sq;
  bool one_device = true;
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Tensor& p = parameters_[i].second;
    Tensor g = p.grad();
    if (!g.defined()) continue;
    one_device = one_device && (params.empty() || p.device() == params.front().device());
    params.push_back(p);
    grads.push_back(g);
    exp_avg.push_back(exp_avg_[i]);
    exp_avg_sq.push_back(exp_avg_sq_[i]);
  }
  if (params.empty()) return;
  const Device device = params.front().device();
  if (one_device && dispatch::has_kernel(kernels::adamw_step_multi, device.type)) {
    dispatch::kernel<AdamWMultiKernel>(kernels::adamw_step_multi, device)(params, grads, exp_avg, exp_avg_sq, hyper);
    return;
  }
  for (size_t i = 0; i < params.size(); ++i)
    dispatch::kernel<AdamWKernel>(kernels::adamw_step, params[i].device())(params[i], grads[i], exp_avg[i], exp_avg_sq[i],
                                                                      hyper);
}

NamedTensors AdamW::state() const {
  NamedTensors out{{"optim.step", step_tensor(step_count_)}};
  for (size_t i = 0; i < parameters_.size(); ++i) {
    out.emplace_back("optim.exp_avg." + parameters_[i].first, exp_avg_[i]);
    out.emplace_back("optim.exp_avg_sq." + parameters_[i].first, exp_avg_sq_[i]);
  }
  return out;
}

void AdamW::load_state(const NamedTensors& state) {
  step_count_ = static_cast<int64_t>(find_state(state, "optim.step", step_tensor(0)).item());
  for (size_t i = 0; i < parameters_.size(); ++i) {
    assign(exp_avg_[i], find_state(state, "optim.exp_avg." + parameters_[i].first, exp_avg_[i]));
    assign(exp_avg_sq_[i], find_state(state, "optim.exp_avg_sq." + parameters_[i].first, exp_avg_sq_[i]));
  }
}

// ---- clipping -------------------------------------------------------------

namespace {

// Σ g² of one gradient. On the CPU in double, in one pass without a
// temporary, over fixed chunks added in order (the same value for any
// thread count); elsewhere with the device's ops.
double squared_norm(const Tensor& g) {
  if (g.device().type != DeviceType::CPU || (g.dtype() != DType::Float32 && g.dtype() != DType::Float64))
    return sum(mul(g, g)).item();
  constexpr int64_t kChunk = 4096;
  const int64_t n = g.numel(), chunks = (n + kChunk - 1) / kChunk;
  std::vector<double> partial(static_cast<size_t>(chunks));
  auto run = [&](auto* data) {
#pragma omp parallel for if (n > 8 * kChunk)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      double total = 0;
      for (int64_t i = chunk * kChunk; i < std::min(n, (chunk + 1) * kChunk); ++i)
        total += double(data[i]) * double(data[i]);
      partial[chunk] = total;
    }
  };
  if (g.dtype() == DType::Float32) run(static_cast<const float*>(g.raw_data()));
  else run(static_cast<const double*>(g.raw_data()));
  double total = 0;
  for (double part : partial) total += part;
  return total;
}

}  // namespace

double grad_norm(const NamedTensors& parameters) {
  NoGradGuard no_grad;
  double total = 0.0;
  for (const auto& [_, p] : parameters) {
    Tensor g = p.grad();
    if (g.defined() && g.numel() > 0) total += squared_norm(g);
  }
  return std::sqrt(total);
}

double clip_grad_norm(const NamedTensors& parameters, double max_norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got ", max_norm);
  double norm = grad_norm(parameters);
  if (!std::isfinite(norm)) {
    NoGradGuard no_grad;
    for (const auto& [name, p] : parameters) {
      Tensor g = p.grad();
      if (g.defined() && g.numel() > 0 && !std::isfinite(squared_norm(g)))
        fail("clip_grad_norm: the gradient of '", name, "' ", g.shape(), " holds NaN or Inf");
    }
    fail("clip_grad_norm: total gradient norm is ", norm);
  }
  return clip_grad_norm(parameters, max_norm, norm);
}

double clip_grad_norm(const NamedTensors& parameters, double max_norm, double norm) {
  check(max_norm > 0, "clip_grad_norm: max_norm must be positive, got ", max_norm);
  check(std::isfinite(norm) && norm >= 0, "clip_grad_norm: the given norm must be finite and non-negative, got ", norm);
  if (norm > max_norm) {
    double factor = max_norm / (norm + 1e-6);
    for (const auto& [_, p] : parameters) {
      Tensor g = p.grad();
      if (g.defined()) dispatch::kernel<ScaleKernel>(kernels::scale_, g.device())(g, factor);
    }
  }
  return norm;
}

}  // namespace hkt
