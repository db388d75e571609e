#pragma once
// The model configuration: the keys of SPEC section 6's `config` object.
#include <cstdint>
#include <string>

namespace hkt {
class Json;
}

namespace hkt::models {

struct ModelConfig {
  std::string attention = "hkt";  // "mha" or "hkt"
  int64_t vocab = 18;
  int64_t max_len = 512;
  int64_t d_model = 64;
  int64_t n_layers = 2;
  int64_t n_heads = 4;
  int64_t d_ff = 128;
  int64_t classes = 10;
  int64_t levels = 3;       // L, HKT only (level 0 is full resolution)
  int64_t stride = 2;       // s
  int64_t down_kernel = 3;  // k of the downsampling convolution (SPEC section 2)
  int64_t conv_kernel = 5;  // kc of the hybrid head's convolution (SPEC section 4)
  bool causal = false;
  // HKT: a pointwise d × d projection after each downsampling convolution
  // (SPEC section 2). Configs written before it existed lack the key: false.
  bool down_pointwise = false;

  int64_t head_dim() const { return d_model / n_heads; }
  // The levels the attention computes: `levels` for HKT, 1 for MHA (which
  // has no coarse levels, whatever `levels` holds).
  int64_t attention_levels() const { return attention == "hkt" ? levels : 1; }
  // Throws hkt::Error naming the first key whose value is invalid.
  void validate() const;
  bool operator==(const ModelConfig&) const = default;
};

// The config object of SPEC section 6 (every key, in SPEC order), and back;
// from_json throws naming a missing key or a value of the wrong type.
Json config_to_json(const ModelConfig& config);
ModelConfig config_from_json(const Json& json);

}  // namespace hkt::models
