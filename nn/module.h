#pragma once
// Module and Parameter, with the names of PyTorch's C++ frontend: a module
// registers parameters and child modules under names, and named_parameters()
// walks the tree with dotted names ("blocks.0.ln1.weight", SPEC section 5).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace hkt {

// A parameter is a leaf tensor that requires grad.
using Parameter = Tensor;

class Module {
 public:
  virtual ~Module() = default;

  // Names are unique within a module and hold no '.'.
  Parameter& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    check_new_name(name);
    children_.emplace_back(name, module);
    return module;
  }

  // Depth first, in registration order, own parameters before children's.
  NamedTensors named_parameters() const;
  std::vector<Tensor> parameters() const;
  Tensor parameter(const std::string& dotted_name) const;  // throws naming the missing parameter
  int64_t parameter_count() const;                          // number of scalars

  void zero_grad();
  void train(bool training = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Converts every parameter in place, so handles held elsewhere see the new
  // dtype or device (used for float64 gradient checks and for CUDA).
  void to(DType dtype);
  void to(Device device);

 private:
  void check_new_name(const std::string& name) const;
  void collect(const std::string& prefix, NamedTensors& out) const;

  NamedTensors parameters_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace hkt
