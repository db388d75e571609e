// The analysis numbers (Mardia kurtosis, the bilinear split, the score cost)
// and the PNGs of hkt-inspect heatmap and hkt-plot, decoded with stb_image.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "tests/data_test_util.h"
#include "tests/gradcheck.h"
#include "io/files.h"
#include "tools/inspect/analysis.h"
#include "tools/inspect/heatmap.h"
#include "tools/inspect/metrics_plot.h"

#define STB_IMAGE_IMPLEMENTATION  // the one definition in this test program
#include <stb/stb_image.h>

using namespace hkt;
using namespace hkt::inspect;

namespace {

// n samples of a p-variate Gaussian with correlated coordinates (x = A z).
std::vector<double> gaussian_samples(int64_t n, int64_t p, Generator& generator) {
  std::vector<double> samples(static_cast<size_t>(n * p));
  for (int64_t s = 0; s < n; ++s) {
    std::vector<double> z(static_cast<size_t>(p));
    for (double& value : z) value = generator.normal();
    for (int64_t i = 0; i < p; ++i) {
      double value = 3.0 + z[i];
      for (int64_t k = 0; k < i; ++k) value += 0.5 * z[k];
      samples[s * p + i] = value;
    }
  }
  return samples;
}

struct DecodedPng {
  int width = 0, height = 0, channels = 0;
  int distinct_colours = 0;
};

DecodedPng decode(const std::string& path) {
  DecodedPng png;
  unsigned char* pixels = stbi_load(path.c_str(), &png.width, &png.height, &png.channels, 3);
  REQUIRE(pixels != nullptr);
  std::set<int> colours;
  for (int i = 0; i < png.width * png.height; ++i)
    colours.insert(pixels[3 * i] << 16 | pixels[3 * i + 1] << 8 | pixels[3 * i + 2]);
  png.distinct_colours = static_cast<int>(colours.size());
  stbi_image_free(pixels);
  return png;
}

}  // namespace

TEST_CASE("Mardia kurtosis, normalised: about 1 for a Gaussian, clearly above for a heavy-tailed sample") {
  Generator generator(11);
  const int64_t n = 200000, p = 4;
  const Kurtosis gaussian = mardia_kurtosis(gaussian_samples(n, p, generator), p);
  CHECK(gaussian.samples == n);
  CHECK(gaussian.b2p == Approx(p * (p + 2)).epsilon(0.03));
  CHECK(std::abs(gaussian.normalised - 1.0) < 0.03);

  // Multivariate Student t with ν = 8: κ = (ν − 2) / (ν − 4) = 1.5.
  std::vector<double> heavy = gaussian_samples(n, p, generator);
  for (int64_t s = 0; s < n; ++s) {
    double chi_square = 0;
    for (int k = 0; k < 8; ++k) chi_square += std::pow(generator.normal(), 2);
    const double scale = std::sqrt(8.0 / chi_square);
    for (int64_t i = 0; i < p; ++i) heavy[s * p + i] = 3.0 + (heavy[s * p + i] - 3.0) * scale;
  }
  const Kurtosis t = mardia_kurtosis(heavy, p);
  CHECK(t.normalised > 1.3);
  CHECK(t.normalised < 1.8);

  // A constant coordinate makes the covariance singular: no value, not a wrong one.
  std::vector<double> degenerate = gaussian_samples(1000, 2, generator);
  for (int64_t s = 0; s < 1000; ++s) degenerate[s * 2 + 1] = 7.0;
  CHECK(std::isnan(mardia_kurtosis(degenerate, 2).normalised));
  CHECK_THROWS_WITH(mardia_kurtosis({1, 2, 3}, 2), Catch::Contains("mardia_kurtosis") && Catch::Contains("rows of 2"));
}

TEST_CASE("bilinear split: squared norms add up, Wq = Wk is purely symmetric") {
  models::ModelConfig config;
  config.vocab = 10;
  config.max_len = 8;
  config.d_model = 8;
  config.n_layers = 1;
  config.n_heads = 2;
  config.d_ff = 8;
  config.levels = 2;
  models::Classifier model(config, 3);
  auto splits = bilinear_splits(model);
  REQUIRE(splits.size() == 4);  // 1 block × 2 levels × 2 heads
  for (const BilinearSplit& split : splits) {
    CHECK(split.norm > 0);
    CHECK(split.norm * split.norm ==
          Approx(split.symmetric * split.symmetric + split.antisymmetric * split.antisymmetric).epsilon(1e-10));
    CHECK(split.antisymmetric > 0.01 * split.norm);  // random Wq, Wk are not symmetric
  }
  Tensor wq = model.parameter("blocks.0.attn.levels.1.q.weight"), wk = model.parameter("blocks.0.attn.levels.1.k.weight");
  std::copy(wq.data<float>(), wq.data<float>() + wq.numel(), wk.data<float>());
  for (const BilinearSplit& split : bilinear_splits(model))
    if (split.level == 1) CHECK(split.antisymmetric < 1e-6 * split.norm);
}

