// The classifiers of SPEC sections 2-5: parameter names and shapes, the
// subsumption identities, causality, and float64 gradient checks.
#include <cmath>
#include <map>
#include <tuple>

#include "models/classifier.h"
#include "models/hkt_attention.h"
#include "models/mha_attention.h"
#include "models/model_size.h"
#include "tests/gradcheck.h"

using namespace hkt;
using namespace hkt::models;
using hkt::testing::lengths_tensor;
using hkt::testing::random_tensor;

namespace {

ModelConfig tiny_config(const std::string& attention, int64_t levels = 3, bool causal = false) {
  ModelConfig config;
  config.attention = attention;
  config.vocab = 11;
  config.max_len = 16;
  config.d_model = 8;
  config.n_layers = 2;
  config.n_heads = 2;
  config.d_ff = 12;
  config.classes = 3;
  config.levels = levels;
  config.stride = 2;
  config.causal = causal;
  return config;
}

ModelConfig with_pointwise(ModelConfig config) {
  config.down_pointwise = true;
  return config;
}

void set_values(const Tensor& parameter, double value) {
  std::vector<double> values(static_cast<size_t>(parameter.numel()), value);
  Tensor filled = Tensor::from_doubles(values, parameter.shape(), parameter.dtype());
  parameter.impl()->storage = filled.impl()->storage;
}

void copy_values(const Tensor& target, const Tensor& source) {
  REQUIRE(target.shape() == source.shape());
  target.impl()->storage = source.detach().clone().impl()->storage;
}

// Max |a − b| over rows b, i with i < lengths[b] of [B, T, d] tensors.
double max_diff_valid_rows(const Tensor& a, const Tensor& b, const std::vector<int64_t>& lengths) {
  auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  const int64_t length = a.size(1), width = a.size(2);
  double worst = 0;
  for (size_t batch = 0; batch < lengths.size(); ++batch)
    for (int64_t i = 0; i < lengths[batch]; ++i)
      for (int64_t c = 0; c < width; ++c) {
        size_t at = (batch * length + i) * width + c;
        worst = std::max(worst, std::abs(va[at] - vb[at]));
      }
  return worst;
}

}  // namespace

TEST_CASE("HKT parameter names and shapes follow SPEC section 5") {
  HKTClassifier model(tiny_config("hkt", 3), 0);
  std::map<std::string, Shape> shapes;
  for (auto& [name, value] : model.named_parameters()) shapes[name] = value.shape();
  const std::map<std::string, Shape> expected_subset = {
      {"embed.token.weight", {11, 8}},
      {"embed.pos.weight", {16, 8}},
      {"blocks.0.ln1.weight", {8}},
      {"blocks.1.ln2.bias", {8}},
      {"blocks.0.ffn.fc1.weight", {12, 8}},
      {"blocks.0.ffn.fc2.weight", {8, 12}},
      {"blocks.0.attn.levels.0.q.weight", {8, 8}},
      {"blocks.0.attn.levels.2.k.bias", {8}},
      {"blocks.0.attn.v.weight", {8, 8}},
      {"blocks.0.attn.o.bias", {8}},
      {"blocks.0.attn.down.1.weight", {8, 3}},
      {"blocks.0.attn.down.2.bias", {8}},
      {"blocks.0.attn.down.2.ln.weight", {8}},
      {"blocks.1.attn.level_logits", {2, 3}},
      {"blocks.1.attn.conv.weight", {8, 5}},
      {"blocks.1.attn.conv.bias", {8}},
      {"blocks.1.attn.gate_logit", {2}},
      {"ln_f.weight", {8}},
      {"head.weight", {3, 8}},
      {"head.bias", {3}},
  };
  for (auto& [name, shape] : expected_subset) {
    INFO(name);
    REQUIRE(shapes.count(name) == 1);
    CHECK(shapes[name] == shape);
  }
  CHECK(shapes.count("blocks.0.attn.down.0.weight") == 0);  // level 0 is not downsampled
  // per block: ln1, ln2 (4) + ffn (4) + 3 levels × q, k (12) + v, o (4) + 2 downs × (w, b, ln w, ln b) (8)
  //            + level_logits (1) + conv (2) + gate_logit (1) = 36; plus embed (2), ln_f (2), head (2)
  CHECK(shapes.size() == 2 * 36 + 6);
}

