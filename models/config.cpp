#include "models/config.h"

#include "engine/error.h"
#include "io/json.h"

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

Json config_to_json(const ModelConfig& c) {
  return Json::object({{"attention", c.attention},
                       {"vocab", c.vocab},
                       {"max_len", c.max_len},
                       {"d_model", c.d_model},
                       {"n_layers", c.n_layers},
                       {"n_heads", c.n_heads},
                       {"d_ff", c.d_ff},
                       {"classes", c.classes},
                       {"levels", c.levels},
                       {"stride", c.stride},
                       {"down_kernel", c.down_kernel},
                       {"conv_kernel", c.conv_kernel},
                       {"causal", c.causal},
                       {"down_pointwise", c.down_pointwise}});
}

ModelConfig config_from_json(const Json& json) {
  ModelConfig c;
  c.attention = json.at("attention").as_string();
  c.vocab = json.at("vocab").as_int();
  c.max_len = json.at("max_len").as_int();
  c.d_model = json.at("d_model").as_int();
  c.n_layers = json.at("n_layers").as_int();
  c.n_heads = json.at("n_heads").as_int();
  c.d_ff = json.at("d_ff").as_int();
  c.classes = json.at("classes").as_int();
  c.levels = json.at("levels").as_int();
  c.stride = json.at("stride").as_int();
  c.down_kernel = json.at("down_kernel").as_int();
  c.conv_kernel = json.at("conv_kernel").as_int();
  c.causal = json.at("causal").as_bool();
  if (json.contains("down_pointwise")) c.down_pointwise = json.at("down_pointwise").as_bool();  // absent: older files
  return c;
}

}  // namespace hkt::models
