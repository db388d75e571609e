// listops-gen: writes a synthetic ListOps data set in the Long Range Arena TSV
// layout (SPEC section 6), generated as LRA does (data/listops.h), and
// prints a one-line summary: count, token lengths, label histogram.
//
//   listops-gen --seed S --count N --min-len A --max-len B [--max-depth D] [--max-args K] --out FILE
#include <algorithm>
#include <cstdio>
#include <string>

#include "data/listops.h"
#include "io/cli.h"

using namespace hkt;

int main(int argc, char** argv) {
  cli::Flags flags("listops-gen", "Writes a synthetic ListOps data set in the Long Range Arena TSV layout.");
  flags.add_int("seed", 0, "random seed", 0);
  flags.add_int("count", 0, "number of examples", 1, data::kMaxDatasetTokens);
  flags.add_int("min-len", 0, "shortest expression, in tokens", 1, 1 << 24);
  flags.add_int("max-len", 0, "longest expression, in tokens (>= --min-len)", 1, 1 << 24);
  flags.add_int("max-depth", 10, "nesting limit", 1, 1000);
  flags.add_int("max-args", 10, "most arguments of an operator", 2, 1000);
  flags.add("out", "", "the TSV to write (its folder is created; written to a temporary file, then renamed)");
  for (const char* name : {"seed", "count", "min-len", "max-len", "out"}) flags.require(name);
  return cli::run(flags, argc, argv, [&] {
    data::ListOpsOptions options;
    options.count = flags.get_int("count");
    options.min_len = flags.get_int("min-len");
    options.max_len = flags.get_int("max-len");
    options.max_depth = static_cast<int>(flags.get_int("max-depth"));
    options.max_args = static_cast<int>(flags.get_int("max-args"));
    cli::usage_check(options.max_len >= options.min_len, "--max-len ", options.max_len, " is shorter than --min-len ",
                     options.min_len);
    const std::string out = flags.get("out");
    cli::usage_check(!out.empty(), "--out is empty");
    Generator generator(static_cast<uint64_t>(flags.get_int("seed")));
    const auto examples = data::generate_listops_examples(generator, options);
    data::write_listops_tsv(out, examples);
    const auto summary = data::summarize_listops(examples);
    const int64_t largest = *std::max_element(summary.label_counts.begin(), summary.label_counts.end());
    const int64_t absent = std::count(summary.label_counts.begin(), summary.label_counts.end(), 0);
    const double largest_share = 100.0 * static_cast<double>(largest) / static_cast<double>(summary.count);
    std::printf("listops-gen: %lld examples to %s, length mean %.1f (min %lld, max %lld), labels",
                static_cast<long long>(summary.count), out.c_str(), summary.mean_length,
                static_cast<long long>(summary.min_length), static_cast<long long>(summary.max_length));
    for (size_t label = 0; label < 10; ++label)
      std::printf(" %zu:%lld", label, static_cast<long long>(summary.label_counts[label]));
    std::printf(", largest class %.1f%%\n", largest_share);
    // Uniform is 10 %; LRA's own ListOps is skewed but never to one class.
    if (largest_share > 40.0 || (summary.count >= 100 && absent > 0))
      std::fprintf(stderr, "listops-gen: warning: degenerate label distribution (largest class %.1f%%, %lld labels absent)\n",
                   largest_share, static_cast<long long>(absent));
    return 0;
  });
}