TEST_CASE("MHA parameter names follow SPEC section 5") {
  MHAClassifier model(tiny_config("mha"), 0);
  std::vector<std::string> attention_names;
  for (auto& [name, value] : model.named_parameters())
    if (name.rfind("blocks.0.attn.", 0) == 0) attention_names.push_back(name);
  CHECK(attention_names == std::vector<std::string>{"blocks.0.attn.q.weight", "blocks.0.attn.q.bias",
                                                    "blocks.0.attn.k.weight", "blocks.0.attn.k.bias",
                                                    "blocks.0.attn.v.weight", "blocks.0.attn.v.bias",
                                                    "blocks.0.attn.o.weight", "blocks.0.attn.o.bias"});
}

TEST_CASE("with L = 1 and beta = 1, HKT attention equals MHA attention with the same weights") {
  for (auto [causal, fused] : {std::pair{false, true}, {true, true}, {false, false}, {true, false}}) {
    INFO("causal " << causal << " fused " << fused);
    ModelConfig config = tiny_config("hkt", 1, causal);
    Generator generator(1);
    HKTAttention hkt_attention(config, generator);
    MHAAttention mha(config, generator);
    copy_values(mha.q->weight, hkt_attention.levels[0]->q->weight);
    copy_values(mha.q->bias, hkt_attention.levels[0]->q->bias);
    copy_values(mha.k->weight, hkt_attention.levels[0]->k->weight);
    copy_values(mha.k->bias, hkt_attention.levels[0]->k->bias);
    copy_values(mha.v->weight, hkt_attention.v->weight);
    copy_values(mha.o->weight, hkt_attention.o->weight);
    set_values(mha.v->bias, 0.1);
    copy_values(hkt_attention.v->bias, mha.v->bias);
    set_values(hkt_attention.gate_logit, 40.0);  // β = sigmoid(40) = 1 in float32
    std::vector<int64_t> lengths{7, 4};
    SequenceMask mask = SequenceMask::build(lengths_tensor(lengths), 7, causal, DType::Float32, Device::cpu(), fused);
    Tensor x = random_tensor({2, 7, 8}, 2, DType::Float32);
    double diff = max_diff_valid_rows(hkt_attention.forward(x, mask), mha.forward(x, mask), lengths);
    CHECK(diff <= 1e-5);
  }
}

TEST_CASE("with beta = 0, HKT attention equals the causal convolution of V") {
  ModelConfig config = tiny_config("hkt", 3);
  Generator generator(3);
  HKTAttention attention(config, generator);
  set_values(attention.gate_logit, -40.0);  // β = 0
  std::vector<int64_t> lengths{9, 6};
  for (bool fused : {true, false}) {
    INFO("fused " << fused);
    SequenceMask mask = SequenceMask::build(lengths_tensor(lengths), 9, false, DType::Float32, Device::cpu(), fused);
    Tensor x = random_tensor({2, 9, 8}, 4, DType::Float32);
    Tensor values = attention.v->forward(mul(x, mask.valid_rows));
    Tensor conv = depthwise_conv1d(values, attention.conv->weight, attention.conv->bias, 1);
    // The fused path's mix leaves padded rows 0 (hybrid_mix with lengths), as MHA's fused attention does.
    Tensor expected = attention.o->forward(fused ? mul(conv, mask.valid_rows) : conv);
    CHECK(hkt::testing::max_abs_diff(attention.forward(x, mask), expected) <= 1e-6);
  }
}

