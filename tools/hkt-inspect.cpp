// hkt-inspect: looks inside a trained run (DIR/config.json and its checkpoint).
//   grads      gradient norms per parameter; flags NaN/inf gradients (exit 1)
//   gradcheck  float64 finite differences vs backward on the real model (exit 1 above tolerance)
//   dump       the gradient dump of SPEC section 6 (safetensors)
//   heatmap    attention weights and per-level scores as one PNG (or SVG) per block
//   analysis   score kurtosis, symmetric/antisymmetric split of Wq Wkᵀ, score cost vs the 4^-l bound
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

#include "engine/threads.h"
#include "io/cli.h"
#include "io/json.h"
#include "tools/inspect/analysis.h"
#include "tools/inspect/attention_maps.h"
#include "tools/inspect/gradients.h"
#include "tools/inspect/heatmap.h"
#include "tools/inspect/reports.h"
#include "tools/inspect/run.h"

using namespace hkt;
using namespace hkt::inspect;

namespace {

struct Subcommand {
  const char* summary;
  std::function<void(cli::Flags&)> declare;
  std::function<int(const cli::Flags&)> run;
  std::vector<const char*> required = {"run"};  // flags without a usable default
};

void declare_common(cli::Flags& flags, const char* default_batch) {
  flags.add("run", "", "the run folder written by hkt-train (config.json, checkpoint.safetensors)");
  flags.add("checkpoint", "", "checkpoint file (default: RUN/checkpoint.safetensors)");
  flags.add("split", "val", "train | val | test: where the examples come from");
  flags.add("offset", "0", "first example of the split");
  flags.add("batch", default_batch, "number of examples");
  flags.add("threads", "0", "CPU threads (0: OMP_NUM_THREADS or all cores)");
  flags.add_switch("json", "print JSON instead of tables");
}

struct Inputs {
  LoadedRun run;
  data::Batch batch;
};

Inputs load_inputs(const cli::Flags& flags) {
  const int64_t threads = flags.get_int("threads");
  check(threads >= 0, "hkt-inspect: --threads must be non-negative, got ", threads);
  if (threads > 0) set_num_threads(static_cast<int>(threads));
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
  check(example >= 0 && example < in.batch.tokens.size(0), "hkt-inspect heatmap: --example ", example,
        " is outside the batch of ", in.batch.tokens.size(0));
  const std::vector<BlockAttention> maps = attention_maps(*in.run.model, in.batch);
  const std::string format = flags.get("format");
  check(format == "png" || format == "svg", "hkt-inspect heatmap: --format must be png or svg, got '", format, "'");
  const std::vector<std::string> tokens = token_names(in.run.options.task, in.batch, example);
  std::filesystem::create_directories(flags.get("out"));
  Json files = Json::array();
  for (size_t block = 0; block < maps.size(); ++block) {
    const std::string path =
        (std::filesystem::path(flags.get("out")) / ("attention_block" + std::to_string(block) + "." + format)).string();
    const auto figure = attention_heatmap(maps[block], static_cast<int64_t>(block), example, tokens,
                                          format == "svg" ? ImageFormat::Svg : ImageFormat::Png);
    figure->save(path, "hkt-inspect heatmap");
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
  const int64_t length = flags.was_given("seq-len") ? flags.get_int("seq-len") : in.batch.tokens.size(1);
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
                  [](cli::Flags& f) { declare_common(f, "8"); }, run_grads};
  all["gradcheck"] = {"float64 finite differences vs backward at sampled coordinates of every parameter; "
                      "exit 1 above tolerance",
                      [](cli::Flags& f) {
                        declare_common(f, "2");
                        f.add("per-parameter", "4", "coordinates checked per parameter");
                        f.add("eps", "1e-6", "central-difference step");
                        f.add("atol", "1e-8", "absolute tolerance (float64 rounding of the differences is about 1e-10)");
                        f.add("rtol", "1e-4", "relative tolerance (of |numeric|)");
                        f.add("seed", "1", "seed of the sampled coordinates");
                      },
                      run_gradcheck};
  all["dump"] = {"writes the gradient dump of SPEC section 6 (safetensors) for external checkers",
                 [](cli::Flags& f) {
                   declare_common(f, "4");
                   f.add("out", "", "output .safetensors file");
                 },
                 run_dump, {"run", "out"}};
  all["heatmap"] = {"attention weights A and per-level scores S^(l) of one example, one PNG per block",
                    [](cli::Flags& f) {
                      declare_common(f, "1");
                      f.add("example", "0", "which example of the batch to draw");
                      f.add("out", "", "output folder (attention_block<i>.png)");
                      f.add("format", "png", "png | svg");
                    },
                    run_heatmap, {"run", "out"}};
  all["attention"] = all["heatmap"];  // the name for it; both stay
  all["analysis"] = {"score kurtosis (Mardia), symmetric/antisymmetric split of Wq Wk^T, score cost vs the bound",
                     [](cli::Flags& f) {
                       declare_common(f, "8");
                       f.add("seq-len", "0", "T for the score cost (default: the batch's T)");
                     },
                     run_analysis};
  return all;
}

void print_overview(FILE* out, const std::map<std::string, Subcommand>& all) {
  std::fprintf(out, "usage: hkt-inspect SUBCOMMAND --run DIR [flags]   (hkt-inspect SUBCOMMAND --help for its flags)\n"
                    "Looks inside a run trained by hkt-train.\n\nsubcommands:\n");
  for (const auto& [name, sub] : all) std::fprintf(out, "  %-10s %s\n", name.c_str(), sub.summary);
}

}  // namespace

int main(int argc, char** argv) {
  const auto all = subcommands();
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_overview(argc < 2 ? stderr : stdout, all);
    return argc < 2 ? 2 : 0;
  }
  auto found = all.find(argv[1]);
  if (found == all.end()) {
    std::fprintf(stderr, "hkt-inspect: unknown subcommand '%s'\n", argv[1]);
    print_overview(stderr, all);
    return 2;
  }
  const std::string program = std::string("hkt-inspect ") + argv[1];
  cli::Flags flags(program, found->second.summary);
  try {
    found->second.declare(flags);
    if (!flags.parse(argc - 1, argv + 1)) return 0;
    for (const char* name : found->second.required)
      check(flags.was_given(name), program, ": --", name, " is required (see --help)");
    check(flags.get_int("batch") >= 1, program, ": --batch must be at least 1");
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 2;
  }
  try {
    return found->second.run(flags);
  } catch (const std::exception& error) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: %s\n", program.c_str(), error.what());
    return 1;
  }
}
