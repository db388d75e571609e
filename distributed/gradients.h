#pragma once
// Data parallelism over a Communicator: which part of a global batch a rank
// takes, the gradient all-reduce after backward, and identical parameters at
// the start.
#include <cstdint>
#include <vector>

#include "distributed/communicator.h"
#include "engine/tensor.h"

namespace hkt::distributed {

// Rank `rank`'s contiguous part [begin, end) of a global batch of `total`
// examples split as evenly as possible over `ranks` (the first total % ranks
// ranks take one more), and its share of the global mean loss,
// (end - begin) / total: each rank scales its shard's mean loss by it, so the
// summed gradients are those of the mean over the global batch, uneven shards
// included. A rank may get an empty shard (weight 0) when total < ranks.
struct Shard {
  int64_t begin = 0, end = 0;
  double weight = 0;
  int64_t size() const { return end - begin; }
};
Shard shard_of(int64_t total, int rank, int ranks);

// Sums every parameter's gradient over the ranks, in buckets of at most
// `bucket_bytes` (all-reduced after backward, not overlapped with it). A
// parameter that has a gradient on some rank gets zeros where it has none, so
// every rank ends with the same set of gradients as a single process would:
// one without a gradient anywhere stays without.
void all_reduce_gradients(Communicator& comm, const NamedTensors& parameters, int64_t bucket_bytes);

// Rank 0's parameter values replace every other rank's (same seed gives the
// same values already; this makes it so whatever the seed path).
void broadcast_parameters(Communicator& comm, const NamedTensors& parameters);

}  // namespace hkt::distributed
