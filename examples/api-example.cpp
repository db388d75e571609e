// examples/api-example.cpp (a test checks that this block and the file agree)
#include <cstdio>

#include "hkt.h"
#include "io/cli.h"
#include "models/classifier.h"

using namespace hkt;

int main(int argc, char** argv) {
  cli::Flags flags("api-example", "A tiny HKT: one forward, backward and AdamW step.");
  flags.add_int("seed", 0, "seed of the initialisation", 0);
  return cli::run(flags, argc, argv, [&] {
    models::ModelConfig config;  // SPEC section 5; here a tiny HKT
    config.vocab = 18;
    config.max_len = 32;
    config.d_model = 32;
    config.n_heads = 4;
    config.d_ff = 64;
    config.classes = 10;
    config.levels = 3;
    models::HKTClassifier model(config, static_cast<uint64_t>(flags.get_int("seed")));
    AdamW optimizer(model.named_parameters(), {.lr = 1e-3});

    Generator gen(1);
    std::vector<int64_t> ids(4 * 32), lengths = {32, 20, 9, 32}, classes = {3, 1, 4, 1};
    for (int64_t& id : ids) id = 1 + static_cast<int64_t>(gen.next_u64() % 17);
    Tensor tokens = Tensor::from_vector(ids, {4, 32});  // [batch, T]

    Tensor logits = model.forward(tokens, Tensor::from_vector(lengths, {4}));  // [4, 10]
    Tensor loss = cross_entropy(logits, Tensor::from_vector(classes, {4}));
    loss.backward();
    Tensor g = model.parameter("blocks.0.attn.level_logits").grad();  // [heads, levels]
    std::printf("loss %.4f, d loss / d level_logits[0, :] = %.2e %.2e %.2e\n", loss.item(),
                g.to_vector<float>()[0], g.to_vector<float>()[1], g.to_vector<float>()[2]);
    clip_grad_norm(model.named_parameters(), 1.0);
    optimizer.step();
    optimizer.zero_grad();
    return 0;
  });
}
