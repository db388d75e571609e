#pragma once
// IMDB reviews at the character (byte) level (SPEC section 6), from the
// aclImdb folder layout: <directory>/{train,test}/{pos,neg}/*.txt (other
// folders, such as train/unsup, are ignored). Labels: neg = 0, pos = 1.
//
// Tokens: byte b → b + 1, so that pad = 0 is its own id; vocab 257.
// Each review is truncated to its first seq_len bytes or padded to seq_len:
// truncation is how this benchmark is defined (LRA's byte-level text
// classification), unlike ListOps, where an over-long example is an error.
// Order: all neg files, then all pos files, each sorted by file name, so
// loading is deterministic (shuffle batches, not the file order).
#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace hkt::data {

inline constexpr int64_t kImdbVocab = 257;

// Missing folders, a folder without .txt files and an empty review are errors
// naming the path.
Dataset load_imdb(const std::string& directory, bool train, int64_t seq_len);

}  // namespace hkt::data
