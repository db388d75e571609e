#pragma once
// Tensor: a shape, a dtype and a contiguous row-major view of a Storage, plus
// the autograd fields (requires_grad, grad, grad_fn). Copying a Tensor copies
// a handle, as in PyTorch; clone() copies the data.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/device.h"
#include "engine/dtype.h"
#include "engine/error.h"
#include "engine/storage.h"

namespace hkt {

struct Node;

struct TensorImpl {
  Shape shape;
  DType dtype = DType::Float32;
  std::shared_ptr<Storage> storage;
  size_t byte_offset = 0;  // start of this tensor inside storage (reshape shares storage)
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;
  std::shared_ptr<Node> grad_fn;  // the op that made this tensor; null for leaves
};

int64_t shape_numel(const Shape& shape);

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Factories. Values are written in the tensor's dtype.
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::Float32, Device device = Device::cpu());
  static Tensor scalar(double value, DType dtype = DType::Float32, Device device = Device::cpu());
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape, Device device = Device::cpu());
  // Any dtype from doubles (labels, indices, test data).
  static Tensor from_doubles(const std::vector<double>& values, const Shape& shape, DType dtype,
                             Device device = Device::cpu());

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return checked_impl().shape; }
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const { return shape_numel(shape()); }
  DType dtype() const { return checked_impl().dtype; }
  Device device() const { return checked_impl().storage->device(); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }
  std::string str() const;  // "float32[4, 3]"

  // Raw pointer to the first element, on the tensor's device.
  void* raw_data() const;
  // Typed pointer on the CPU; throws if the dtype or device differ.
  template <class T> T* data() const;
  // The elements as T, copied to the host (works for every dtype and device).
  template <class T> std::vector<T> to_vector() const;
  double item() const;  // a one-element tensor's value

  // Autograd, with PyTorch's names.
  bool requires_grad() const { return checked_impl().requires_grad; }
  Tensor& requires_grad_(bool enabled = true);
  Tensor grad() const;
  void set_grad(const Tensor& grad) const;
  void zero_grad() const;  // drops the gradient, as PyTorch's set_to_none
  const std::shared_ptr<Node>& grad_fn() const { return checked_impl().grad_fn; }
  bool is_leaf() const { return grad_fn() == nullptr; }
  // Reverse-mode pass from this tensor. With no gradient given the tensor must
  // hold one element (a loss). The graph is freed unless retain_graph.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;

  Tensor detach() const;                 // same storage, no graph
  Tensor clone() const;                  // new storage, differentiable copy
  Tensor to(DType dtype) const;          // differentiable cast (floating types)
  Tensor to(Device device) const;        // copy to another device (not differentiable yet)

  TensorImpl* impl() const { return impl_.get(); }
  // True when this handle is the only one to the tensor and no other tensor
  // (a reshape, a detach) shares its storage: writing it in place changes
  // nothing anyone else can read.
  bool sole_owner() const { return impl_ != nullptr && impl_.use_count() == 1 && impl_->storage.use_count() == 1; }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  TensorImpl& checked_impl() const;
  std::shared_ptr<TensorImpl> impl_;
};

// Tensors under names: parameters ("blocks.0.ln1.weight"), optimizer state,
// the contents of a safetensors file.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// "float32[4, 3]" in an error message (engine/error.h); an undefined tensor is "undefined".
void append_message(std::ostream& out, const Tensor& t);

}  // namespace hkt
