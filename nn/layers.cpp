#include "nn/layers.h"

namespace hkt::nn {

Linear::Linear(int64_t in, int64_t out, Generator& generator) {
  weight = register_parameter("weight", randn({out, in}, generator, DType::Float32, Device::cpu(), 0.0, kInitStd));
  bias = register_parameter("bias", Tensor::zeros({out}));
}

LayerNorm::LayerNorm(int64_t d) {
  weight = register_parameter("weight", Tensor::ones({d}));
  bias = register_parameter("bias", Tensor::zeros({d}));
}

Embedding::Embedding(int64_t count, int64_t d, Generator& generator) {
  weight = register_parameter("weight", randn({count, d}, generator, DType::Float32, Device::cpu(), 0.0, kInitStd));
}

}  // namespace hkt::nn
