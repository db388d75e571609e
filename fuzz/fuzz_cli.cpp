// Fuzzes the tools' command-line parser: the input, split at NUL bytes, is
// argv[1..] for flags of every kind the tools declare (text, a choice, whole
// numbers and real numbers in ranges, a switch, a required flag); a parse that
// succeeds must leave every value readable and in its range.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/error.h"
#include "io/cli.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words{"hkt-train"};
  std::string word;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      words.push_back(word);
      word.clear();
    } else {
      word += static_cast<char>(data[i]);
    }
  }
  words.push_back(word);
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());

  hkt::cli::Flags flags("hkt-train", "fuzz");
  flags.add("data", "", "folder");
  flags.add_choice("task", "listops", {"listops", "imdb"}, "task");
  flags.add_int("batch", 32, "batch size", 1, 1 << 20);
  flags.add_int("steps", 0, "steps", 0);
  flags.add_real("lr", 1e-3, "learning rate", 0);
  flags.add_real("eps", 1e-6, "step", 0, 1, /*min_exclusive=*/true);
  flags.add_switch("causal", "causal");
  flags.add("out", "", "output");
  flags.require("out");
  try {
    if (!flags.parse(static_cast<int>(argv.size()), argv.data())) return 0;
    (void)flags.get("data");
    const std::string task = flags.get("task");
    if (task != "listops" && task != "imdb") __builtin_trap();
    const int64_t batch = flags.get_int("batch"), steps = flags.get_int("steps");
    if (batch < 1 || batch > (1 << 20) || steps < 0) __builtin_trap();
    const double lr = flags.get_double("lr"), eps = flags.get_double("eps");
    if (!(lr >= 0) || !(eps > 0 && eps <= 1)) __builtin_trap();
    (void)flags.get_bool("causal");
    if (!flags.was_given("out")) __builtin_trap();
  } catch (const hkt::Error&) {
  }
  return 0;
}
