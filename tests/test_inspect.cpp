// hkt-inspect on tiny models: gradient table, gradcheck (passing on correct
// models, failing with the test fault), the gradient dump's round trip, the
// attention maps against the attention ops, and the command line.
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/listops.h"
#include "io/json.h"
#include "io/safetensors.h"
#include "models/hkt_attention.h"
#include "models/mha_attention.h"
#include "ops/multiscale_attention.h"
#include "tests/data_test_util.h"
#include "tests/gradcheck.h"
#include "tools/inspect/attention_maps.h"
#include "tools/inspect/gradients.h"
#include "tools/inspect/reports.h"
#include "tools/inspect/run.h"

using namespace hkt;
using namespace hkt::inspect;

namespace {

models::ModelConfig tiny_config(const char* attention, bool causal = false) {
  models::ModelConfig config;
  config.attention = attention;
  config.vocab = 12;
  config.max_len = 16;
  config.d_model = 8;
  config.n_layers = 2;
  config.n_heads = 2;
  config.d_ff = 16;
  config.classes = 3;
  config.levels = attention == std::string("hkt") ? 3 : 1;
  config.causal = causal;
  return config;
}

// Gate logits away from 0 and level logits unequal, as after training.
void perturb(models::Classifier& model) {
  Generator generator(9);
  for (auto& [name, parameter] : model.named_parameters())
    if (name.find("level_logits") != std::string::npos || name.find("gate_logit") != std::string::npos) {
      float* values = parameter.data<float>();
      for (int64_t i = 0; i < parameter.numel(); ++i) values[i] = static_cast<float>(generator.normal());
    }
}

data::Batch tiny_batch(int64_t length = 13) {
  Generator generator(4);
  std::vector<int64_t> tokens(3 * length);
  for (int64_t& token : tokens) token = static_cast<int64_t>(generator.next_u64() % 12);
  data::Batch batch;
  batch.tokens = Tensor::from_vector(tokens, {3, length});
  batch.lengths = Tensor::from_vector<int64_t>({length, 5, 9}, {3});
  batch.labels = Tensor::from_vector<int64_t>({0, 2, 1}, {3});
  return batch;
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs hkt-inspect with stdout and stderr both in `output` (what a user sees),
// or, with `stderr_to`, stderr there instead: --json output must parse on its
// own whatever the program notes on stderr (on a CPU that OpenBLAS
// mis-detects, for one).
int run_inspect(const std::string& arguments, const std::filesystem::path& output, const std::string& env = "",
                const std::filesystem::path& stderr_to = {}) {
  const std::string errors = stderr_to.empty() ? " 2>&1" : " 2> " + stderr_to.string();
  const std::string command =
      env + " " + std::string(HKT_BINARY_DIR) + "/hkt-inspect " + arguments + " > " + output.string() + errors;
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A tiny ListOps run trained for a few steps by the real training loop.
std::filesystem::path train_tiny_run(const std::filesystem::path& folder) {
  Generator generator(5);
  for (auto [name, count] : {std::pair<const char*, int64_t>{"train.tsv", 48}, {"val.tsv", 16}}) {
    data::ListOpsOptions options;
    options.count = count;
    options.min_len = 5;
    options.max_len = 20;
    options.max_depth = 3;
    options.max_args = 4;
    data::write_listops_tsv((folder / name).string(), data::generate_listops_examples(generator, options));
  }
  models::TrainOptions o;
  o.data = folder.string();
  o.out = (folder / "run").string();
  o.seq_len = 20;
  o.model.d_model = 8;
  o.model.n_layers = 1;
  o.model.n_heads = 2;
  o.model.d_ff = 16;
  o.model.levels = 3;
  o.batch = 8;
  o.steps = 4;
  o.eval_every = 4;
  o.eval_batches = 1;
  o.threads = 1;
  o.lr = 3e-3;
  models::train(o);
  return folder / "run";
}

}  // namespace

TEST_CASE("gradcheck passes on correct HKT and MHA models, fused and composed") {
  for (const char* attention : {"hkt", "mha"})
    for (bool causal : {false, true})
      for (bool fused : {true, false}) {
        models::Classifier model(tiny_config(attention, causal), 1);
        perturb(model);
        model.set_fused_attention(fused);
        GradcheckSettings settings;
        settings.per_parameter = 3;
        const auto rows = gradcheck_model(model, tiny_batch(), settings);
        REQUIRE(rows.size() == model.named_parameters().size());
        for (const GradcheckRow& row : rows) {
          INFO(attention << (causal ? " causal " : " ") << (fused ? "fused " : "composed ") << row.name << ": analytic "
                         << row.analytic << " numeric " << row.numeric);
          CHECK(row.passed);
          CHECK(row.checked >= 1);
        }
        CHECK(model.token_embedding->weight.dtype() == DType::Float32);  // the model itself is left alone
      }
}

TEST_CASE("grads and gradcheck list the pointwise downsampling projection and pass on it") {
  models::ModelConfig config = tiny_config("hkt");
  config.down_pointwise = true;
  models::Classifier model(config, 2);
  perturb(model);
  backward_loss(model, tiny_batch());
  const std::string table = gradient_table(gradient_rows(model));
  for (const char* name : {"blocks.0.attn.down.1.pointwise.weight", "blocks.1.attn.down.2.pointwise.bias"})
    CHECK(table.find(name) != std::string::npos);
  GradcheckSettings settings;
  settings.per_parameter = 3;
  int pointwise_rows = 0;
  for (const GradcheckRow& row : gradcheck_model(model, tiny_batch(), settings)) {
    if (row.name.find(".pointwise.") == std::string::npos) continue;
    ++pointwise_rows;
    INFO(row.name << ": analytic " << row.analytic << " numeric " << row.numeric);
    CHECK(row.passed);
  }
  CHECK(pointwise_rows == 8);  // 2 blocks × levels 1, 2 × weight, bias
}

TEST_CASE("gradcheck fails exactly on gate_logit when the test fault doubles its gradient") {
  models::Classifier model(tiny_config("hkt"), 1);
  perturb(model);
  std::vector<GradcheckRow> rows;
  {
    ScopedEnv fault("HKT_TEST_BREAK_BACKWARD", "hkt_gate");
    rows = gradcheck_model(model, tiny_batch());
  }
  int failed = 0;
  for (const GradcheckRow& row : rows) {
    INFO(row.name << ": analytic " << row.analytic << " numeric " << row.numeric);
    const bool is_gate = row.name.find("gate_logit") != std::string::npos;
    CHECK(row.passed == !is_gate);
    if (is_gate) CHECK(row.analytic == Approx(2 * row.numeric).epsilon(1e-3));
    failed += row.passed ? 0 : 1;
  }
  CHECK(failed == 2);  // blocks.0 and blocks.1
  // Without the variable the same check passes again.
  for (const GradcheckRow& row : gradcheck_model(model, tiny_batch())) CHECK(row.passed);
}

TEST_CASE("the gradient dump holds every tensor of SPEC section 6 and reads back exactly") {
  hkt::testing::TempDir dir;
  models::Classifier model(tiny_config("hkt"), 2);
  perturb(model);
  const data::Batch batch = tiny_batch();
  const std::string path = (dir.path() / "dump.safetensors").string();
  write_gradient_dump(path, model, batch);
  SafetensorsFile file = load_safetensors(path);
  std::map<std::string, Tensor> stored(file.tensors.begin(), file.tensors.end());
  const auto parameters = model.named_parameters();
  CHECK(stored.size() == 2 * parameters.size() + 5);
  auto same_bytes = [](const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
  };
  for (const auto& [name, parameter] : parameters) {
    INFO(name);
    REQUIRE(stored.count(name) == 1);
    REQUIRE(stored.count("grad." + name) == 1);
    CHECK(same_bytes(stored[name], parameter));
    CHECK(same_bytes(stored["grad." + name], parameter.grad()));
  }
  CHECK(same_bytes(stored["input.tokens"], batch.tokens));
  CHECK(same_bytes(stored["input.lengths"], batch.lengths));
  CHECK(same_bytes(stored["input.labels"], batch.labels));
  NoGradGuard no_grad;
  Tensor logits = model.forward(batch.tokens, batch.lengths);
  CHECK(same_bytes(stored["output.logits"], logits));
  CHECK(stored["output.loss"].shape() == Shape{1});
  CHECK(stored["output.loss"].item() == cross_entropy(logits, batch.labels).item());
  CHECK(models::config_from_json(parse_json(file.metadata.at("config"))) == model.config());
}

TEST_CASE("the grads table flags a NaN gradient and names its parameter") {
  models::Classifier model(tiny_config("hkt"), 3);
  const double loss = backward_loss(model, tiny_batch());
  CHECK(std::isfinite(loss));
  CHECK(nonfinite_gradients(gradient_rows(model)).empty());
  const std::string target = "blocks.1.attn.levels.2.k.weight";
  Tensor grad = model.parameter(target).grad();
  grad.data<float>()[3] = std::nanf("");
  const auto rows = gradient_rows(model);
  CHECK(nonfinite_gradients(rows) == std::vector<std::string>{target});
  const std::string table = gradient_table(rows);
  const size_t line_start = table.find(target);
  REQUIRE(line_start != std::string::npos);
  const std::string line = table.substr(line_start, table.find('\n', line_start) - line_start);
  CHECK(line.find("NaN/inf x1") != std::string::npos);
  CHECK(to_json(gradient_json(loss, rows)).find("\"nonfinite\":1") != std::string::npos);
}

TEST_CASE("attention maps: A is a masked softmax and A V equals the attention ops' output") {
  for (const char* attention : {"hkt", "mha"})
    for (bool causal : {false, true}) {
      INFO(attention << (causal ? " causal" : " bidirectional"));
      models::Classifier model(tiny_config(attention, causal), 5);
      perturb(model);
      const data::Batch batch = tiny_batch();
      const auto maps = attention_maps(model, batch);
      REQUIRE(maps.size() == 2);
      std::vector<Tensor> inputs;  // each block's attention input, seen through the same hook
      model.attention_input_observer = [&](int64_t, const Tensor& x, const models::SequenceMask&) {
        inputs.push_back(x);
      };
      NoGradGuard no_grad;
      model.forward(batch.tokens, batch.lengths);
      model.attention_input_observer = nullptr;
      for (size_t block = 0; block < maps.size(); ++block) {
        const BlockAttention& a = maps[block];
        CHECK(a.level_lengths.size() == static_cast<size_t>(a.levels));
        for (int64_t b = 0; b < 3; ++b)
          for (int64_t h = 0; h < a.heads; ++h)
            for (int64_t i = 0; i < a.length; ++i) {
              double total = 0;
              for (int64_t j = 0; j < a.length; ++j) {
                if (!a.allowed(b, i, j)) CHECK(a.weight(b, h, i, j) == 0.0);
                total += a.weight(b, h, i, j);
              }
              CHECK(total == Approx(1.0).epsilon(1e-12));
            }
        // The op's output from the same projections, against A · V.
        const auto& attn = *model.blocks[block]->attn;
        const models::SequenceMask mask = models::SequenceMask::build(batch.lengths, a.length, causal, DType::Float32,
                                                                      Device::cpu());
        Tensor values, expected;
        if (const auto* hkt_attn = dynamic_cast<const models::HKTAttention*>(&attn)) {
          const auto level_inputs = hkt_attn->level_inputs(inputs[block], mask);
          std::vector<Tensor> queries, keys;
          for (size_t l = 0; l < level_inputs.size(); ++l) {
            queries.push_back(models::split_heads(hkt_attn->levels[l]->q->forward(level_inputs[l]), a.heads));
            keys.push_back(models::split_heads(hkt_attn->levels[l]->k->forward(level_inputs[l]), a.heads));
          }
          values = models::split_heads(hkt_attn->v->forward(level_inputs[0]), a.heads);
          expected = multiscale_attention(queries, keys, values, hkt_attn->level_logits, batch.lengths, 2, causal);
        } else {
          const auto& mha = dynamic_cast<const models::MHAAttention&>(attn);
          values = models::split_heads(mha.v->forward(inputs[block]), a.heads);
          expected = hkt::attention(models::split_heads(mha.q->forward(inputs[block]), a.heads),
                               models::split_heads(mha.k->forward(inputs[block]), a.heads), values, batch.lengths,
                               causal);
        }
        Tensor weights = Tensor::from_doubles(a.weights, {3, a.heads, a.length, a.length}, DType::Float32);
        CHECK(hkt::testing::max_abs_diff(matmul(weights, values), expected) < 1e-5);
      }
    }
}

TEST_CASE("hkt-inspect on a trained run: every subcommand, exit codes, the test fault and bad flags") {
  hkt::testing::TempDir dir;
  const std::filesystem::path run = train_tiny_run(dir.path());
  const auto out = dir.path() / "out.txt";
  const std::string at = "--run " + run.string() + " --threads 1 ";
  const auto errors = dir.path() / "errors.txt";

  CHECK(run_inspect("grads " + at, out) == 0);
  CHECK(read_text(out).find("blocks.0.attn.gate_logit") != std::string::npos);
  CHECK(run_inspect("grads --json " + at, out, "", errors) == 0);
  Json grads = parse_json(read_text(out));
  CHECK(grads.at("parameters").size() > 10);

  CHECK(run_inspect("gradcheck " + at, out) == 0);
  CHECK(read_text(out).find("passed: 0 of") != std::string::npos);
  CHECK(run_inspect("gradcheck " + at, out, "HKT_TEST_BREAK_BACKWARD=hkt_gate") == 1);
  const std::string failed = read_text(out);
  CHECK(failed.find("FAILED: 1 of") != std::string::npos);
  CHECK(failed.find("FAIL\n") != std::string::npos);

  const std::string dump = (dir.path() / "dump.safetensors").string();
  CHECK(run_inspect("dump --out " + dump + " " + at, out) == 0);
  CHECK(load_safetensors(dump).tensors.size() > 20);

  CHECK(run_inspect("heatmap --out " + (dir.path() / "maps").string() + " " + at, out) == 0);
  CHECK(std::filesystem::exists(dir.path() / "maps" / "attention_block0.png"));

  CHECK(run_inspect("analysis " + at, out) == 0);
  CHECK(read_text(out).find("measured ratio") != std::string::npos);
  CHECK(run_inspect("analysis --json " + at, out, "", errors) == 0);
  CHECK(parse_json(read_text(out)).at("score_cost").at("levels").size() == 3);

  CHECK(run_inspect("grads --bogus 1 " + at, out) == 2);
  CHECK(read_text(out).find("bogus") != std::string::npos);
  CHECK(run_inspect("grads", out) == 2);
  CHECK(read_text(out).find("--run") != std::string::npos);
  CHECK(run_inspect("dump " + at, out) == 2);
  CHECK(run_inspect("frobnicate", out) == 2);
  CHECK(run_inspect("heatmap --help", out) == 0);
  CHECK(read_text(out).find("--example") != std::string::npos);
  CHECK(run_inspect("grads --run " + (dir.path() / "nowhere").string(), out) == 1);
}
