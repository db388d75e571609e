// hkt-demo: fits a small MLP to three interleaved spirals and prints the loss
// falling. The shortest complete use of the engine: a Module, the forward of
// a few ops, cross-entropy, backward, clipping, AdamW.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "hkt.h"
#include "io/cli.h"
#include "ops/blas.h"

using namespace hkt;

namespace {

struct Mlp : Module {
  Parameter fc1_weight, fc1_bias, fc2_weight, fc2_bias, head_weight, head_bias;
  Mlp(int64_t hidden, int64_t classes, Generator& generator) {
    auto init = [&](int64_t out, int64_t in) { return randn({out, in}, generator, DType::Float32, Device::cpu(), 0.0, 1.0 / std::sqrt(double(in))); };
    fc1_weight = register_parameter("fc1_weight", init(hidden, 2));
    fc1_bias = register_parameter("fc1_bias", Tensor::zeros({hidden}));
    fc2_weight = register_parameter("fc2_weight", init(hidden, hidden));
    fc2_bias = register_parameter("fc2_bias", Tensor::zeros({hidden}));
    head_weight = register_parameter("head_weight", init(classes, hidden));
    head_bias = register_parameter("head_bias", Tensor::zeros({classes}));
  }
  Tensor forward(const Tensor& points) const {
    Tensor h = gelu(linear(points, fc1_weight, fc1_bias));
    h = gelu(linear(h, fc2_weight, fc2_bias));
    return linear(h, head_weight, head_bias);
  }
};

// Three spiral arms with noise: points [n, 2] and labels [n].
void make_spirals(int64_t per_class, Generator& generator, Tensor& points, Tensor& labels) {
  std::vector<float> xy;
  std::vector<int64_t> classes;
  for (int64_t arm = 0; arm < 3; ++arm)
    for (int64_t i = 0; i < per_class; ++i) {
      double radius = double(i) / double(per_class);
      double angle = 4.0 * radius + 2.0 * M_PI * double(arm) / 3.0 + 0.2 * generator.normal();
      xy.push_back(float(radius * std::cos(angle)));
      xy.push_back(float(radius * std::sin(angle)));
      classes.push_back(arm);
    }
  points = Tensor::from_vector(xy, {3 * per_class, 2});
  labels = Tensor::from_vector(classes, {3 * per_class});
}

double accuracy(const Tensor& logits, const Tensor& labels) {
  NoGradGuard no_grad;
  auto predicted = logits.to_vector<float>();
  auto truth = labels.to_vector<int64_t>();
  const int64_t classes = logits.size(1);
  int64_t correct = 0;
  for (size_t row = 0; row < truth.size(); ++row) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (predicted[row * classes + c] > predicted[row * classes + best]) best = c;
    correct += best == truth[row];
  }
  return double(correct) / double(truth.size());
}

}  // namespace

int main(int argc, char** argv) {
  hkt::reexec_with_blas_core(argv);  // before any work: OpenBLAS picks its kernels when it loads
  cli::Flags flags("hkt-demo", "Fits a small MLP to three interleaved spirals and prints the loss falling.");
  flags.add_int("steps", 300, "AdamW steps", 1, 1'000'000);
  // `hkt-demo 30`, the form scripts/demo.sh and older notes use, is `--steps 30`.
  std::vector<const char*> args(argv, argv + argc);
  std::string steps_flag;
  if (argc == 2 && argv[1][0] != '-') {
    steps_flag = std::string("--steps=") + argv[1];
    args = {argv[0], steps_flag.c_str()};
  }
  return cli::run(flags, static_cast<int>(args.size()), args.data(), [&] {
    const int64_t steps = flags.get_int("steps");
    Generator generator(0);
    Tensor points, labels;
    make_spirals(200, generator, points, labels);
    Mlp model(64, 3, generator);
    AdamW optimizer(model.named_parameters(), {.lr = 1e-2, .weight_decay = 1e-4});
    std::printf("hkt-demo: MLP 2-64-64-3 (%lld parameters) on 600 spiral points, AdamW, %lld steps\n",
                (long long)model.parameter_count(), (long long)steps);
    for (int64_t step = 1; step <= steps; ++step) {
      optimizer.zero_grad();
      Tensor logits = model.forward(points);
      Tensor loss = cross_entropy(logits, labels);
      loss.backward();
      clip_grad_norm(model.named_parameters(), 1.0);
      optimizer.step();
      if (step == 1 || step % 25 == 0)
        std::printf("step %4lld  loss %.4f  accuracy %.3f\n", (long long)step, loss.item(), accuracy(logits, labels));
    }
    return 0;
  });
}
