#include "engine/tensor.h"

#include <cstring>

#include "engine/autograd.h"
#include "engine/dispatch.h"
#include "engine/tensor_ops.h"

namespace hkt {
namespace {

template <class T>
void write_values_as(void* out, const std::vector<double>& values) {
  T* typed = static_cast<T*>(out);
  for (size_t i = 0; i < values.size(); ++i) typed[i] = static_cast<T>(values[i]);
}

template <class From, class To>
void convert(const void* from, To* to, int64_t n) {
  const From* typed = static_cast<const From*>(from);
  for (int64_t i = 0; i < n; ++i) to[i] = static_cast<To>(typed[i]);
}

// An entry of the TensorOps table, which ops/ must have filled in.
template <class Fn>
Fn* registered(Fn* fn, const char* name) {
  if (fn == nullptr) fail("tensor: no '", name, "' op is registered (ops/copy.cpp and ops/elementwise.cpp register it)");
  return fn;
}

}  // namespace

TensorOps& tensor_ops() {
  static TensorOps table;  // function-local: filled from other files' static initialisers
  return table;
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) {
    check(extent >= 0, "tensor: negative extent in shape ", shape);
    n *= extent;
  }
  return n;
}

TensorImpl& Tensor::checked_impl() const {
  if (!impl_) fail("tensor: use of an undefined tensor");
  return *impl_;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->dtype = dtype;
  impl->storage = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  return Tensor(std::move(impl));
}

Tensor Tensor::from_doubles(const std::vector<double>& values, const Shape& shape, DType dtype, Device device) {
  check(static_cast<int64_t>(values.size()) == shape_numel(shape), "tensor: ", values.size(),
        " values do not fill shape ", shape);
  std::vector<unsigned char> host(values.size() * dtype_size(dtype));
  switch (dtype) {
    case DType::Float32: write_values_as<float>(host.data(), values); break;
    case DType::Float64: write_values_as<double>(host.data(), values); break;
    case DType::Int32: write_values_as<int32_t>(host.data(), values); break;
    case DType::Int64: write_values_as<int64_t>(host.data(), values); break;
  }
  Tensor out = empty(shape, dtype, device);
  dispatch::allocator(device).copy_from_host(out.raw_data(), host.data(), host.size(), device.index);
  return out;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  return from_doubles(std::vector<double>(static_cast<size_t>(shape_numel(shape)), value), shape, dtype, device);
}
Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor Tensor::scalar(double value, DType dtype, Device device) { return full({}, value, dtype, device); }

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape, Device device) {
  check(static_cast<int64_t>(values.size()) == shape_numel(shape), "tensor: ", values.size(),
        " values do not fill shape ", shape);
  Tensor out = empty(shape, dtype_of<T>(), device);
  dispatch::allocator(device).copy_from_host(out.raw_data(), values.data(), values.size() * sizeof(T), device.index);
  return out;
}
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<int32_t>&, const Shape&, Device);
template Tensor Tensor::from_vector(const std::vector<int64_t>&, const Shape&, Device);

int64_t Tensor::size(int64_t axis) const {
  int64_t rank = dim();
  check(axis >= -rank && axis < rank, "tensor: axis ", axis, " out of range for shape ", shape());
  return shape()[static_cast<size_t>(axis < 0 ? axis + rank : axis)];
}

std::string Tensor::str() const { return std::string(dtype_name(dtype())) + shape_str(shape()); }

void append_message(std::ostream& out, const Tensor& t) {
  if (!t.defined()) {
    out << "undefined";
    return;
  }
  out << t.str();
}

void* Tensor::raw_data() const {
  const TensorImpl& impl = checked_impl();
  return static_cast<char*>(impl.storage->data()) + impl.byte_offset;
}

template <class T>
T* Tensor::data() const {
  check(dtype() == dtype_of<T>(), "tensor: data<", dtype_name(dtype_of<T>()), ">() on a ", *this, " tensor");
  check(device().type == DeviceType::CPU, "tensor: data() on a tensor on ", device(),
        "; copy it with to(Device::cpu()) first");
  return static_cast<T*>(raw_data());
}
template float* Tensor::data() const;
template double* Tensor::data() const;
template int32_t* Tensor::data() const;
template int64_t* Tensor::data() const;

template <class T>
std::vector<T> Tensor::to_vector() const {
  std::vector<unsigned char> host(nbytes());
  Device where = device();
  dispatch::allocator(where).copy_to_host(host.data(), raw_data(), host.size(), where.index);
  std::vector<T> values(static_cast<size_t>(numel()));
  switch (dtype()) {
    case DType::Float32: convert<float>(host.data(), values.data(), numel()); break;
    case DType::Float64: convert<double>(host.data(), values.data(), numel()); break;
    case DType::Int32: convert<int32_t>(host.data(), values.data(), numel()); break;
    case DType::Int64: convert<int64_t>(host.data(), values.data(), numel()); break;
  }
  return values;
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int32_t> Tensor::to_vector() const;
template std::vector<int64_t> Tensor::to_vector() const;

double Tensor::item() const {
  check(numel() == 1, "item: tensor of shape ", shape(), " has ", numel(), " elements, not 1");
  return to_vector<double>()[0];
}

Tensor& Tensor::requires_grad_(bool enabled) {
  check(!enabled || is_floating(dtype()), "requires_grad_: only floating tensors can require grad, not ", *this);
  check(enabled || is_leaf(), "requires_grad_: cannot turn off requires_grad of a non-leaf tensor; use detach()");
  checked_impl().requires_grad = enabled;
  return *this;
}

Tensor Tensor::grad() const {
  const auto& grad = checked_impl().grad;
  return grad ? Tensor(grad) : Tensor();
}

void Tensor::set_grad(const Tensor& grad) const {
  if (grad.defined())
    check(grad.shape() == shape() && grad.dtype() == dtype(), "set_grad: gradient ", grad,
          " does not match tensor ", *this);
  checked_impl().grad = grad.impl_;
}

void Tensor::zero_grad() const { checked_impl().grad.reset(); }

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  run_backward(*this, gradient, retain_graph);
}

Tensor Tensor::detach() const {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape();
  impl->dtype = dtype();
  impl->storage = checked_impl().storage;
  impl->byte_offset = checked_impl().byte_offset;
  return Tensor(std::move(impl));
}

Tensor Tensor::clone() const { return registered(tensor_ops().copy, "copy")(*this); }
Tensor Tensor::to(DType dtype) const { return registered(tensor_ops().cast, "cast")(*this, dtype); }
Tensor Tensor::to(Device device) const {
  return registered(tensor_ops().copy_to_device, "copy_to_device")(*this, device);
}

}  // namespace hkt
