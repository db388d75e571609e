#pragma once
// CIFAR-10, binary version (SPEC section 6): data_batch_{1..5}.bin (train) and
// test_batch.bin (test), each a run of 3073-byte records: 1 label byte (0-9),
// then 3072 pixel bytes, 1024 red, 1024 green, 1024 blue, each plane 32 × 32
// in raster order. An image becomes a sequence of pixel tokens (vocab 256,
// classes 10, every length full, so pad_id 0 never pads):
//   Grey:   1024 tokens, grey = round(0.299 R + 0.587 G + 0.114 B), computed
//           exactly in integers as (299 R + 587 G + 114 B + 500) / 1000;
//   Colour: 3072 tokens in the file's planar order (all R, all G, all B), the
//           flattening of a [3, 32, 32] image as PyTorch would give it.
#include <string>

#include "data/dataset.h"

namespace hkt::data {

enum class CifarPixels { Grey, Colour };

inline constexpr int64_t kCifarRecordBytes = 1 + 3 * 1024;

// One batch file. A size that is not a positive multiple of 3073 is an error
// with the size and the offset of the partial record; a label above 9 an
// error with its record's byte offset.
Dataset read_cifar10_file(const std::string& path, CifarPixels pixels);

// The train split (the five data batches, in order) or the test split, from
// `directory` or its subfolder cifar-10-batches-bin (as the archive unpacks).
Dataset load_cifar10(const std::string& directory, bool train, CifarPixels pixels);

}  // namespace hkt::data
