#include "train/data_parallel.h"

#include <algorithm>
#include <cmath>

namespace hkt::models {

Evaluation evaluate_data_parallel(distributed::Communicator& comm, const Classifier& model, const data::Dataset& data,
                                  int64_t batch, int64_t max_batches) {
  if (comm.size() == 1) return evaluate(model, data, batch, max_batches);
  check(batch >= 1, "evaluate: batch must be at least 1, got ", batch);
  int64_t batches = (data.count + batch - 1) / batch;
  if (max_batches > 0) batches = std::min(batches, max_batches);
  double sums[3] = {0, 0, 0};  // loss × examples, correct, examples
  for (int64_t b = comm.rank(); b < batches; b += comm.size()) {
    Evaluation part = evaluate(model, data::rows(data, b * batch, std::min(data.count, (b + 1) * batch)), batch, 1);
    const double examples = static_cast<double>(part.examples);
    sums[0] += part.loss * examples;
    sums[1] += std::round(part.accuracy * examples);
    sums[2] += examples;
  }
  comm.all_reduce_sum(sums, 3);
  check(sums[2] > 0, "no examples to evaluate");
  Evaluation result;
  result.examples = static_cast<int64_t>(sums[2]);
  result.loss = sums[0] / sums[2];
  result.accuracy = sums[1] / sums[2];
  return result;
}

}  // namespace hkt::models
