#include "train/training.h"

#include <algorithm>
#include <filesystem>

#include "data/cifar.h"
#include "data/idx.h"
#include "data/imdb.h"
#include "data/listops.h"
#include "engine/autograd.h"
#include "engine/device_choice.h"
#include "io/files.h"
#include "io/json.h"
#include "ops/loss.h"

namespace hkt::models {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kHoldOutStream = 0xDA7A;  // epochs use streams 0, 1, 2, ...

// Holds `count` shuffled examples of train out as the validation set (IMDB's
// files come sorted by class, so the held-out part must not be the tail).
std::pair<data::Dataset, data::Dataset> hold_out(const data::Dataset& train, int64_t count, uint64_t seed) {
  check(count > 0 && count < train.count, "cannot hold out ", count, " validation examples of ", train.count);
  std::vector<int64_t> order = shuffled_order(train.count, seed, kHoldOutStream);
  std::vector<int64_t> kept(order.begin(), order.end() - count), held(order.end() - count, order.end());
  return {data::subset(train, kept), data::subset(train, held)};
}

std::string in_folder(const std::string& folder, const std::string& name) { return (fs::path(folder) / name).string(); }

}  // namespace

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, uint64_t stream) {
  Generator generator(seed * 0x9E3779B97F4A7C15ULL + stream * 0xBF58476D1CE4E5B9ULL + 1);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  for (int64_t i = n - 1; i > 0; --i) std::swap(order[i], order[generator.next_u64() % static_cast<uint64_t>(i + 1)]);
  return order;
}

TrainOptions read_run_options(const std::string& folder) {
  const std::string path = in_folder(folder, "config.json");
  check(fs::exists(path), path, ": no such file (not a run folder?)");
  try {
    return options_from_json(parse_json(io::read_file_bytes(path, "")));
  } catch (const Error& error) {
    fail(path, ": ", error.what());
  }
}

TaskData load_task(const TrainOptions& options) {
  TaskData task;
  const std::string& folder = options.data;
  if (options.task == "listops") {
    check(!folder.empty(), "--data FOLDER is required for listops (train.tsv, val.tsv, optional test.tsv; "
                           "make them with listops-gen)");
    task.train = data::load_listops(in_folder(folder, "train.tsv"), options.seq_len);
    task.val = data::load_listops(in_folder(folder, "val.tsv"), options.seq_len);
    if (fs::exists(in_folder(folder, "test.tsv"))) task.test = data::load_listops(in_folder(folder, "test.tsv"), options.seq_len);
  } else if (options.task == "fmnist") {
    std::string where = folder.empty() ? data::default_fashion_mnist_directory() : folder;
    task.train = data::load_fashion_mnist(where, true);
    task.test = data::load_fashion_mnist(where, false);
  } else if (options.task == "imdb") {
    check(!folder.empty(), "--data FOLDER (the aclImdb folder) is required for imdb");
    task.train = data::load_imdb(folder, true, options.seq_len);
    task.test = data::load_imdb(folder, false, options.seq_len);
  } else if (options.task == "cifar10") {
    check(!folder.empty(), "--data FOLDER (with data_batch_*.bin) is required for cifar10");
    task.train = data::load_cifar10(folder, true, data::CifarPixels::Grey);
    task.test = data::load_cifar10(folder, false, data::CifarPixels::Grey);
  } else {
    fail("unknown task '", options.task, "' (listops, fmnist, imdb or cifar10)");
  }
  if (options.train_limit > 0 && options.train_limit < task.train.count)
    task.train = data::split_off(task.train, task.train.count - options.train_limit).first;
  if (task.val.count == 0) {
    int64_t held = options.val_size > 0 ? options.val_size : std::max<int64_t>(1, task.train.count / 10);
    std::tie(task.train, task.val) = hold_out(task.train, held, options.seed);
  }
  return task;
}

data::Batch batch_on(const data::Batch& batch, Device device) {
  return {batch.tokens.to(device), batch.lengths.to(device), batch.labels.to(device)};
}

Evaluation evaluate(const Classifier& model, const data::Dataset& data, int64_t batch, int64_t max_batches) {
  NoGradGuard no_grad;
  const NamedTensors parameters = model.named_parameters();
  const Device device = parameters.empty() ? Device::cpu() : parameters.front().second.device();
  Evaluation result;
  double loss_sum = 0;
  int64_t correct = 0;
  for (int64_t start = 0, done = 0; start < data.count && (max_batches <= 0 || done < max_batches);
       start += batch, ++done) {
    std::vector<int64_t> indices;
    for (int64_t i = start; i < std::min(data.count, start + batch); ++i) indices.push_back(i);
    data::Batch b = batch_on(data::make_batch(data, indices), device);
    Tensor logits = model.forward(b.tokens, b.lengths);
    loss_sum += cross_entropy(logits, b.labels).item() * static_cast<double>(indices.size());
    auto scores = logits.to_vector<double>();
    auto labels = b.labels.to_vector<int64_t>();
    const int64_t classes = logits.size(1);
    for (size_t row = 0; row < labels.size(); ++row) {
      int64_t best = 0;
      for (int64_t c = 1; c < classes; ++c)
        if (scores[row * classes + c] > scores[row * classes + best]) best = c;
      correct += best == labels[row];
    }
    result.examples += static_cast<int64_t>(indices.size());
  }
  check(result.examples > 0, "no examples to evaluate");
  result.loss = loss_sum / static_cast<double>(result.examples);
  result.accuracy = static_cast<double>(correct) / static_cast<double>(result.examples);
  return result;
}

}  // namespace hkt::models
