#pragma once
// Inference from a checkpoint (hkt-inspect predict): the class probabilities
// of a model for ListOps examples, from a TSV or an expression typed on the
// command line.
#include <string>
#include <vector>

#include "data/dataset.h"
#include "io/json.h"
#include "models/classifier.h"

namespace hkt::inspect {

struct Prediction {
  int64_t predicted = 0;               // the most probable class
  std::vector<double> logits;          // the model's output, one per class
  std::vector<double> probabilities;   // their softmax
  int64_t label = -1;                  // the example's label when known, else -1
};

// The model of a checkpoint file, weights alone (no optimizer state needed):
// the config comes from its metadata, so a file written by Python loads too.
std::unique_ptr<models::Classifier> load_model(const std::string& checkpoint);

// One ListOps expression ("( [MAX 2 9 ] )") as a data set of one example
// without a label, padded to seq_len; throws naming an unknown token.
data::Dataset listops_expression(const std::string& expression, int64_t seq_len);

// Forward in batches of `batch` without gradients; `labelled`: the data set's
// labels are real (a TSV), so they are reported beside the predictions.
std::vector<Prediction> predict(const models::Classifier& model, const data::Dataset& examples, int64_t batch,
                                bool labelled);

std::string prediction_table(const std::vector<Prediction>& predictions);
Json prediction_json(const std::vector<Prediction>& predictions);

}  // namespace hkt::inspect
