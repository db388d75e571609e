#include "models/config.h"

#include "engine/error.h"

namespace hkt::models {

void ModelConfig::validate() const {
  check(attention == "mha" || attention == "hkt", "config: attention must be \"mha\" or \"hkt\", got \"", attention,
        "\"");
  auto positive = [](const char* key, int64_t value) {
    check(value >= 1, "config: ", key, " must be at least 1, got ", value);
  };
  positive("vocab", vocab);
  positive("max_len", max_len);
  positive("d_model", d_model);
  positive("n_layers", n_layers);
  positive("n_heads", n_heads);
  positive("d_ff", d_ff);
  positive("classes", classes);
  positive("levels", levels);
  positive("down_kernel", down_kernel);
  positive("conv_kernel", conv_kernel);
  check(classes >= 2, "config: classes must be at least 2, got ", classes);
  check(stride >= 2, "config: stride must be at least 2, got ", stride);
  check(d_model % n_heads == 0, "config: d_model ", d_model, " is not divisible by n_heads ", n_heads);
}

}  // namespace hkt::models
