#pragma once
// Reverse-mode autodiff. Every differentiable op, after computing its output,
// calls record() with its inputs and a closure that maps the output's gradient
// to one gradient per input. backward() walks the recorded graph in reverse
// topological order, summing gradients where a tensor is used more than once,
// and frees each node's closure (and the tensors it saved) unless asked to
// retain the graph.
#include <functional>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace hkt {

struct Node {
  using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;
  std::string op;              // for error messages: "mul", "layer_norm"
  std::vector<Tensor> inputs;  // the edges of the graph
  BackwardFn backward;         // null once freed
  Shape output_shape;
  bool freed = false;
};

bool grad_enabled();
void set_grad_enabled(bool enabled);

// Disables graph recording in a scope, like torch::NoGradGuard.
class NoGradGuard {
 public:
  NoGradGuard() : previous_(grad_enabled()) { set_grad_enabled(false); }
  ~NoGradGuard() { set_grad_enabled(previous_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Anomaly mode (off by default, like torch.autograd.detect_anomaly): each op
// that records, right after its forward, and each node's backward check their
// floating-point results for NaN and Inf and throw hkt::Error naming the op,
// the pass, and the shapes of its inputs and output, at the first op that
// makes one, rather than where the loss finally shows it. It costs one flag
// test per op when off; when on, a scan of every result (and a device-to-host
// copy on CUDA). The flag is process-wide.
bool detect_anomaly();
void set_detect_anomaly(bool enabled);

class DetectAnomalyGuard {
 public:
  explicit DetectAnomalyGuard(bool enabled = true) : previous_(detect_anomaly()) { set_detect_anomaly(enabled); }
  ~DetectAnomalyGuard() { set_detect_anomaly(previous_); }
  DetectAnomalyGuard(const DetectAnomalyGuard&) = delete;
  DetectAnomalyGuard& operator=(const DetectAnomalyGuard&) = delete;

 private:
  bool previous_;
};

// True when an op applied to these inputs must record a node.
bool needs_grad(const std::vector<Tensor>& inputs);

// What anomaly mode makes of an infinity in an op's forward output: an
// anomaly where it starts (no input held one), or intended, for an op that
// writes ±Inf on purpose (masked_fill's −inf attention masks). A NaN is an
// anomaly either way.
enum class ForwardInf { Anomaly, Intended };

// Attaches a node to `output` if any input requires grad and recording is on.
// `backward` returns one tensor per input (undefined for inputs without grad);
// it runs with recording off.
void record(const char* op, const std::vector<Tensor>& inputs, Tensor& output, Node::BackwardFn backward,
            ForwardInf infinities = ForwardInf::Anomaly);

void run_backward(const Tensor& root, const Tensor& gradient, bool retain_graph);

// Inside a node's backward: the gradient already summed for the node's input
// `input` by the consumers whose backward ran before, handed over so that the
// backward can add its own term into it (a GEMM with beta = 1, a kernel that
// accumulates) and return that tensor, instead of returning a new one that
// backward() would add in a separate pass over memory. Undefined when there
// is no such sum, when the input is a leaf (its .grad belongs to the user),
// or when anything else still holds the sum or shares its storage (an op
// whose backward hands one tensor to two inputs): then the backward returns a
// fresh gradient as usual. Where the input is a reshape of another tensor
// (view_heads), that tensor's sum is handed over, seen in the input's shape.
// Once taken, the sum is the backward's to return; it must return it (with
// its own term added) for that input.
Tensor take_gradient_sum(size_t input);

}  // namespace hkt
