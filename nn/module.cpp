#include "nn/module.h"

namespace hkt {
namespace {

// Points every handle of `target` at `source`'s data (same shape).
void replace_data(const Tensor& target, const Tensor& source) {
  TensorImpl* impl = target.impl();
  impl->storage = source.impl()->storage;
  impl->byte_offset = source.impl()->byte_offset;
  impl->dtype = source.dtype();
  impl->grad.reset();
}

}  // namespace

void Module::check_new_name(const std::string& name) const {
  check(!name.empty() && name.find('.') == std::string::npos, "Module: invalid name '", name,
        "' (names are non-empty and hold no '.')");
  for (const auto& [existing, _] : parameters_) check(existing != name, "Module: name '", name, "' registered twice");
  for (const auto& [existing, _] : children_) check(existing != name, "Module: name '", name, "' registered twice");
}

Parameter& Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name);
  check(value.defined(), "Module: parameter '", name, "' is undefined");
  Tensor leaf = value.detach();
  if (requires_grad) leaf.requires_grad_(true);
  parameters_.emplace_back(name, leaf);
  return parameters_.back().second;
}

void Module::collect(const std::string& prefix, NamedTensors& out) const {
  for (const auto& [name, value] : parameters_) out.emplace_back(prefix + name, value);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", out);
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [_, value] : named_parameters()) out.push_back(value);
  return out;
}

Tensor Module::parameter(const std::string& dotted_name) const {
  for (auto& [name, value] : named_parameters())
    if (name == dotted_name) return value;
  fail("Module: no parameter named '", dotted_name, "'");
}

int64_t Module::parameter_count() const {
  int64_t count = 0;
  for (auto& [_, value] : named_parameters()) count += value.numel();
  return count;
}

void Module::zero_grad() {
  for (auto& [_, value] : named_parameters()) value.zero_grad();
}

void Module::train(bool training) {
  training_ = training;
  for (auto& [_, child] : children_) child->train(training);
}

void Module::to(DType dtype) {
  for (auto& [_, value] : named_parameters()) replace_data(value, value.detach().to(dtype));
}

void Module::to(Device device) {
  for (auto& [_, value] : named_parameters()) replace_data(value, value.detach().to(device));
}

}  // namespace hkt