TEST_CASE("score cost counts T_l^2 per level against the bound sum of s^-2l") {
  ScoreCost cost = score_cost(512, 2, 3);
  REQUIRE(cost.levels.size() == 3);
  CHECK(cost.levels[2].length == 128);
  CHECK(cost.ratio == 1.3125);
  CHECK(cost.bound == 1.3125);
  CHECK(cost.limit == Approx(4.0 / 3.0));
  ScoreCost odd = score_cost(97, 2, 3);  // 97, 49, 25: ceil adds a little
  CHECK(odd.levels[1].length == 49);
  CHECK(odd.ratio == Approx((97.0 * 97 + 49 * 49 + 25 * 25) / (97.0 * 97)));
  CHECK(odd.ratio > odd.bound);
  CHECK(score_cost(100, 3, 1).ratio == 1.0);
  CHECK_THROWS_WITH(score_cost(10, 1, 2), Catch::Contains("score_cost") && Catch::Contains("s >= 2"));
}

TEST_CASE("heat map and plot PNGs decode with the expected sizes") {
  hkt::testing::TempDir dir;
  models::ModelConfig config;
  config.vocab = 10;
  config.max_len = 24;
  config.d_model = 12;
  config.n_layers = 2;
  config.n_heads = 3;
  config.d_ff = 8;
  config.levels = 3;
  models::Classifier model(config, 4);
  data::Batch batch;
  std::vector<int64_t> tokens(2 * 20);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>(i * 7 % 10);
  batch.tokens = Tensor::from_vector(tokens, {2, 20});
  batch.lengths = Tensor::from_vector<int64_t>({20, 11}, {2});
  batch.labels = Tensor::from_vector<int64_t>({0, 1}, {2});
  const auto maps = attention_maps(model, batch);
  REQUIRE(maps.size() == 2);
  const std::string path = (dir.path() / "block1.png").string();
  const auto figure = attention_heatmap(maps[1], 1, 1);
  figure->save(path, "test");
  const DecodedPng heat = decode(path);
  CHECK(heat.width == static_cast<int>(figure->width()));
  CHECK(heat.height == static_cast<int>(figure->height()));
  CHECK(heat.distinct_colours > 50);  // colour-mapped cells, not a blank canvas
  // Token labels replace the position numbers along the axes.
  const std::vector<std::string> names(20, "[MAX");
  CHECK(attention_heatmap(maps[1], 1, 0, names)->encode() != attention_heatmap(maps[1], 1, 0)->encode());
  CHECK_THROWS_WITH(attention_heatmap(maps[0], 0, 2), Catch::Contains("example 2"));

  const auto run = dir.path() / "run";
  dir.write("run/metrics.jsonl",
            "{\"type\":\"train\",\"step\":10,\"loss\":2.3}\n{\"type\":\"train\",\"step\":20,\"loss\":1.9}\n"
            "{\"type\":\"eval\",\"step\":20,\"val_loss\":1.8,\"val_accuracy\":0.25}\n"
            "{\"type\":\"train\",\"step\":30,\"loss\":1.7}\n{\"type\":\"eval\",\"step\":30,\"val_loss\":1.7,\"val_accuracy\":0.3}\n");
  const RunCurves curves = read_metrics(run.string(), "HKT");
  CHECK(curves.loss.size() == 3);
  CHECK(curves.val_accuracy.size() == 2);
  const std::string plot = (dir.path() / "plot.png").string();
  plot_runs({curves, read_metrics(run.string(), "MHA")})->save(plot, "test");
  const DecodedPng decoded = decode(plot);
  CHECK(decoded.width == PlotLayout::kWidth);
  CHECK(decoded.height == PlotLayout::kHeight);
  CHECK(decoded.distinct_colours >= 4);  // white, black, grid grey and the run colours
  const std::string svg = plot_runs({curves}, {}, ImageFormat::Svg)->encode();
  CHECK(svg.find("<svg") != std::string::npos);
  RunCurves bad_label = curves;
  bad_label.label = "run \xFF\xC3 #1";  // not UTF-8: drawn with U+FFFD, not a cairo error
  CHECK_NOTHROW(plot_runs({bad_label})->encode());

  dir.write("bad/metrics.jsonl", "{\"type\":\"train\",\"step\":1,\"loss\":2}\n{\"type\":\"train\",\"step\":2}\n");
  CHECK_THROWS_WITH(read_metrics((dir.path() / "bad").string(), "x"), Catch::Contains("line 2") && Catch::Contains("loss"));
  // A run cut off mid-line: the torn last line is skipped; the same text before a newline is an error.
  const std::string first = "{\"type\":\"train\",\"step\":1,\"loss\":2}\n";
  CHECK(parse_metrics(first + "{\"type\":\"tr", "m.jsonl", "x").loss.size() == 1);
  CHECK_THROWS_WITH(parse_metrics(first + "{\"type\":\"tr\n" + first, "m.jsonl", "x"),
                    Catch::Contains("m.jsonl: line 2: json: byte 11"));
  CHECK_THROWS_WITH(parse_metrics("\n \n", "m.jsonl", "x"), Catch::Contains("no train or eval lines"));
}


