// Fuzzes the tools' command-line parser: the input, split at NUL bytes, is
// argv[1..] for flags declared as hkt-train declares its kinds (a string, whole
// numbers, a number, a switch); every value is then read back as its kind.
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
  flags.add("task", "listops", "task");
  flags.add("batch", "32", "batch size");
  flags.add("steps", "0", "steps");
  flags.add("lr", "1e-3", "learning rate");
  flags.add_switch("causal", "causal");
  try {
    if (!flags.parse(static_cast<int>(argv.size()), argv.data())) return 0;
    (void)flags.get("task");
    (void)flags.get_int("batch");
    (void)flags.get_int("steps");
    (void)flags.get_double("lr");
    (void)flags.get_bool("causal");
    (void)flags.was_given("lr");
  } catch (const hkt::Error&) {
  }
  return 0;
}
