#include "tools/inspect/predict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "data/listops.h"
#include "engine/autograd.h"
#include "train/checkpoint.h"

namespace hkt::inspect {

std::unique_ptr<models::Classifier> load_model(const std::string& checkpoint) {
  auto model = std::make_unique<models::Classifier>(models::read_checkpoint_config(checkpoint), 0);
  models::load_weights(checkpoint, *model);
  return model;
}

data::Dataset listops_expression(const std::string& expression, int64_t seq_len) {
  std::istringstream words(expression);
  std::vector<int32_t> ids;
  for (std::string token; words >> token;) {
    const int32_t id = data::listops_token_id(token);
    check(id >= 0, "--tokens: unknown token '", token, "' (token ", ids.size() + 1,
          "; ListOps has digits, ( ), [MAX [MIN [MED [SM and ])");
    ids.push_back(id);
  }
  check(!ids.empty(), "--tokens is empty");
  check(static_cast<int64_t>(ids.size()) <= seq_len, "--tokens: ", ids.size(),
        " tokens is longer than the model's max_len ", seq_len);
  data::Dataset set;
  set.count = 1;
  set.seq_len = seq_len;
  set.vocab = data::kListOpsVocab;
  set.classes = data::kListOpsClasses;
  set.lengths = {static_cast<int32_t>(ids.size())};
  set.labels = {0};
  set.tokens = ids;
  set.tokens.resize(static_cast<size_t>(seq_len), set.pad_id);
  return set;
}

std::vector<Prediction> predict(const models::Classifier& model, const data::Dataset& examples, int64_t batch,
                                bool labelled) {
  NoGradGuard no_grad;
  std::vector<Prediction> predictions;
  for (int64_t begin = 0; begin < examples.count; begin += batch) {
    std::vector<int64_t> indices(static_cast<size_t>(std::min(batch, examples.count - begin)));
    std::iota(indices.begin(), indices.end(), begin);
    const data::Batch part = data::make_batch(examples, indices);
    const Tensor logits = model.forward(part.tokens, part.lengths);
    const int64_t classes = logits.size(1);
    const std::vector<double> values = logits.to(DType::Float64).to_vector<double>();
    for (size_t row = 0; row < indices.size(); ++row) {
      const double* x = values.data() + row * static_cast<size_t>(classes);
      const double top = *std::max_element(x, x + classes);
      Prediction p;
      p.logits.assign(x, x + classes);
      double total = 0;
      for (int64_t c = 0; c < classes; ++c) total += std::exp(x[c] - top);
      for (int64_t c = 0; c < classes; ++c) p.probabilities.push_back(std::exp(x[c] - top) / total);
      p.predicted = std::max_element(p.probabilities.begin(), p.probabilities.end()) - p.probabilities.begin();
      if (labelled) p.label = examples.labels[static_cast<size_t>(indices[row])];
      predictions.push_back(std::move(p));
    }
  }
  return predictions;
}

std::string prediction_table(const std::vector<Prediction>& predictions) {
  std::string table = "example  predicted  label";
  const size_t classes = predictions.empty() ? 0 : predictions[0].probabilities.size();
  char cell[64];
  for (size_t c = 0; c < classes; ++c) {
    std::snprintf(cell, sizeof cell, "  %6s", ("p(" + std::to_string(c) + ")").c_str());
    table += cell;
  }
  table += "\n";
  int64_t correct = 0, labelled = 0;
  for (size_t i = 0; i < predictions.size(); ++i) {
    const Prediction& p = predictions[i];
    std::snprintf(cell, sizeof cell, "%-7zu  %-9lld  ", i, static_cast<long long>(p.predicted));
    table += cell;
    table += p.label >= 0 ? std::to_string(p.label) : std::string("-");
    table += std::string(p.label >= 10 ? 3 : 4, ' ');
    for (double probability : p.probabilities) {
      std::snprintf(cell, sizeof cell, "  %6.4f", probability);
      table += cell;
    }
    table += "\n";
    if (p.label >= 0) ++labelled, correct += p.predicted == p.label;
  }
  if (labelled > 0) {
    std::snprintf(cell, sizeof cell, "%.4f", static_cast<double>(correct) / static_cast<double>(labelled));
    table += "accuracy " + std::string(cell) + " (" + std::to_string(correct) + " of " + std::to_string(labelled) +
             ")\n";
  }
  return table;
}

Json prediction_json(const std::vector<Prediction>& predictions) {
  Json rows = Json::array();
  for (const Prediction& p : predictions) {
    Json probabilities = Json::array(), logits = Json::array();
    for (double probability : p.probabilities) probabilities.push_back(probability);
    for (double logit : p.logits) logits.push_back(logit);
    Json row = Json::object({{"predicted", p.predicted}, {"probabilities", probabilities}, {"logits", logits}});
    if (p.label >= 0) row.set("label", p.label);
    rows.push_back(row);
  }
  return Json::object({{"predictions", rows}});
}

}  // namespace hkt::inspect
