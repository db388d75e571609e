// A run's options as config.json holds them, and their ranges
// (train/training.h). A file of its own, without the model or the data, so
// that the fuzz target of config.json (fuzz/fuzz_run_config.cpp) links it alone.
#include <cmath>

#include "engine/device_choice.h"
#include "io/json.h"
#include "train/training.h"

namespace hkt::models {

namespace {

// A number; runs written before 0.4 hold it as a decimal string.
uint64_t seed_from_json(const Json& seed) {
  if (!seed.is_string()) {
    const int64_t value = seed.as_int();
    check(value >= 0 && value <= kMaxSeed, "seed ", value, " is outside 0..2^53");
    return static_cast<uint64_t>(value);
  }
  const std::string& text = seed.as_string();
  check(!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() <= 19,
        "seed must be a whole number, got \"", text, "\"");
  return std::stoull(text);
}

}  // namespace

Json options_to_json(const TrainOptions& o) {
  return Json::object({{"task", o.task},
                       {"data", o.data},
                       {"seq_len", o.seq_len},
                       {"batch", o.batch},
                       {"epochs", o.epochs},
                       {"steps", o.steps},
                       {"train_limit", o.train_limit},
                       {"val_size", o.val_size},
                       {"lr", o.lr},
                       {"warmup", o.warmup},
                       {"weight_decay", o.weight_decay},
                       {"clip", o.clip},
                       {"seed", static_cast<int64_t>(o.seed)},  // at most 2^53 (--seed's range): exact as a JSON number
                       {"threads", o.threads},
                       {"device", o.device.str()},
                       {"log_every", o.log_every},
                       {"eval_every", o.eval_every},
                       {"eval_batches", o.eval_batches},
                       {"checkpoint_every", o.checkpoint_every},
                       {"attention_impl", o.fused_attention ? "fused" : "composed"},
                       {"model", config_to_json(o.model)}});
}

void validate_options(const TrainOptions& o) {
  auto at_least = [](const char* key, const char* flag, int64_t value, int64_t least) {
    check(value >= least, key, " (--", flag, ") must be at least ", least, ", got ", value);
  };
  auto finite_non_negative = [](const char* key, const char* flag, double value) {
    check(std::isfinite(value) && value >= 0, key, " (--", flag, ") must be a finite number >= 0, got ", value);
  };
  check(o.task == "listops" || o.task == "fmnist" || o.task == "imdb" || o.task == "cifar10",
        "task (--task) must be listops, fmnist, imdb or cifar10, got \"", o.task, "\"");
  at_least("seq_len", "seq-len", o.seq_len, 1);
  at_least("batch", "batch", o.batch, 1);
  at_least("steps", "steps", o.steps, 0);
  at_least("epochs", "epochs", o.epochs, o.steps > 0 ? 0 : 1);
  at_least("train_limit", "train-limit", o.train_limit, 0);
  at_least("val_size", "val-size", o.val_size, 0);
  finite_non_negative("lr", "lr", o.lr);
  at_least("warmup", "warmup", o.warmup, -1);
  finite_non_negative("weight_decay", "weight-decay", o.weight_decay);
  finite_non_negative("clip", "clip", o.clip);
  at_least("threads", "threads", o.threads, 0);
  check(o.threads <= kMaxThreads, "threads (--threads) must be at most ", kMaxThreads, ", got ", o.threads);
  at_least("log_every", "log-every", o.log_every, 1);
  at_least("eval_every", "eval-every", o.eval_every, 0);
  at_least("eval_batches", "eval-batches", o.eval_batches, 0);
  at_least("checkpoint_every", "checkpoint-every", o.checkpoint_every, 0);
  at_least("stop_at", "stop-at", o.stop_at, 0);
  check(std::isfinite(o.collective_timeout) && o.collective_timeout > 0,
        "--collective-timeout must be a positive number of seconds, got ", o.collective_timeout);
  check(std::isfinite(o.bucket_mb) && o.bucket_mb > 0, "--bucket-mb must be positive, got ", o.bucket_mb);
  check(o.max_params >= 1, "--max-params must be at least 1, got ", o.max_params);
  o.model.validate();
}

TrainOptions options_from_json(const Json& json) {
  TrainOptions o;
  o.task = json.at("task").as_string();
  o.data = json.at("data").as_string();
  o.seq_len = json.at("seq_len").as_int();
  o.batch = json.at("batch").as_int();
  o.epochs = json.at("epochs").as_int();
  o.steps = json.at("steps").as_int();
  o.train_limit = json.at("train_limit").as_int();
  o.val_size = json.at("val_size").as_int();
  o.lr = json.at("lr").as_number();
  o.warmup = json.at("warmup").as_int();
  o.weight_decay = json.at("weight_decay").as_number();
  o.clip = json.at("clip").as_number();
  o.seed = seed_from_json(json.at("seed"));
  const int64_t threads = json.at("threads").as_int();
  check(threads >= 0 && threads <= kMaxThreads, "threads must be between 0 and ", kMaxThreads, ", got ", threads);
  o.threads = static_cast<int>(threads);
  if (json.contains("device")) o.device = dispatch::parse_device(json.at("device").as_string());  // absent before CUDA
  o.log_every = json.at("log_every").as_int();
  o.eval_every = json.at("eval_every").as_int();
  o.eval_batches = json.at("eval_batches").as_int();
  o.checkpoint_every = json.at("checkpoint_every").as_int();
  const std::string& impl = json.at("attention_impl").as_string();
  check(impl == "fused" || impl == "composed", "config: attention_impl must be fused or composed, got \"", impl, "\"");
  o.fused_attention = impl == "fused";
  o.model = config_from_json(json.at("model"));
  validate_options(o);
  return o;
}

}  // namespace hkt::models
