#pragma once
// The in-memory form every data set reader returns (SPEC section 6): one split
// as a [count, seq_len] grid of int32 tokens padded with pad_id, the number of
// valid tokens of each example and its class label. Batches are int64 tensors
// on the CPU, the form embedding() and cross_entropy take.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor.h"

namespace hkt::data {

// The most tokens (count × seq_len) a reader allocates: 4 GiB of int32. Every
// real split here is far below it (LRA ListOps 96000 × 2000 ≈ 2^27.5).
inline constexpr int64_t kMaxDatasetTokens = int64_t{1} << 30;

struct Dataset {
  int64_t count = 0, seq_len = 0, vocab = 0, classes = 0;
  int32_t pad_id = 0;
  std::vector<int32_t> tokens;   // [count, seq_len], row-major, padded with pad_id
  std::vector<int32_t> lengths;  // valid tokens per example, 1 ≤ length ≤ seq_len
  std::vector<int32_t> labels;   // in [0, classes)
};

struct Batch {
  Tensor tokens;   // int64 [B, T]
  Tensor lengths;  // int64 [B]
  Tensor labels;   // int64 [B]
};

// Throws hkt::Error if the sizes disagree with count and seq_len, or a token,
// length or label is out of range; `who` starts the message.
void validate(const Dataset& data, const std::string& who = "dataset");

// The examples at `indices` (each in [0, count), repeats allowed, at least one).
Batch make_batch(const Dataset& data, const std::vector<int64_t>& indices);

// The examples at `indices` (each in [0, count), repeats allowed), in that
// order, as a data set of their own (a shuffled hold-out, a shard of ranks).
Dataset subset(const Dataset& data, const std::vector<int64_t>& indices);
// The examples [begin, end), 0 ≤ begin ≤ end ≤ count: subset of that range.
Dataset rows(const Dataset& data, int64_t begin, int64_t end);

// The last `count` examples (0 ≤ count ≤ data.count) become the second part,
// e.g. a validation set held out of the training split; order is kept.
std::pair<Dataset, Dataset> split_off(const Dataset& data, int64_t count);

}  // namespace hkt::data
