#include "models/model_size.h"

#include <cmath>
#include <sstream>

#include "engine/error.h"

namespace hkt::models {

double parameter_count(const ModelConfig& c) {
  const double d = static_cast<double>(c.d_model), d_ff = static_cast<double>(c.d_ff);
  const double heads = static_cast<double>(c.n_heads), levels = static_cast<double>(c.levels);
  auto linear = [](double in, double out) { return in * out + out; };
  const double layer_norm = 2 * d;
  double attention = 0;
  if (c.attention == "mha") {
    attention = 4 * linear(d, d);  // q, k, v, o
  } else {
    attention = levels * 2 * linear(d, d)                                          // per level q, k
                + 2 * linear(d, d)                                                 // v, o
                + (levels - 1) * (d * static_cast<double>(c.down_kernel) + d + layer_norm)  // downsampling
                + (c.down_pointwise ? (levels - 1) * linear(d, d) : 0.0)                // its pointwise projection
                + heads * levels                                                   // level_logits
                + d * static_cast<double>(c.conv_kernel) + d                       // hybrid head's conv
                + heads;                                                           // gate_logit
  }
  const double block = 2 * layer_norm + attention + linear(d, d_ff) + linear(d_ff, d);
  return (static_cast<double>(c.vocab) + static_cast<double>(c.max_len)) * d  // embeddings
         + static_cast<double>(c.n_layers) * block + layer_norm + linear(d, static_cast<double>(c.classes));
}

double training_bytes(const ModelConfig& c, int64_t batch) {
  // Per block and position, the tensors backward keeps: about a dozen of
  // width d (norms, projections, residuals, each level's inputs) and two of
  // width d_ff; float32.
  const double positions = static_cast<double>(batch) * static_cast<double>(c.max_len);
  const double per_position = 12.0 * static_cast<double>(c.d_model) * static_cast<double>(c.attention_levels()) +
                              2.0 * static_cast<double>(c.d_ff);
  return 16.0 * parameter_count(c) + 4.0 * positions * static_cast<double>(c.n_layers) * per_position;
}

std::string describe_sizes(const ModelConfig& c) {
  std::ostringstream text;
  text << "d_model " << c.d_model << ", n_layers " << c.n_layers << ", n_heads " << c.n_heads << ", d_ff " << c.d_ff
       << ", levels " << c.attention_levels() << ", vocab " << c.vocab << ", max_len " << c.max_len << ", classes "
       << c.classes;
  return text.str();
}

void check_model_size(const ModelConfig& config, int64_t batch, double max_parameters, const std::string& source) {
  const double count = parameter_count(config);
  if (count <= max_parameters) return;
  std::ostringstream message;
  message.precision(3);
  message << source << ": the model (" << describe_sizes(config) << ") would have " << count
          << " parameters and need about " << training_bytes(config, batch) / 1e9
          << " GB to train, more than the limit of " << max_parameters
          << " parameters; check the sizes, or raise --max-params for a model this large";
  throw Error(message.str());
}

}  // namespace hkt::models
