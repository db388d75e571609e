// hkt-inspect: looks inside a trained run (DIR/config.json and its checkpoint).
//   grads      gradient norms per parameter; flags NaN/inf gradients (exit 1)
//   gradcheck  float64 finite differences vs backward on the real model (exit 1 above tolerance)
//   dump       the gradient dump of SPEC section 6 (safetensors)
//   heatmap    attention weights and per-level scores as one PNG (or SVG) per block
//   analysis   score kurtosis, symmetric/antisymmetric split of Wq Wkᵀ, score cost vs the 4^-l bound
//   predict    predicted class and probabilities for a ListOps TSV or expression (a checkpoint alone will do)
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

#include "engine/threads.h"
#include "io/cli.h"
#include "data/listops.h"
#include "io/json.h"
#include "ops/blas.h"
#include "tools/inspect/analysis.h"
#include "tools/inspect/attention_maps.h"
#include "tools/inspect/gradients.h"
#include "tools/inspect/heatmap.h"
#include "tools/inspect/predict.h"
#include "tools/inspect/reports.h"
#include "tools/inspect/run.h"

using namespace hkt;
using namespace hkt::inspect;

namespace {

struct Subcommand {
  const char* summary;
  std::function<void(cli::Flags&)> declare;
  std::function<int(const cli::Flags&)> run;
};

void declare_threads_and_json(cli::Flags& flags) {
  flags.add_int("threads", 0, "CPU threads (0: OMP_NUM_THREADS or all cores)", 0, cli::kThreadsMax);
  flags.add_switch("json", "print JSON instead of tables");
}

void declare_common(cli::Flags& flags, int64_t default_batch) {
  flags.add("run", "", "the run folder written by hkt-train (config.json, checkpoint.safetensors)");
  flags.require("run");
  flags.add("checkpoint", "", "checkpoint file (default: RUN/checkpoint.safetensors)");
  flags.add_choice("split", "val", {"train", "val", "test"}, "where the examples come from");
  flags.add_int("offset", 0, "first example of the split", 0);
  flags.add_int("batch", default_batch, "number of examples", 1, 1 << 20);
  declare_threads_and_json(flags);
}

void apply_threads(const cli::Flags& flags) {
  if (flags.get_int("threads") > 0) set_num_threads(static_cast<int>(flags.get_int("threads")));
}

struct Inputs {
  LoadedRun run;
  data::Batch batch;
};

Inputs load_inputs(const cli::Flags& flags) {
  apply_threads(flags);
  Inputs inputs;
  inputs.run = load_run(flags.get("run"), flags.get("checkpoint"));
  inputs.batch = load_batch(inputs.run.options, flags.get("split"), flags.get_int("offset"), flags.get_int("batch"));
  return inputs;
}

void print_json(const Json& value) { std::printf("%s\n", to_json(value).c_str()); }

int run_grads(const cli::Flags& flags) {
  Inputs in = load_inputs(flags);
  const double loss = backward_loss(*in.run.model, in.batch);
  const std::vector<GradientRow> rows = gradient_rows(*in.run.model);
  if (flags.get_bool("json")) print_json(gradient_json(loss, rows));
  else std::printf("run %s, step %lld, %lld examples, loss %.6f\n%s", flags.get("run").c_str(),
                   static_cast<long long>(in.run.step), static_cast<long long>(in.batch.tokens.size(0)), loss,
                   gradient_table(rows).c_str());
  const std::vector<std::string> bad = nonfinite_gradients(rows);
  if (bad.empty()) return 0;
  std::string names;
  for (const std::string& name : bad) names += (names.empty() ? "" : ", ") + name;
  std::fprintf(stderr, "hkt-inspect grads: non-finite gradients in %s\n", names.c_str());
  return 1;
}

int run_predict(const cli::Flags& flags) {
  cli::usage_check(flags.was_given("run") || flags.was_given("checkpoint"), "--run DIR or --checkpoint FILE is required");
  cli::usage_check(flags.was_given("tsv") != flags.was_given("tokens"), "give one of --tsv FILE and --tokens EXPRESSION");
  apply_threads(flags);
  const std::string checkpoint = flags.was_given("checkpoint")
                                     ? flags.get("checkpoint")
                                     : (std::filesystem::path(flags.get("run")) / "checkpoint.safetensors").string();
  const std::unique_ptr<models::Classifier> model = load_model(checkpoint);
  check(model->config().vocab == data::kListOpsVocab, checkpoint, ": the model's vocab is ", model->config().vocab,
        ", not ListOps' ", data::kListOpsVocab, ": predict reads ListOps examples only");
  const int64_t seq_len = model->config().max_len;
  const bool labelled = flags.was_given("tsv");
  const data::Dataset examples =
      labelled ? data::load_listops(flags.get("tsv"), seq_len) : listops_expression(flags.get("tokens"), seq_len);
  const std::vector<Prediction> predictions = predict(*model, examples, flags.get_int("batch"), labelled);
  if (flags.get_bool("json")) print_json(prediction_json(predictions));
  else std::printf("%s, %lld examples\n%s", checkpoint.c_str(), static_cast<long long>(examples.count),
                   prediction_table(predictions).c_str());
  return 0;
}

int run_gradcheck(const cli::Flags& flags) {
  Inputs in = load_inputs(flags);
  GradcheckSettings settings;
  settings.per_parameter = flags.get_int("per-parameter");
  settings.eps = flags.get_double("eps");
  settings.atol = flags.get_double("atol");
  settings.rtol = flags.get_double("rtol");
  settings.seed = static_cast<uint64_t>(flags.get_int("seed"));
  const std::vector<GradcheckRow> rows = gradcheck_model(*in.run.model, in.batch, settings);
  int64_t failed = 0, coordinates = 0;
  for (const GradcheckRow& row : rows) failed += row.passed ? 0 : 1, coordinates += row.checked;
  if (flags.get_bool("json")) {
    print_json(gradcheck_json(rows, settings));
  } else {
    std::printf("float64 copy of %s, %lld examples, eps %g, pass: |analytic - numeric| <= %g + %g |numeric|\n%s",
                in.run.checkpoint.c_str(), static_cast<long long>(in.batch.tokens.size(0)), settings.eps,
                settings.atol, settings.rtol, gradcheck_table(rows).c_str());
    std::printf("%s: %lld of %zu parameters failed (%lld coordinates checked)\n", failed ? "FAILED" : "passed",
                static_cast<long long>(failed), rows.size(), static_cast<long long>(coordinates));
  }
  return failed ? 1 : 0;
}

int run_dump(const cli::Flags& flags) {
  Inputs in = load_inputs(flags);
  const std::string path = flags.get("out");
  write_gradient_dump(path, *in.run.model, in.batch);
  const int64_t parameters = static_cast<int64_t>(in.run.model->named_parameters().size());
  const auto bytes = static_cast<long long>(std::filesystem::file_size(path));
  if (flags.get_bool("json"))
    print_json(Json::object({{"path", path}, {"parameters", parameters}, {"tensors", 2 * parameters + 5},
                             {"bytes", bytes}}));
  else
    std::printf("wrote %s: %lld parameters, their %lld gradients, input.{tokens,lengths,labels}, "
                "output.{logits,loss} (%lld bytes)\n",
                path.c_str(), static_cast<long long>(parameters), static_cast<long long>(parameters), bytes);
  return 0;
}

int run_heatmap(const cli::Flags& flags) {
  Inputs in = load_inputs(flags);
  const int64_t example = flags.get_int("example");
  cli::usage_check(example < in.batch.tokens.size(0), "--example ", example, " is outside the batch of ",
                   in.batch.tokens.size(0), " (--batch)");
  const std::vector<BlockAttention> maps = attention_maps(*in.run.model, in.batch);
  const std::string format = flags.get("format");
  const std::vector<std::string> tokens = token_names(in.run.options.task, in.batch, example);
  std::filesystem::create_directories(flags.get("out"));
  Json files = Json::array();
  for (size_t block = 0; block < maps.size(); ++block) {
    const std::string path =
        (std::filesystem::path(flags.get("out")) / ("attention_block" + std::to_string(block) + "." + format)).string();
    const auto figure = attention_heatmap(maps[block], static_cast<int64_t>(block), example, tokens,
                                          format == "svg" ? ImageFormat::Svg : ImageFormat::Png);
    figure->save(path, "");
    files.push_back(Json::object({{"path", path}, {"width", figure->width()}, {"height", figure->height()}}));
    if (!flags.get_bool("json"))
      std::printf("wrote %s (%g x %g): block %zu, example %lld (length %lld), %lld heads x (A + %lld levels)\n",
                  path.c_str(), figure->width(), figure->height(), block, static_cast<long long>(example),
                  static_cast<long long>(maps[block].lengths[static_cast<size_t>(example)]),
                  static_cast<long long>(maps[block].heads), static_cast<long long>(maps[block].levels));
  }
  // λ and β are what the heat maps cannot show: how the levels and the
  // convolution branch are weighted per head.
  Json mixing = Json::array();
  std::string table = "block  head  " ;
  for (int64_t l = 0; l < (maps.empty() ? 0 : maps[0].levels); ++l) table += "  lambda_" + std::to_string(l);
  table += "      beta\n";
  for (size_t block = 0; block < maps.size(); ++block) {
    const BlockAttention& m = maps[block];
    for (int64_t h = 0; h < m.heads; ++h) {
      Json lambdas = Json::array();
      char cell[64];
      std::snprintf(cell, sizeof cell, "%-5zu  %-4lld  ", block, static_cast<long long>(h));
      table += cell;
      for (int64_t l = 0; l < m.levels; ++l) {
        const double lambda = m.level_weights[static_cast<size_t>(h * m.levels + l)];
        lambdas.push_back(lambda);
        std::snprintf(cell, sizeof cell, "%10.4f", lambda);
        table += cell;
      }
      std::snprintf(cell, sizeof cell, "%10.4f\n", m.gates[static_cast<size_t>(h)]);
      table += cell;
      mixing.push_back(Json::object({{"block", static_cast<int64_t>(block)}, {"head", h}, {"lambda", lambdas},
                                     {"beta", m.gates[static_cast<size_t>(h)]}}));
    }
  }
  if (flags.get_bool("json")) {
    print_json(Json::object({{"files", files}, {"mixing", mixing}}));
  } else {
    std::printf("level weights lambda (softmax of level_logits) and gate beta per block and head:\n%s", table.c_str());
  }
  return 0;
}

int run_analysis(const cli::Flags& flags) {
  Inputs in = load_inputs(flags);
  const models::ModelConfig& config = in.run.model->config();
  const int64_t length = flags.get_int("seq-len") > 0 ? flags.get_int("seq-len") : in.batch.tokens.size(1);
  const std::vector<ScoreKurtosis> kurtosis = score_kurtosis(attention_maps(*in.run.model, in.batch));
  const std::vector<BilinearSplit> splits = bilinear_splits(*in.run.model);
  const ScoreCost cost = score_cost(length, config.stride, config.attention_levels());
  if (flags.get_bool("json")) {
    print_json(analysis_json(kurtosis, splits, cost));
    return 0;
  }
  std::printf("Mardia kurtosis of the scores (samples: the H-vector of scores at each valid (i, j) of %lld "
              "examples)\nkappa = b2,p / (p (p + 2)): 1 for a Gaussian; the paper reports about 33 for trained HKT\n%s\n",
              static_cast<long long>(in.batch.tokens.size(0)), kurtosis_table(kurtosis).c_str());
  std::printf("Symmetric / antisymmetric split of M = Wq_h^T Wk_h per level and head (Frobenius norms)\n%s\n",
              bilinear_table(splits).c_str());
  std::printf("Score cost for T = %lld, s = %lld, L = %zu: score entries per level relative to T^2\n%s",
              static_cast<long long>(length), static_cast<long long>(config.stride), cost.levels.size(),
              cost_table(cost).c_str());
  std::printf("measured ratio %.4f, bound sum s^-2l %.4f, limit for any L %.4f\n", cost.ratio, cost.bound,
              cost.limit);
  return 0;
}

std::map<std::string, Subcommand> subcommands() {
  std::map<std::string, Subcommand> all;
  all["grads"] = {"gradient norms per parameter for a batch; exit 1 when a gradient is NaN or infinite",
                  [](cli::Flags& f) { declare_common(f, 8); }, run_grads};
  all["gradcheck"] = {"float64 finite differences vs backward at sampled coordinates of every parameter; "
                      "exit 1 above tolerance",
                      [](cli::Flags& f) {
                        declare_common(f, 2);
                        f.add_int("per-parameter", 4, "coordinates checked per parameter", 1, 1 << 20);
                        f.add_real("eps", 1e-6, "central-difference step", 0, 1, /*min_exclusive=*/true);
                        f.add_real("atol", 1e-8, "absolute tolerance (float64 rounding of the differences is about 1e-10)",
                                   0);
                        f.add_real("rtol", 1e-4, "relative tolerance (of |numeric|)", 0);
                        f.add_int("seed", 1, "seed of the sampled coordinates", 0);
                      },
                      run_gradcheck};
  all["dump"] = {"writes the gradient dump of SPEC section 6 (safetensors) for external checkers",
                 [](cli::Flags& f) {
                   declare_common(f, 4);
                   f.add("out", "", "output .safetensors file (its folder is created)");
                   f.require("out");
                 },
                 run_dump};
  all["heatmap"] = {"attention weights A and per-level scores S^(l) of one example, one PNG per block",
                    [](cli::Flags& f) {
                      declare_common(f, 1);
                      f.add_int("example", 0, "which example of the batch to draw", 0);
                      f.add("out", "", "output folder (attention_block<i>.png or .svg)");
                      f.require("out");
                      f.add_choice("format", "png", {"png", "svg"}, "image format of the files");
                    },
                    run_heatmap};
  all["attention"] = all["heatmap"];  // the name for it; both stay
  all["analysis"] = {"score kurtosis (Mardia), symmetric/antisymmetric split of Wq Wk^T, score cost vs the bound",
                     [](cli::Flags& f) {
                       declare_common(f, 8);
                       f.add_int("seq-len", 0, "T for the score cost (0: the batch's T)", 0, 1 << 24);
                     },
                     run_analysis};
  all["predict"] = {"predicted class and probabilities for a ListOps TSV or an expression, from a checkpoint",
                    [](cli::Flags& f) {
                      f.add("run", "", "a run folder: its checkpoint.safetensors (or give --checkpoint)");
                      f.add("checkpoint", "", "a checkpoint file, e.g. written by Python (SPEC section 6)");
                      f.add("tsv", "", "a ListOps TSV (Source<TAB>Target): accuracy against its labels too");
                      f.add("tokens", "", "a ListOps expression, e.g. \"( [MAX 2 9 ] )\"");
                      f.add_int("batch", 32, "examples per forward pass", 1, 1 << 20);
                      declare_threads_and_json(f);
                    },
                    run_predict};
  return all;
}

void print_overview(FILE* out, const std::map<std::string, Subcommand>& all) {
  std::fprintf(out, "usage: hkt-inspect SUBCOMMAND [flags]   (hkt-inspect SUBCOMMAND --help for its flags)\n"
                    "Looks inside a run trained by hkt-train, or runs a checkpoint on examples.\n\nsubcommands:\n");
  for (const auto& [name, sub] : all) std::fprintf(out, "  %-10s %s\n", name.c_str(), sub.summary);
  std::fprintf(out, "\n  --help     this text\n  --version  the version\n");
}

}  // namespace

int main(int argc, char** argv) {
  hkt::reexec_with_blas_core(argv);  // before any work: OpenBLAS picks its kernels when it loads
  const auto all = subcommands();
  const std::string first = argc < 2 ? "" : argv[1];
  if (first == "--help" || first == "-h") {
    print_overview(stdout, all);
    return 0;
  }
  if (first == "--version") {
    cli::print_version("hkt-inspect");
    return 0;
  }
  auto found = all.find(first);
  if (found == all.end()) {
    if (first.empty()) std::fprintf(stderr, "hkt-inspect: a subcommand is required (see hkt-inspect --help)\n");
    else std::fprintf(stderr, "hkt-inspect: unknown subcommand '%s' (see hkt-inspect --help)\n", first.c_str());
    return 2;
  }
  cli::Flags flags("hkt-inspect " + first, found->second.summary);
  found->second.declare(flags);
  return cli::run(flags, argc - 1, argv + 1, [&] { return found->second.run(flags); });
}