TEST_CASE("causal HKT: output i has exactly zero gradient with respect to every later input") {
  for (int64_t levels : {1, 2, 3, 4}) {
    for (auto [stride, fused, pointwise] :
         {std::tuple<int64_t, bool, bool>{2, true, false}, {3, true, false}, {2, false, false}, {3, false, false},
          {2, true, true}, {3, false, true}}) {  // the pointwise projection mixes one coarse token at a time
      if (pointwise && levels == 1) continue;   // no downsampling to project
      INFO("levels " << levels << " stride " << stride << " fused " << fused << " pointwise " << pointwise);
      ModelConfig config = tiny_config("hkt", levels, true);
      config.stride = stride;
      config.down_pointwise = pointwise;
      Generator generator(5);
      HKTAttention attention(config, generator);
      attention.to(DType::Float64);
      set_values(attention.gate_logit, 0.3);
      const int64_t length = 13;
      SequenceMask mask =
          SequenceMask::build(lengths_tensor({length}), length, true, DType::Float64, Device::cpu(), fused);
      for (int64_t i = 0; i < length; ++i) {
        Tensor x = random_tensor({1, length, 8}, 6);
        x.requires_grad_();
        Tensor out = attention.forward(x, mask);
        sum(slice(out, 1, i, i + 1)).backward();
        auto grad = x.grad().to_vector<double>();
        double later = 0, earlier = 0;
        for (int64_t j = 0; j < length; ++j)
          for (int64_t c = 0; c < 8; ++c) (j > i ? later : earlier) += std::abs(grad[j * 8 + c]);
        INFO("output " << i);
        CHECK(later == 0.0);
        CHECK(earlier > 0.0);  // the check is not vacuous
      }
    }
  }
}

TEST_CASE("bidirectional HKT lets output 0 see the last input") {
  ModelConfig config = tiny_config("hkt", 3, false);
  Generator generator(7);
  HKTAttention attention(config, generator);
  attention.to(DType::Float64);
  SequenceMask mask = SequenceMask::build(lengths_tensor({9}), 9, false, DType::Float64, Device::cpu());
  Tensor x = random_tensor({1, 9, 8}, 8);
  x.requires_grad_();
  sum(slice(attention.forward(x, mask), 1, 0, 1)).backward();
  auto grad = x.grad().to_vector<double>();
  double last = 0;
  for (int64_t c = 0; c < 8; ++c) last += std::abs(grad[8 * 8 + c]);
  CHECK(last > 0.0);
}

TEST_CASE("whole tiny classifiers pass a float64 gradient check") {
  struct Case {
    std::string attention;
    int64_t levels, stride;
    bool causal, pointwise = false;
  };
  const Case cases[] = {{"mha", 1, 2, false},      {"mha", 1, 2, true},       {"hkt", 1, 2, false},
                        {"hkt", 2, 2, false},      {"hkt", 3, 2, false},      {"hkt", 4, 2, false},
                        {"hkt", 3, 3, false},      {"hkt", 3, 2, true},       {"hkt", 4, 3, true},
                        {"hkt", 3, 2, false, true}, {"hkt", 4, 3, true, true}};
  for (const Case& c : cases) {
    INFO(c.attention << " levels " << c.levels << " stride " << c.stride << " causal " << c.causal << " pointwise "
                     << c.pointwise);
    ModelConfig config = tiny_config(c.attention, c.levels, c.causal);
    config.stride = c.stride;
    config.down_pointwise = c.pointwise;
    Classifier model(config, 11);
    model.to(DType::Float64);
    // T = 7 is not a multiple of s^(L−1); the second example is padded.
    Tensor tokens = Tensor::from_vector<int64_t>({1, 4, 2, 9, 3, 3, 0, 5, 5, 8, 1, 2, 7, 7}, {2, 7});
    Tensor lengths = lengths_tensor({7, 5}), labels = lengths_tensor({2, 0});
    hkt::testing::gradcheck_module(model, [&] { return cross_entropy(model.forward(tokens, lengths), labels); });
  }
}

TEST_CASE("the tokens at padded positions do not change the logits") {
  for (const char* attention : {"mha", "hkt"}) {
    INFO(attention);
    Classifier model(tiny_config(attention, 3), 12);
    // Padded rows are zeroed before HKT's downsampling and padded keys are
    // masked, so whatever sits in the padding cannot reach a valid position.
    Tensor one = Tensor::from_vector<int64_t>({3, 1, 4, 1, 5, 9, 2, 6}, {1, 8});
    Tensor other = Tensor::from_vector<int64_t>({3, 1, 4, 1, 5, 0, 0, 0}, {1, 8});
    CHECK(hkt::testing::max_abs_diff(model.forward(one, lengths_tensor({5})),
                                     model.forward(other, lengths_tensor({5}))) <= 1e-6);
  }
}

