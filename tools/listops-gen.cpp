// listops-gen: writes a synthetic ListOps data set in the Long Range Arena TSV
// layout (SPEC section 6), generated as LRA does (data/listops.h), and
// prints a one-line summary: count, token lengths, label histogram.
//
//   listops-gen --seed S --count N --min-len A --max-len B [--max-depth D] [--max-args K] --out FILE
//
// Exit codes: 0 written, 1 generation or write failed, 2 bad flags.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include "data/listops.h"

namespace {

constexpr const char* kUsage =
    "usage: listops-gen --seed S --count N --min-len A --max-len B [--max-depth D] [--max-args K] --out FILE\n"
    "  --seed S       random seed (unsigned 64-bit)\n"
    "  --count N      number of examples (>= 1)\n"
    "  --min-len A    shortest expression, in tokens (>= 1)\n"
    "  --max-len B    longest expression, in tokens (>= A)\n"
    "  --max-depth D  nesting limit (default 10, 1..1000)\n"
    "  --max-args K   most arguments of an operator (default 10, 2..1000)\n"
    "  --out FILE     the TSV to write (written to a temporary file, then renamed)\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "listops-gen: %s\n%s", message.c_str(), kUsage);
  return 2;
}

template <class T>
bool parse_number(std::string_view text, T& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  const std::string_view known[] = {"--seed", "--count", "--min-len", "--max-len", "--max-depth", "--max-args", "--out"};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (const size_t equals = arg.find('='); arg.rfind("--", 0) == 0 && equals != std::string::npos) {
      value = arg.substr(equals + 1);
      arg.resize(equals);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return usage_error("flag " + arg + " needs a value");
    }
    if (std::find(std::begin(known), std::end(known), arg) == std::end(known))
      return usage_error("unknown flag " + arg);
    if (flags.count(arg)) return usage_error("flag " + arg + " given twice");
    flags[arg] = value;
  }
  for (const char* required : {"--seed", "--count", "--min-len", "--max-len", "--out"})
    if (!flags.count(required)) return usage_error(std::string("missing ") + required);

  uint64_t seed = 0;
  hkt::data::ListOpsOptions options;
  if (!parse_number(flags["--seed"], seed)) return usage_error("--seed " + flags["--seed"] + " is not an unsigned integer");
  if (!parse_number(flags["--count"], options.count) || options.count < 1)
    return usage_error("--count " + flags["--count"] + " is not an integer >= 1");
  if (!parse_number(flags["--min-len"], options.min_len) || options.min_len < 1)
    return usage_error("--min-len " + flags["--min-len"] + " is not an integer >= 1");
  if (!parse_number(flags["--max-len"], options.max_len) || options.max_len < options.min_len)
    return usage_error("--max-len " + flags["--max-len"] + " is not an integer >= --min-len");
  if (flags.count("--max-depth") &&
      (!parse_number(flags["--max-depth"], options.max_depth) || options.max_depth < 1 || options.max_depth > 1000))
    return usage_error("--max-depth " + flags["--max-depth"] + " is not an integer in 1..1000");
  if (flags.count("--max-args") &&
      (!parse_number(flags["--max-args"], options.max_args) || options.max_args < 2 || options.max_args > 1000))
    return usage_error("--max-args " + flags["--max-args"] + " is not an integer in 2..1000");
  const std::string out = flags["--out"];
  if (out.empty()) return usage_error("--out is empty");

  try {
    hkt::Generator generator(seed);
    const auto examples = hkt::data::generate_listops_examples(generator, options);
    hkt::data::write_listops_tsv(out, examples);
    const auto summary = hkt::data::summarize_listops(examples);
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
  } catch (const std::exception& error) {
    std::fprintf(stderr, "listops-gen: %s\n", error.what());
    return 1;
  }
  return 0;
}
