#include "engine/autograd.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "ops/elementwise.h"

namespace hkt {
namespace {

thread_local bool recording = true;

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

void accumulate(std::unordered_map<Node*, Tensor>& sums, Node* node, const Tensor& gradient) {
  auto [it, inserted] = sums.try_emplace(node, gradient);
  if (!inserted) it->second = add(it->second, gradient);
}

void accumulate_leaf(const Tensor& leaf, const Tensor& gradient) {
  Tensor existing = leaf.grad();
  // The first gradient is cloned: op backwards may hand the same tensor to
  // several inputs, and optimizers and clipping update .grad in place.
  leaf.set_grad(existing.defined() ? add(existing, gradient) : gradient.clone());
}

}  // namespace

bool grad_enabled() { return recording; }
void set_grad_enabled(bool enabled) { recording = enabled; }

bool needs_grad(const std::vector<Tensor>& inputs) {
  if (!recording) return false;
  for (const Tensor& input : inputs)
    if (input.defined() && input.requires_grad()) return true;
  return false;
}

void record(const char* op, const std::vector<Tensor>& inputs, Tensor& output, Node::BackwardFn backward) {
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
  check(root.requires_grad(), "backward: tensor ", root.str(),
        " does not require grad (no input of the ops that made it requires grad)");
  Tensor seed = gradient;
  if (!seed.defined()) {
    check(root.numel() == 1, "backward: an implicit gradient needs a one-element output, got ", root.str(),
          "; pass a gradient of the same shape");
    seed = Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  check(seed.shape() == root.shape() && seed.dtype() == root.dtype(), "backward: gradient ", seed.str(),
        " does not match output ", root.str());

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
    std::vector<Tensor> input_grads = node->backward(output_grad);
    check(input_grads.size() == node->inputs.size(), "backward of '", node->op, "': returned ",
          input_grads.size(), " gradients for ", node->inputs.size(), " inputs");
    for (size_t i = 0; i < input_grads.size(); ++i) {
      const Tensor& input = node->inputs[i];
      const Tensor& input_grad = input_grads[i];
      if (!input.defined() || !input.requires_grad() || !input_grad.defined()) continue;
      check(input_grad.shape() == input.shape(), "backward of '", node->op, "': gradient ",
            input_grad.str(), " for input ", i, " of shape ", shape_str(input.shape()));
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