TEST_CASE("classifiers reject bad input with a clear message") {
  Classifier model(tiny_config("mha"), 0);
  Tensor tokens = Tensor::zeros({2, 20}, DType::Int64);
  REQUIRE_THROWS_WITH(model.forward(tokens, lengths_tensor({20, 20})),
                      "classifier: sequence length 20 exceeds max_len 16");
  Tensor ok = Tensor::zeros({2, 6}, DType::Int64);
  REQUIRE_THROWS_WITH(model.forward(ok, lengths_tensor({6, 0})),
                      "attention: length 0 of example 1 is outside [1, 6]");
  REQUIRE_THROWS_WITH(model.forward(ok, lengths_tensor({6})),
                      "classifier: lengths int64[1] do not match tokens int64[2, 6]");
  REQUIRE_THROWS_WITH(model.forward(Tensor::zeros({2, 6}), lengths_tensor({6, 6})),
                      "classifier: tokens must be an integer [B, T] tensor, got float32[2, 6]");
  ModelConfig bad = tiny_config("hkt");
  bad.n_heads = 3;
  REQUIRE_THROWS_WITH(HKTClassifier(bad, 0), "config: d_model 8 is not divisible by n_heads 3");
  bad = tiny_config("gru");
  REQUIRE_THROWS_WITH(Classifier(bad, 0), "config: attention must be \"mha\" or \"hkt\", got \"gru\"");
}

TEST_CASE("fused and composed attention give the same classifier logits and gradients (float64)") {
  for (auto [attention, levels, stride, causal, pointwise] :
       {std::tuple<const char*, int64_t, int64_t, bool, bool>{"mha", 1, 2, false, false}, {"mha", 1, 2, true, false},
        {"hkt", 3, 2, false, false}, {"hkt", 4, 3, true, false}, {"hkt", 2, 2, true, false},
        {"hkt", 3, 2, true, true}, {"hkt", 3, 2, false, true}}) {
    // The fused HKT leaves the coarse rows no valid position reads 0 (coarse_rows_read in
    // models/hkt_attention.cpp); the pointwise projection's bias makes the rows it skips nonzero.
    INFO(attention << " levels " << levels << " stride " << stride << " causal " << causal << " pointwise "
                   << pointwise);
    ModelConfig config = tiny_config(attention, levels, causal);
    config.stride = stride;
    config.down_pointwise = pointwise;
    Tensor tokens =
        Tensor::from_vector<int64_t>({1, 4, 2, 9, 3, 3, 0, 5, 5, 8, 1, 2, 7, 7, 6, 2, 10, 4, 1, 3, 8}, {3, 7});
    // A row with a single valid key; length 5 reads level 1's row 3 through level 2's row 1, one past
    // level 1's 3 valid rows.
    Tensor lengths = lengths_tensor({7, 1, 5}), labels = lengths_tensor({2, 0, 1});
    std::vector<std::vector<double>> logits, grads;
    for (bool fused : {true, false}) {
      Classifier model(config, 13);
      model.to(DType::Float64);
      model.set_fused_attention(fused);
      Tensor out = model.forward(tokens, lengths);
      cross_entropy(out, labels).backward();
      logits.push_back(out.to_vector<double>());
      std::vector<double> all;
      for (auto& [name, p] : model.named_parameters())
        for (double g : p.grad().to_vector<double>()) all.push_back(g);
      grads.push_back(all);
    }
    for (size_t i = 0; i < logits[0].size(); ++i) CHECK(std::abs(logits[0][i] - logits[1][i]) <= 1e-10);
    double scale = 0;
    for (double g : grads[1]) scale = std::max(scale, std::abs(g));
    for (size_t i = 0; i < grads[0].size(); ++i) CHECK(std::abs(grads[0][i] - grads[1][i]) <= 1e-10 * scale);
  }
}

TEST_CASE("parameter_count from the config alone equals the built model's count, and check_model_size names the sizes") {
  for (const char* attention : {"mha", "hkt"})
    for (int64_t levels : {1, 2, 4})
      for (bool pointwise : {false, true}) {
        ModelConfig config = tiny_config(attention, levels);
        config.down_kernel = 5;
        config.conv_kernel = 3;
        config.down_pointwise = pointwise;
        INFO(attention << ", " << levels << " levels, down_pointwise " << pointwise);
        CHECK(parameter_count(config) == static_cast<double>(Classifier(config, 0).parameter_count()));
      }
  ModelConfig huge = tiny_config("hkt");
  huge.n_layers = 1000000000;
  huge.d_model = 64;
  CHECK(parameter_count(huge) > 1e13);
  REQUIRE_THROWS_WITH(check_model_size(huge, 32, 1e9, "source"),
                      Catch::Matches("source: the model \\(d_model 64, n_layers 1000000000, .*\\) would have .* "
                                     "parameters and need about .* GB to train, more than the limit of 1e\\+09 .*"));
  REQUIRE_THROWS_WITH(Classifier(huge, 0), Catch::Contains("classifier: the model"));  // not a hang or bad_alloc
  CHECK_NOTHROW(check_model_size(tiny_config("hkt"), 32, 1e9, "source"));
}

