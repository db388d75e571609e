#pragma once
// The training loop's side of data parallelism (distributed/ holds the
// collectives): evaluation split over the ranks and summed.
#include "distributed/communicator.h"
#include "train/training.h"

namespace hkt::models {

// evaluate() over the ranks: rank r takes the batches r, r + N, r + 2N, ...
// of the first `max_batches` (0: all), and the sums of loss, correct answers
// and examples are all-reduced, so every rank returns the same result as a
// single process (up to the order of a double sum). One rank: evaluate() itself.
Evaluation evaluate_data_parallel(distributed::Communicator& comm, const Classifier& model, const data::Dataset& data,
                                  int64_t batch, int64_t max_batches);

}  // namespace hkt::models
