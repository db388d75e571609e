#pragma once
// Optimizers (PyTorch's SGD and AdamW) and global-norm gradient clipping.
// Each update is one dispatched kernel per parameter (ops/optim.h), so the
// CUDA backend brings its own fused kernels under the same names.
#include <string>
#include <vector>

#include "nn/module.h"

namespace hkt {

class Optimizer {
 public:
  // Named parameters (from Module::named_parameters()) name the state tensors
  // in checkpoints: "optim.exp_avg.<parameter name>".
  explicit Optimizer(NamedTensors parameters);
  virtual ~Optimizer() = default;

  virtual void step() = 0;
  void zero_grad();
  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }
  int64_t step_count() const { return step_count_; }

  // The state as named tensors ("optim.step" and per-parameter buffers), and
  // back; load_state checks every name and shape.
  virtual NamedTensors state() const = 0;
  virtual void load_state(const NamedTensors& state) = 0;

 protected:
  NamedTensors parameters_;
  double lr_ = 0.0;
  int64_t step_count_ = 0;
};

struct SGDOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;  // L2, added to the gradient as PyTorch's SGD does
};

class SGD : public Optimizer {
 public:
  SGD(NamedTensors parameters, SGDOptions options);
  void step() override;
  NamedTensors state() const override;
  void load_state(const NamedTensors& state) override;

 private:
  SGDOptions options_;
  std::vector<Tensor> velocity_;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;  // decoupled: p -= lr · wd · p
};

class AdamW : public Optimizer {
 public:
  AdamW(NamedTensors parameters, AdamWOptions options);
  void step() override;
  NamedTensors state() const override;
  void load_state(const NamedTensors& state) override;

 private:
  AdamWOptions options_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
};

// Scales all gradients so that their joint L2 norm is at most max_norm and
// returns the norm before scaling. A NaN or Inf norm throws, naming the first
// parameter whose gradient is not finite.
double clip_grad_norm(const NamedTensors& parameters, double max_norm);
// The same with the norm already measured (grad_norm, finite): one pass over
// the gradients fewer for a caller that needs the norm anyway.
double clip_grad_norm(const NamedTensors& parameters, double max_norm, double norm);

// The joint L2 norm of the gradients (parameters without one count as zero).
double grad_norm(const NamedTensors& parameters);

}  // namespace hkt