TEST_CASE("down_pointwise adds blocks.{i}.attn.down.{l}.pointwise.{weight,bias} [d, d], [d] (SPEC sections 2, 5)") {
  HKTClassifier model(with_pointwise(tiny_config("hkt", 3)), 0);
  std::map<std::string, Shape> shapes;
  for (auto& [name, value] : model.named_parameters()) shapes[name] = value.shape();
  for (const char* name : {"blocks.0.attn.down.1.pointwise.weight", "blocks.1.attn.down.2.pointwise.weight"}) {
    INFO(name);
    REQUIRE(shapes.count(name) == 1);
    CHECK(shapes[name] == Shape{8, 8});
  }
  CHECK(shapes.at("blocks.1.attn.down.1.pointwise.bias") == Shape{8});
  CHECK(shapes.size() == 2 * (36 + 4) + 6);  // two levels × (weight, bias) more per block
  // Without the key nothing changes, including every random draw of the init.
  HKTClassifier plain(tiny_config("hkt", 3), 0);
  for (auto& [name, value] : plain.named_parameters()) CHECK(name.find("pointwise") == std::string::npos);
  // MHA and L = 1 have no downsampling, so the key adds nothing there.
  CHECK(Classifier(with_pointwise(tiny_config("mha")), 0).named_parameters().size() ==
        Classifier(tiny_config("mha"), 0).named_parameters().size());
  CHECK(HKTClassifier(with_pointwise(tiny_config("hkt", 1)), 0).named_parameters().size() ==
        HKTClassifier(tiny_config("hkt", 1), 0).named_parameters().size());
}

TEST_CASE("with the identity as pointwise projection, HKT attention equals HKT without it") {
  for (auto [causal, fused] : {std::pair{false, true}, {true, true}, {false, false}, {true, false}}) {
    INFO("causal " << causal << " fused " << fused);
    Generator first(21), second(22);
    HKTAttention plain(tiny_config("hkt", 3, causal), first);
    HKTAttention projected(with_pointwise(tiny_config("hkt", 3, causal)), second);
    std::map<std::string, Tensor> plain_parameters;
    for (auto& [name, value] : plain.named_parameters()) plain_parameters[name] = value;
    for (auto& [name, value] : projected.named_parameters()) {
      if (name.find("pointwise") != std::string::npos) continue;
      INFO(name);
      REQUIRE(plain_parameters.count(name) == 1);
      copy_values(value, plain_parameters[name]);
    }
    set_values(plain.gate_logit, 0.4);
    set_values(projected.gate_logit, 0.4);
    for (const auto& downsample : projected.down) {
      std::vector<double> identity(64, 0.0);
      for (int c = 0; c < 8; ++c) identity[c * 8 + c] = 1.0;
      copy_values(downsample->pointwise->weight, Tensor::from_doubles(identity, {8, 8}, DType::Float32));
    }
    std::vector<int64_t> lengths{9, 6};
    SequenceMask mask = SequenceMask::build(lengths_tensor(lengths), 9, causal, DType::Float32, Device::cpu(), fused);
    Tensor x = random_tensor({2, 9, 8}, 23, DType::Float32);
    CHECK(max_diff_valid_rows(projected.forward(x, mask), plain.forward(x, mask), lengths) <= 1e-6);
    CHECK(hkt::testing::max_abs_diff(projected.level_inputs(x, mask)[2], plain.level_inputs(x, mask)[2]) <= 1e-6);
    // The projection is used: another matrix changes the coarse levels' inputs.
    copy_values(projected.down[0]->pointwise->weight, random_tensor({8, 8}, 26, DType::Float32));
    CHECK(hkt::testing::max_abs_diff(projected.level_inputs(x, mask)[1], plain.level_inputs(x, mask)[1]) > 0.1);
  }
}
