// Fuzzes the aclImdb reader. It reads a folder, so the input becomes one:
//   byte 0: seq_len - 1 (1..256);
//   byte 1: layout bits: 1 = no pos/ folder, 2 = an empty review,
//           4 = a review without .txt, 8 = a sub-folder named x.txt;
//   the rest: split at the first 0xFF into a neg review and a pos review.
// That reaches every per-file and per-label path of load_imdb: missing and
// empty class folders, empty reviews, truncation, padding, any byte values.
#include <algorithm>

#include "data/imdb.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  namespace fs = std::filesystem;
  const int64_t seq_len = int64_t{data[0]} + 1;
  const uint8_t layout = data[1];
  const uint8_t* rest = data + 2;
  const size_t rest_size = size - 2;
  const size_t cut = static_cast<size_t>(std::find(rest, rest + rest_size, 0xFF) - rest);

  const fs::path root = hkt::fuzz::scratch_folder() / "aclImdb";
  std::error_code ignored;
  fs::remove_all(root, ignored);
  fs::create_directories(root / "train" / "neg");
  hkt::fuzz::write_file(root / "train" / "neg" / "0_1.txt", rest, cut);
  if (!(layout & 1)) {
    fs::create_directories(root / "train" / "pos");
    const size_t begin = std::min(cut + 1, rest_size);
    hkt::fuzz::write_file(root / "train" / "pos" / "0_9.txt", rest + begin, rest_size - begin);
  }
  if (layout & 2) hkt::fuzz::write_file(root / "train" / "neg" / "1_2.txt", rest, 0);
  if (layout & 4) hkt::fuzz::write_file(root / "train" / "neg" / "2_3.text", rest, rest_size);
  if (layout & 8) fs::create_directories(root / "train" / "neg" / "x.txt");
  try {
    hkt::data::validate(hkt::data::load_imdb(root.string(), true, seq_len), "fuzz");
  } catch (const hkt::Error&) {
  }
  return 0;
}
