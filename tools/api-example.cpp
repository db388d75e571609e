// tools/api-example.cpp (a test checks that this block and the file agree)
#include <cstdio>

#include "hkt.h"
using namespace hkt;

struct Net : Module {
  Parameter weight, bias;
  explicit Net(Generator& gen) {
    weight = register_parameter("weight", randn({3, 4}, gen, DType::Float32, Device::cpu(), 0.0, 0.1));
    bias = register_parameter("bias", Tensor::zeros({3}));
  }
  Tensor forward(const Tensor& x) const { return linear(gelu(x), weight, bias); }
};

int main() {
  Generator gen(0);
  Net net(gen);
  AdamW optimizer(net.named_parameters(), {.lr = 1e-2});
  Tensor x = randn({8, 4}, gen);                                      // [batch, features]
  Tensor labels = Tensor::from_vector<int64_t>({0, 1, 2, 0, 1, 2, 0, 1}, {8});
  Tensor loss = cross_entropy(net.forward(x), labels);                // mean over the batch
  loss.backward();                                                    // reverse mode
  std::printf("loss %.4f, |grad W| %.4f\n", loss.item(), grad_norm({{"w", net.weight}}));
  clip_grad_norm(net.named_parameters(), 1.0);
  optimizer.step();
  optimizer.zero_grad();
}
