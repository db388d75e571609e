#include "data/dataset.h"

#include <numeric>

namespace hkt::data {
namespace {

// The same data set with no examples.
Dataset empty_like(const Dataset& data) {
  Dataset out;
  out.seq_len = data.seq_len;
  out.vocab = data.vocab;
  out.classes = data.classes;
  out.pad_id = data.pad_id;
  return out;
}

void check_sizes(const Dataset& data, const char* who) {
  check(data.tokens.size() == static_cast<size_t>(data.count * data.seq_len) &&
            data.lengths.size() == static_cast<size_t>(data.count) &&
            data.labels.size() == static_cast<size_t>(data.count),
        who, ": dataset of ", data.count, " examples of length ", data.seq_len, " holds ", data.tokens.size(),
        " tokens, ", data.lengths.size(), " lengths, ", data.labels.size(), " labels");
}

}  // namespace

void validate(const Dataset& data, const std::string& who) {
  check(data.count >= 0 && data.seq_len >= 1 && data.vocab >= 1 && data.classes >= 1, who, ": count ", data.count,
        ", seq_len ", data.seq_len, ", vocab ", data.vocab, ", classes ", data.classes,
        ": expected count >= 0 and seq_len, vocab, classes >= 1");
  check(data.pad_id >= 0 && data.pad_id < data.vocab, who, ": pad_id ", data.pad_id, " outside [0, ", data.vocab, ")");
  const auto count = static_cast<size_t>(data.count);
  check(data.tokens.size() == count * static_cast<size_t>(data.seq_len) && data.lengths.size() == count &&
            data.labels.size() == count,
        who, ": ", data.tokens.size(), " tokens, ", data.lengths.size(), " lengths, ", data.labels.size(),
        " labels for ", data.count, " examples of length ", data.seq_len);
  for (size_t i = 0; i < count; ++i) {
    check(data.lengths[i] >= 1 && data.lengths[i] <= data.seq_len, who, ": example ", i, " has length ",
          data.lengths[i], " outside [1, ", data.seq_len, "]");
    check(data.labels[i] >= 0 && data.labels[i] < data.classes, who, ": example ", i, " has label ", data.labels[i],
          " outside [0, ", data.classes, ")");
  }
  for (size_t i = 0; i < data.tokens.size(); ++i)
    check(data.tokens[i] >= 0 && data.tokens[i] < data.vocab, who, ": example ",
          i / static_cast<size_t>(data.seq_len), " has token ", data.tokens[i], " outside [0, ", data.vocab, ")");
}

Batch make_batch(const Dataset& data, const std::vector<int64_t>& indices) {
  const auto T = static_cast<size_t>(data.seq_len);
  check(data.seq_len >= 1 && data.tokens.size() == static_cast<size_t>(data.count) * T &&
            data.lengths.size() == static_cast<size_t>(data.count) &&
            data.labels.size() == static_cast<size_t>(data.count),
        "make_batch: dataset of ", data.count, " examples of length ", data.seq_len, " holds ", data.tokens.size(),
        " tokens, ", data.lengths.size(), " lengths, ", data.labels.size(), " labels");
  check(!indices.empty(), "make_batch: no indices");
  const size_t B = indices.size();
  std::vector<int64_t> tokens(B * T), lengths(B), labels(B);
  for (size_t b = 0; b < B; ++b) {
    const int64_t index = indices[b];
    check(index >= 0 && index < data.count, "make_batch: index ", index, " (position ", b, ") outside [0, ",
          data.count, ")");
    const auto row = static_cast<size_t>(index);
    for (size_t t = 0; t < T; ++t) tokens[b * T + t] = data.tokens[row * T + t];
    lengths[b] = data.lengths[row];
    labels[b] = data.labels[row];
  }
  const auto batch = static_cast<int64_t>(B);
  return {Tensor::from_vector(tokens, {batch, data.seq_len}), Tensor::from_vector(lengths, {batch}),
          Tensor::from_vector(labels, {batch})};
}

Dataset subset(const Dataset& data, const std::vector<int64_t>& indices) {
  check_sizes(data, "subset");
  Dataset out = empty_like(data);
  out.count = static_cast<int64_t>(indices.size());
  out.tokens.reserve(indices.size() * static_cast<size_t>(data.seq_len));
  out.lengths.reserve(indices.size());
  out.labels.reserve(indices.size());
  for (size_t position = 0; position < indices.size(); ++position) {
    const int64_t i = indices[position];
    check(i >= 0 && i < data.count, "subset: index ", i, " (position ", position, ") outside [0, ", data.count, ")");
    auto row = data.tokens.begin() + i * data.seq_len;
    out.tokens.insert(out.tokens.end(), row, row + data.seq_len);
    out.lengths.push_back(data.lengths[static_cast<size_t>(i)]);
    out.labels.push_back(data.labels[static_cast<size_t>(i)]);
  }
  return out;
}

Dataset rows(const Dataset& data, int64_t begin, int64_t end) {
  check(begin >= 0 && begin <= end && end <= data.count, "rows: [", begin, ", ", end, ") is not inside [0, ",
        data.count, ")");
  std::vector<int64_t> indices(static_cast<size_t>(end - begin));
  std::iota(indices.begin(), indices.end(), begin);
  return subset(data, indices);
}

std::pair<Dataset, Dataset> split_off(const Dataset& data, int64_t count) {
  check(count >= 0 && count <= data.count, "split_off: cannot take ", count, " of ", data.count, " examples");
  check_sizes(data, "split_off");
  return {rows(data, 0, data.count - count), rows(data, data.count - count, data.count)};
}

}  // namespace hkt::data