TEST_CASE("the hkt-plot command line: a PNG for two runs, exit 2 on bad flags, 1 on a missing run") {
  hkt::testing::TempDir dir;
  dir.write("a/metrics.jsonl", "{\"type\":\"train\",\"step\":10,\"loss\":2.3}\n"
                               "{\"type\":\"eval\",\"step\":10,\"val_loss\":2,\"val_accuracy\":0.2}\n");
  dir.write("b/metrics.jsonl", "{\"type\":\"train\",\"step\":10,\"loss\":2.1}\n");
  auto plot = [&](const std::string& arguments) {
    const std::string command = std::string(HKT_BINARY_DIR) + "/hkt-plot " + arguments + " > " +
                                (dir.path() / "out.txt").string() + " 2>&1";
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  const std::string runs = (dir.path() / "a").string() + "," + (dir.path() / "b").string();
  const std::string png = (dir.path() / "p.png").string();
  CHECK(plot("--runs " + runs + " --labels A,B --out " + png) == 0);
  CHECK(decode(png).width == PlotLayout::kWidth);
  const std::string svg = (dir.path() / "p.svg").string();
  CHECK(plot("--runs " + runs + " --log-y --smooth 0.9 --out " + svg) == 0);
  CHECK(io::read_file_bytes(svg, "test").find("<svg") != std::string::npos);
  CHECK(plot("--runs " + runs + " --out " + (dir.path() / "p.jpg").string()) == 2);  // PNG or SVG only
  CHECK(plot("--runs " + runs + " --smooth 1") == 2);
  CHECK(plot("--runs " + runs + " --labels A --out " + png) == 2);  // two runs, one label
  CHECK(plot("--runs " + runs + " --colour red") == 2);
  CHECK(plot("--out " + png) == 2);
  CHECK(plot("--runs " + (dir.path() / "missing").string() + " --out " + png) == 1);
}

namespace {

// Runs hkt-plot through the shell (`prefix` goes before it), output to out.txt.
int run_plot(const hkt::testing::TempDir& dir, const std::string& arguments, const std::string& prefix = "") {
  const std::string command = "(" + prefix + " " + std::string(HKT_BINARY_DIR) + "/hkt-plot " + arguments + ") > " +
                              (dir.path() / "out.txt").string() + " 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("hkt-plot draws any value a metrics line can hold") {
  hkt::testing::TempDir dir;
  // Each once crashed (SIGSEGV) or allocated until bad_alloc.
  const std::vector<std::vector<std::string>> cases = {
      {"1e16", "1e16", "1e17"},     {"1e308", "-1e308", "1.7976931348623157e308"},
      {"5e-324", "1e-320", "0"},    {"1.0000000000000002e300", "1e300", "1e300"},
      {"null", "2", "null"},        {"-1", "-2", "-1e-300"},
      {"3"}};
  for (size_t c = 0; c < cases.size(); ++c) {
    std::string lines;
    for (size_t i = 0; i < cases[c].size(); ++i) {
      const std::string& v = cases[c][i];
      lines += "{\"type\":\"train\",\"step\":" + std::to_string(i * 10) + ",\"loss\":" + v + "}\n";
      lines += "{\"type\":\"eval\",\"step\":" + (v == "null" ? "1" : v) + ",\"val_accuracy\":" + v + "}\n";
    }
    const std::string run = "run" + std::to_string(c);
    dir.write(run + "/metrics.jsonl", lines);
    for (const std::string flags : {"", " --log-y", " --smooth 0.99"}) {
      INFO("values " << lines << "flags" << flags);
      const std::string png = (dir.path() / (run + ".png")).string();
      CHECK(run_plot(dir, "--runs " + (dir.path() / run).string() + flags + " --out " + png, "timeout 30") == 0);
      CHECK(decode(png).width == PlotLayout::kWidth);
    }
  }
}

TEST_CASE("hkt-plot: a failed write is an error naming the file, and leaves no file") {
  hkt::testing::TempDir dir;
  dir.write("a/metrics.jsonl", "{\"type\":\"train\",\"step\":10,\"loss\":2.3}\n");
  const std::string png = (dir.path() / "p.png").string();
  // A file-size limit of 1 KiB stands in for a full disk: write() fails with EFBIG
  // (SIGXFSZ ignored, as a full disk sends no signal).
  CHECK(run_plot(dir, "--runs " + (dir.path() / "a").string() + " --out " + png, "trap '' XFSZ; ulimit -f 1;") == 1);
  const std::string message = io::read_file_bytes((dir.path() / "out.txt").string(), "test");
  CHECK_THAT(message, Catch::Contains("hkt-plot: ") && Catch::Contains(png) && Catch::Contains("File too large"));
  CHECK_THAT(message, !Catch::Contains("wrote"));
  CHECK(!std::filesystem::exists(png));
}
