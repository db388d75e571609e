#include "engine/autograd.h"

#include <atomic>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/tensor_ops.h"

namespace hkt {
namespace {

thread_local bool recording = true;

// The node whose backward runs on this thread, and the sums of gradients
// that backward() keeps for the nodes not yet run (take_gradient_sum).
struct RunningBackward {
  const Node* node = nullptr;
  std::unordered_map<Node*, Tensor>* sums = nullptr;
};
thread_local RunningBackward running;

class RunningGuard {
 public:
  explicit RunningGuard(RunningBackward now) : previous_(running) { running = now; }
  ~RunningGuard() { running = previous_; }
  RunningGuard(const RunningGuard&) = delete;
  RunningGuard& operator=(const RunningGuard&) = delete;

 private:
  RunningBackward previous_;
};
std::atomic<bool> anomaly_mode{false};

// Index of the first value `bad` picks in a floating tensor, or -1.
template <class T, class Predicate>
int64_t first_index(const T* values, int64_t count, Predicate bad) {
  for (int64_t i = 0; i < count; ++i)
    if (bad(values[i])) return i;
  return -1;
}

struct NonFinite {
  int64_t nan_index = -1, inf_index = -1;  // first of each, -1: none
  double inf_value = 0;
};

NonFinite find_non_finite(const Tensor& tensor) {
  NonFinite found;
  if (!tensor.defined() || !is_floating(tensor.dtype()) || tensor.numel() == 0) return found;
  const Tensor host = tensor.device() == Device::cpu() ? tensor : tensor.detach().to(Device::cpu());
  auto scan = [&](const auto* values) {
    found.nan_index = first_index(values, host.numel(), [](auto v) { return std::isnan(v); });
    found.inf_index = first_index(values, host.numel(), [](auto v) { return std::isinf(v); });
    if (found.inf_index >= 0) found.inf_value = values[found.inf_index];
  };
  if (host.dtype() == DType::Float32) scan(static_cast<const float*>(host.raw_data()));
  else scan(static_cast<const double*>(host.raw_data()));
  return found;
}

std::string describe_nan(const NonFinite& found) { return "NaN at flat index " + std::to_string(found.nan_index); }
std::string describe_inf(const NonFinite& found) {
  return std::string(found.inf_value > 0 ? "Inf" : "-Inf") + " at flat index " + std::to_string(found.inf_index);
}

std::string shapes_of(const std::vector<Tensor>& inputs) {
  std::string text;
  for (const Tensor& input : inputs) text += (text.empty() ? "" : ", ") + (input.defined() ? input.str() : "none");
  return text;
}

// A NaN is always an anomaly. An infinity is one only where it starts: an op
// may pass on an infinite input (softmax of a masked score), and some write
// -inf on purpose (ForwardInf::Intended: attention masks).
void check_forward_anomaly(const char* op, const std::vector<Tensor>& inputs, const Tensor& output,
                           ForwardInf infinities) {
  const NonFinite found = find_non_finite(output);
  std::string what;
  if (found.nan_index >= 0) {
    what = describe_nan(found);
  } else if (found.inf_index >= 0 && infinities == ForwardInf::Anomaly) {
    bool inherited = false;
    for (const Tensor& input : inputs) inherited = inherited || find_non_finite(input).inf_index >= 0;
    if (!inherited) what = describe_inf(found);
  }
  if (!what.empty())
    fail("detect_anomaly: forward of '", op, "' produced ", what, " in its output ", output, " (inputs ",
         shapes_of(inputs), ")");
}

void check_backward_anomaly(const Node& node, const Tensor& output_grad, const std::vector<Tensor>& input_grads) {
  for (size_t i = 0; i < input_grads.size(); ++i) {
    const NonFinite found = find_non_finite(input_grads[i]);
    if (found.nan_index < 0 && found.inf_index < 0) continue;
    fail("detect_anomaly: backward of '", node.op, "' produced ",
         found.nan_index >= 0 ? describe_nan(found) : describe_inf(found), " in the gradient ", input_grads[i],
         " for input ", i, " (inputs ", shapes_of(node.inputs), ", output ", node.output_shape,
         ", output gradient ", output_grad, ")");
  }
}

// Nodes reachable from `root`, each after every node that consumes its output
// (so the reverse of this order visits consumers before producers). The order
// owns the nodes: freeing a consumer's inputs would otherwise free its producers.
std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node*> visited;
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};
  visited.insert(root.get());
  while (!stack.empty()) {
    auto& [node, next_input] = stack.back();
    if (node->freed)
      fail("backward: the graph through '", node->op, "' was already freed by an earlier backward(); "
           "call backward(gradient, /*retain_graph=*/true) to run backward through it twice");
    if (next_input < node->inputs.size()) {
      const Tensor& input = node->inputs[next_input++];
      if (!input.defined()) continue;  // an optional input (a missing bias) has no producer
      const std::shared_ptr<Node>& producer = input.grad_fn();
      if (producer != nullptr && visited.insert(producer.get()).second) stack.push_back({producer, 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

// The sum of two gradients, with ops/elementwise.h's add (engine/tensor_ops.h).
Tensor sum_of(const Tensor& a, const Tensor& b) {
  auto* add = tensor_ops().add;
  if (add == nullptr) fail("backward: no 'add' op is registered to sum gradients (ops/elementwise.cpp registers it)");
  return add(a, b);
}

void accumulate(std::unordered_map<Node*, Tensor>& sums, Node* node, const Tensor& gradient) {
  auto [it, inserted] = sums.try_emplace(node, gradient);
  if (!inserted) it->second = sum_of(it->second, gradient);
}

void accumulate_leaf(const Tensor& leaf, const Tensor& gradient) {
  Tensor existing = leaf.grad();
  // The first gradient is cloned: op backwards may hand the same tensor to
  // several inputs, and optimizers and clipping update .grad in place.
  leaf.set_grad(existing.defined() ? sum_of(existing, gradient) : gradient.clone());
}

}  // namespace

bool detect_anomaly() { return anomaly_mode.load(std::memory_order_relaxed); }
void set_detect_anomaly(bool enabled) { anomaly_mode.store(enabled, std::memory_order_relaxed); }

bool grad_enabled() { return recording; }
void set_grad_enabled(bool enabled) { recording = enabled; }

namespace {

// The gradient summed so far for x, taken out of `sums` if nothing else can see it (no other
// handle, no view of its storage), so that it may be written in place.
Tensor take_sole_sum(std::unordered_map<Node*, Tensor>& sums, const Tensor& x) {
  if (!x.defined() || !x.requires_grad() || x.is_leaf()) return Tensor();
  auto found = sums.find(x.grad_fn().get());
  if (found == sums.end()) return Tensor();
  const Tensor& sum = found->second;
  if (!sum.sole_owner() || sum.shape() != x.shape() || sum.dtype() != x.dtype() || sum.device() != x.device())
    return Tensor();
  Tensor taken = std::move(found->second);
  sums.erase(found);
  return taken;
}

}  // namespace

Tensor take_gradient_sum(size_t input) {
  if (running.node == nullptr || input >= running.node->inputs.size()) return Tensor();
  const Tensor& x = running.node->inputs[input];
  if (!x.defined() || !x.requires_grad() || x.is_leaf()) return Tensor();
  Tensor sum = take_sole_sum(*running.sums, x);
  if (sum.defined()) return sum;
  // x a reshape of y (a model's view_heads): y's sum, seen in x's shape. What the backward returns
  // for x reaches y through the reshape's backward, which runs later (it made x), so the sum
  // taken from y comes back to y exactly once, whatever else x's other consumers add.
  const Node& producer = *x.grad_fn();
  if (producer.op != "reshape" || producer.inputs.size() != 1) return Tensor();
  sum = take_sole_sum(*running.sums, producer.inputs[0]);
  if (!sum.defined()) return Tensor();
  Tensor view = sum.detach();  // the only handle once `sum` goes
  view.impl()->shape = x.shape();
  return view;
}

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!recording) return false;
  for (const Tensor& input : inputs)
    if (input.defined() && input.requires_grad()) return true;
  return false;
}

void record(const char* op, const std::vector<Tensor>& inputs, Tensor& output, Node::BackwardFn backward,
            ForwardInf infinities) {
  if (anomaly_mode.load(std::memory_order_relaxed)) check_forward_anomaly(op, inputs, output, infinities);
  if (!needs_grad(inputs)) return;
  auto node = std::make_shared<Node>();
  node->op = op;
  node->inputs = inputs;
  node->backward = std::move(backward);
  node->output_shape = output.shape();
  output.impl()->grad_fn = std::move(node);
  output.impl()->requires_grad = true;
}

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph) {
  check(root.requires_grad(), "backward: tensor ", root,
        " does not require grad (no input of the ops that made it requires grad)");
  Tensor seed = gradient;
  if (!seed.defined()) {
    check(root.numel() == 1, "backward: an implicit gradient needs a one-element output, got ", root,
          "; pass a gradient of the same shape");
    seed = Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  check(seed.shape() == root.shape() && seed.dtype() == root.dtype(), "backward: gradient ", seed,
        " does not match output ", root);

  NoGradGuard no_grad;
  if (root.is_leaf()) {
    accumulate_leaf(root, seed);
    return;
  }
  std::vector<std::shared_ptr<Node>> order = topological_order(root.grad_fn());
  std::unordered_map<Node*, Tensor> sums{{root.grad_fn().get(), seed}};
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = it->get();
    auto found = sums.find(node);
    if (found == sums.end()) continue;
    Tensor output_grad = std::move(found->second);
    sums.erase(found);
    std::vector<Tensor> input_grads;
    {
      RunningGuard guard({node, &sums});
      input_grads = node->backward(output_grad);
    }
    check(input_grads.size() == node->inputs.size(), "backward of '", node->op, "': returned ",
          input_grads.size(), " gradients for ", node->inputs.size(), " inputs");
    if (anomaly_mode.load(std::memory_order_relaxed)) check_backward_anomaly(*node, output_grad, input_grads);
    for (size_t i = 0; i < input_grads.size(); ++i) {
      const Tensor& input = node->inputs[i];
      const Tensor& input_grad = input_grads[i];
      if (!input.defined() || !input.requires_grad() || !input_grad.defined()) continue;
      check(input_grad.shape() == input.shape(), "backward of '", node->op, "': gradient ",
            input_grad, " for input ", i, " of shape ", input.shape());
      if (input.is_leaf())
        accumulate_leaf(input, input_grad);
      else
        accumulate(sums, input.grad_fn().get(), input_grad);
    }
    if (!retain_graph) {
      node->backward = nullptr;
      node->inputs.clear();
      node->freed = true;
    }
  }
}

}  // namespace hkt
